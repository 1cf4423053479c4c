import Dispatch
import SensorKitModel
import Synchronization

/// The daemon's scheduler: libdispatch's timers (`DispatchScheduler`), except that a timer
/// ticking for the process's whole life (`scheduleTicks`) gets a thread of its own, asleep in
/// `poll` between ticks (`ReadinessLoop` without an fd).
///
/// Why: on Linux a libdispatch timer wakes the manager thread, which hands the tick to a pooled
/// worker, and a worker idle for 5 s leaves. So the housekeeping's 10 s tick started a new thread
/// every time (its stack mapped and faulted in, then unmapped): ≈ 4 % of a recording daemon's
/// CPU (docs/measurements/iio.md, "2026-12-07, evening"). A thread that stays costs one wake-up
/// a tick.
public struct TickingScheduler: Scheduler {
    private let dispatch = DispatchScheduler()

    public init() {}

    public func uptimeNanoseconds() -> Int64 { dispatch.uptimeNanoseconds() }

    public func schedule(
        on queue: DispatchQueue, after delay: Int64, repeating interval: Int64?,
        _ body: @escaping @Sendable () -> Void
    ) -> any ScheduledTimer {
        dispatch.schedule(on: queue, after: delay, repeating: interval, body)
    }

    /// On a thread of its own; should the thread not start (no eventfd or thread left), on a
    /// libdispatch timer as before.
    public func scheduleTicks(
        on queue: DispatchQueue, every interval: Int64, _ body: @escaping @Sendable () -> Void
    ) -> any ScheduledTimer {
        do {
            return try TickThread(queue: queue, interval: interval, body: body)
        } catch {
            return dispatch.schedule(on: queue, after: interval, repeating: interval, body)
        }
    }
}

/// A thread that sleeps until each tick's deadline and runs the body on `queue` with
/// `queue.sync`: on a serial queue nobody else is using, libdispatch runs the block right on the
/// calling thread, so a tick wakes this one thread and no other, while the body stays serialized
/// with the rest of the queue's work.
final class TickThread: ScheduledTimer, Sendable {
    private final class State: Sendable {
        let cancelled = Atomic(false)
        /// The next tick's deadline (monotonic ns); only the thread reads and moves it.
        let next: Mutex<Int64>
        init(next: Int64) { self.next = Mutex(next) }
    }

    private let loop: ReadinessLoop
    private let state: State

    init(queue: DispatchQueue, interval: Int64, body: @escaping @Sendable () -> Void) throws(SystemError) {
        let period = max(1, interval)
        // Deadlines on the monotonic clock: a tick late by a busy machine or a suspend does not
        // make the next one early, and ticks missed meanwhile are skipped, not run in a burst.
        let state = State(next: Self.now().addingSaturating(period))
        loop = try ReadinessLoop(
            name: "ticks \(queue.label)", fileDescriptor: -1, firstTimeout: period,
            body: { wake in
                guard case .deadline = wake, !state.cancelled.load(ordering: .acquiring) else { return .stop }
                let due = state.next.withLock { $0 }
                let now = Self.now()
                guard now >= due else { return .wait(nanoseconds: due - now) }
                // Checked again on the queue: once `cancel` has returned, a tick that had not yet
                // reached the queue must not run the body.
                queue.sync { if !state.cancelled.load(ordering: .acquiring) { body() } }
                let after = Self.now()
                let following = state.next.withLock { next -> Int64 in
                    next = next.addingSaturating(period)
                    if next <= after { next = after.addingSaturating(period) }
                    return next
                }
                return .wait(nanoseconds: following - after)
            }, onExit: {})
        self.state = state
    }

    /// The body does not start again; returns once the thread has left (at once from inside the
    /// body, where it only asks).
    func cancel() {
        state.cancelled.store(true, ordering: .releasing)
        loop.stop()
    }

    private static func now() -> Int64 { Int64(clamping: DispatchTime.now().uptimeNanoseconds) }
}
