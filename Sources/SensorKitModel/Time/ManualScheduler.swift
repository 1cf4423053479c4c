import Dispatch
import Synchronization

/// A scheduler for tests: its time moves only when told, and the timers that fall due on the way
/// start in deadline order on their own queues. Two ways to move it:
/// - `advance(nanoseconds:)` starts each due timer asynchronously and returns at once, so a body
///   that blocks (a wedged queue under test) cannot stall the test;
/// - `advance(by:)` runs each due timer to its end before the next one starts and returns when
///   the last has run, so a test reads their effects right after (`ManualTime` moves a clock in
///   step with it).
///
/// Thread-safe.
package final class ManualScheduler: Scheduler, Sendable {
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

    package init(now: Int64 = 1_000_000_000) { state = Mutex(State(now: now)) }

    package func uptimeNanoseconds() -> Int64 { state.withLock { $0.now } }

    /// Timers that have not been cancelled (repeating ones stay until cancelled).
    package var pendingTimers: Int { state.withLock { $0.entries.count } }

    package func schedule(
        on queue: DispatchQueue, after delay: Int64, repeating interval: Int64?,
        _ body: @escaping @Sendable () -> Void
    ) -> any ScheduledTimer {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            state.entries[state.nextID] = Entry(
                id: state.nextID, deadline: Self.later(state.now, by: delay),
                interval: interval.map { max(1, $0) }, queue: queue, body: body)
            return state.nextID
        }
        return Timer(scheduler: self, id: id)
    }

    /// Moves time forward by `nanoseconds`, starting the timers that fall due on the way (a
    /// repeating timer once per period passed) without waiting for them.
    package func advance(nanoseconds: Int64) {
        let end = endOfAdvance(by: nanoseconds)
        while let due = takeDue(until: end) { due.entry.queue.async(execute: due.entry.body) }
        state.withLock { $0.now = max($0.now, end) }
    }

    /// Time passes: `seconds` at once.
    package func advance(seconds: Double) { advance(nanoseconds: Int64(seconds * 1e9)) }

    /// A timer body that did not finish within `advance(by:)`'s timeout (a wedged queue).
    package struct Stalled: Error, CustomStringConvertible {
        package let queue: String
        package var description: String { "a timer on queue \(queue) did not finish" }
    }

    /// Moves time forward by `duration`, running each timer that falls due on the way (a
    /// repeating one once per period passed) on its queue, in deadline order, each to its end
    /// before the next starts; returns when the last has run. `moved` hears how far time moves
    /// before each timer runs and before this returns (a clock kept in step, so a body reads its
    /// own deadline). Throws `Stalled` when a body has not finished within `timeout`: time then
    /// stays at that timer's deadline.
    package func advance(
        by duration: Duration, timeout: Duration = .seconds(10), moved: (Int64) -> Void = { _ in }
    ) throws(Stalled) {
        let end = endOfAdvance(by: duration.saturatingNanoseconds)
        while let due = takeDue(until: end) {
            moved(due.moved)
            let finished = DispatchSemaphore(value: 0)
            due.entry.queue.async {
                due.entry.body()
                finished.signal()
            }
            guard finished.wait(timeout: .now() + .nanoseconds(Int(clamping: timeout.saturatingNanoseconds))) == .success
            else { throw Stalled(queue: due.entry.queue.label) }
        }
        let rest = state.withLock { state -> Int64 in
            defer { state.now = max(state.now, end) }
            return max(0, end - state.now)
        }
        moved(rest)
    }

    private func endOfAdvance(by nanoseconds: Int64) -> Int64 { state.withLock { Self.later($0.now, by: nanoseconds) } }

    /// `time` + `delay` (a negative delay counts as none), saturating: a deadline past the end of
    /// time never falls due.
    private static func later(_ time: Int64, by delay: Int64) -> Int64 {
        let (sum, overflow) = time.addingReportingOverflow(max(0, delay))
        return overflow ? .max : sum
    }

    /// The earliest timer due by `end` (ties in scheduling order), with time moved to its deadline
    /// and a repeating timer re-armed a period later; `moved` is how far time moved.
    private func takeDue(until end: Int64) -> (entry: Entry, moved: Int64)? {
        state.withLock { state -> (Entry, Int64)? in
            guard
                let next = state.entries.values.filter({ $0.deadline <= end && $0.deadline < .max })
                    .min(by: { ($0.deadline, $0.id) < ($1.deadline, $1.id) })
            else { return nil }
            let moved = max(0, next.deadline - state.now)
            state.now = max(state.now, next.deadline)
            if let interval = next.interval {
                state.entries[next.id]?.deadline = Self.later(next.deadline, by: interval)
            } else {
                state.entries[next.id] = nil
            }
            return (next, moved)
        }
    }

    fileprivate func cancel(_ id: Int) { _ = state.withLock { $0.entries.removeValue(forKey: id) } }

    private struct Timer: ScheduledTimer {
        let scheduler: ManualScheduler
        let id: Int
        func cancel() { scheduler.cancel(id) }
    }
}
