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
            return dispatch.scheduleTicks(on: queue, every: interval, body)
        }
    }
}

/// A thread that sleeps an interval between ticks and runs the body on `queue` with
/// `queue.sync`: on a serial queue nobody else is using, libdispatch runs the block right on the
/// calling thread, so a tick wakes this one thread and no other, while the body stays serialized
/// with the rest of the queue's work. The interval counts from the end of a tick (the loop's
/// `poll` timeout, monotonic, never early): a tick late by a busy machine or a suspend does not
/// make the next one early or bring a burst of missed ones.
final class TickThread: ScheduledTimer, Sendable {
    private final class Cancelled: Sendable {
        let value = Atomic(false)
    }

    private let loop: ReadinessLoop
    private let cancelled = Cancelled()

    init(queue: DispatchQueue, interval: Int64, body: @escaping @Sendable () -> Void) throws(SystemError) {
        let period = max(1, interval)
        let cancelled = self.cancelled
        loop = try ReadinessLoop(
            name: "ticks \(queue.label)", fileDescriptor: -1, firstTimeout: period,
            body: { wake in
                guard case .deadline = wake, !cancelled.value.load(ordering: .acquiring) else { return .stop }
                // Checked again on the queue: once `cancel` has returned, a tick that had not yet
                // reached the queue must not run the body.
                queue.sync { if !cancelled.value.load(ordering: .acquiring) { body() } }
                return .wait(nanoseconds: period)
            }, onExit: {})
    }

    /// The body does not start again; returns once the thread has left (at once from inside the
    /// body, where it only asks).
    func cancel() {
        cancelled.value.store(true, ordering: .releasing)
        loop.stop()
    }
}
