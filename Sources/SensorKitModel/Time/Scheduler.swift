import Dispatch

/// Timers on a monotonic clock, injected so the daemon's timeouts (idle fetches, parked cursors,
/// cut-short frames) can be driven by a test without waiting for them. Production:
/// `DispatchScheduler`; tests: a manual scheduler whose time moves only when told.
public protocol Scheduler: Sendable {
    /// Monotonic nanoseconds, the time deadlines count in (not the boot clock: suspend does not
    /// make a client idle).
    func uptimeNanoseconds() -> Int64
    /// Runs `body` on `queue` `delay` ns from now, then every `interval` ns when one is given,
    /// until the returned timer is cancelled.
    func schedule(
        on queue: DispatchQueue, after delay: Int64, repeating interval: Int64?,
        _ body: @escaping @Sendable () -> Void
    ) -> any ScheduledTimer
    /// Runs `body` on `queue` every `interval` ns, the first time `interval` from now, until the
    /// returned timer is cancelled; after `cancel` returns the body is not running and does not
    /// start again. For a timer that ticks for the process's whole life at a pace of seconds (the
    /// daemon's housekeeping): the daemon's scheduler gives it a thread of its own
    /// (`TickingScheduler`); by default it is `schedule(on:after:repeating:)`.
    func scheduleTicks(
        on queue: DispatchQueue, every interval: Int64, _ body: @escaping @Sendable () -> Void
    ) -> any ScheduledTimer
}

extension Scheduler {
    public func scheduleTicks(
        on queue: DispatchQueue, every interval: Int64, _ body: @escaping @Sendable () -> Void
    ) -> any ScheduledTimer {
        schedule(on: queue, after: interval, repeating: interval, body)
    }
}

/// A timer a `Scheduler` runs; after `cancel` its body does not start again.
public protocol ScheduledTimer: Sendable {
    func cancel()
}

/// The real scheduler: Dispatch timer sources on the monotonic clock.
public struct DispatchScheduler: Scheduler {
    public init() {}

    public func uptimeNanoseconds() -> Int64 { Int64(clamping: DispatchTime.now().uptimeNanoseconds) }

    public func schedule(
        on queue: DispatchQueue, after delay: Int64, repeating interval: Int64?,
        _ body: @escaping @Sendable () -> Void
    ) -> any ScheduledTimer {
        let source = DispatchSource.makeTimerSource(queue: queue)
        let deadline = DispatchTime.now() + .nanoseconds(Int(clamping: max(0, delay)))
        if let interval {
            // A tenth of the period, at most 100 ms: a fast watchdog must still tick on time.
            let leeway = Int(clamping: min(100_000_000, max(1, interval) / 10))
            source.schedule(
                deadline: deadline, repeating: .nanoseconds(Int(clamping: max(1, interval))), leeway: .nanoseconds(leeway))
        } else {
            source.schedule(deadline: deadline, leeway: .milliseconds(10))
        }
        source.setEventHandler(handler: body)
        source.resume()
        return DispatchTimer(source: source)
    }

    private struct DispatchTimer: ScheduledTimer, @unchecked Sendable {
        // @unchecked: a Dispatch source is thread-safe.
        let source: any DispatchSourceTimer
        func cancel() { source.cancel() }
    }
}
