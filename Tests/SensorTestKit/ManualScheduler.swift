import Dispatch
import SensorKitModel
import Synchronization

/// A scheduler for tests: its time moves only in `advance`, which starts every timer that falls
/// due, in deadline order, on the timer's queue (asynchronously, so a body that blocks cannot
/// stall the test). Thread-safe.
public final class ManualScheduler: Scheduler, Sendable {
    private struct Entry {
        let id: Int
        var deadline: Int64
        let interval: Int64?
        let queue: DispatchQueue
        let body: @Sendable () -> Void
    }
    private struct State {
        var now: Int64
        var entries: [Int: Entry] = [:]
        var nextID = 0
    }
    private let state: Mutex<State>

    public init(now: Int64 = 1_000_000_000) { state = Mutex(State(now: now)) }

    public func uptimeNanoseconds() -> Int64 { state.withLock { $0.now } }

    /// Timers that have not been cancelled (repeating ones stay until cancelled).
    public var pendingTimers: Int { state.withLock { $0.entries.count } }

    public func schedule(
        on queue: DispatchQueue, after delay: Int64, repeating interval: Int64?,
        _ body: @escaping @Sendable () -> Void
    ) -> any ScheduledTimer {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            state.entries[state.nextID] = Entry(
                id: state.nextID, deadline: state.now + max(0, delay),
                interval: interval.map { max(1, $0) }, queue: queue, body: body)
            return state.nextID
        }
        return Timer(scheduler: self, id: id)
    }

    /// Moves time forward by `nanoseconds`, starting the timers that fall due on the way (a
    /// repeating timer once per period passed).
    public func advance(nanoseconds: Int64) {
        let end = state.withLock { $0.now + max(0, nanoseconds) }
        while true {
            let due = state.withLock { state -> Entry? in
                guard
                    let next = state.entries.values.filter({ $0.deadline <= end })
                        .min(by: { ($0.deadline, $0.id) < ($1.deadline, $1.id) })
                else { return nil }
                state.now = max(state.now, next.deadline)
                if let interval = next.interval {
                    state.entries[next.id]?.deadline = next.deadline + interval
                } else {
                    state.entries[next.id] = nil
                }
                return next
            }
            guard let due else { break }
            due.queue.async(execute: due.body)
        }
        state.withLock { $0.now = end }
    }

    /// Time passes: `seconds` at once.
    public func advance(seconds: Double) { advance(nanoseconds: Int64(seconds * 1e9)) }

    fileprivate func cancel(_ id: Int) { _ = state.withLock { $0.entries.removeValue(forKey: id) } }

    private struct Timer: ScheduledTimer {
        let scheduler: ManualScheduler
        let id: Int
        func cancel() { scheduler.cancel(id) }
    }
}
