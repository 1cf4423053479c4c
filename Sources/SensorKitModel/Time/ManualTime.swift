import Dispatch

/// Time a test moves by hand for a whole daemon: the boot and wall clocks (`SystemClock`) and the
/// monotonic time its timers run on (`Scheduler`) in one, moving together and only in `advance`.
/// `DaemonHarness` and `GeneratedSource` take it as both, so a test of the hold, the window, a
/// timeout or a source's rate passes an hour in microseconds instead of sleeping through it.
package final class ManualTime: SystemClock, Scheduler, Sendable {
    /// The boot and wall clocks (a test may step the wall clock or reboot the machine).
    package let clock: FakeClock
    /// The timers.
    package let scheduler: ManualScheduler

    package init(clock: FakeClock = FakeClock(), scheduler: ManualScheduler = ManualScheduler()) {
        self.clock = clock
        self.scheduler = scheduler
    }

    /// Moves both clocks forward by `duration`: each timer that falls due on the way runs on its
    /// queue, in deadline order and with the clocks at its deadline, to its end before the next;
    /// returns when the last has run. Throws when one has not finished within `timeout`.
    package func advance(by duration: Duration, timeout: Duration = .seconds(10)) throws(ManualScheduler.Stalled) {
        try scheduler.advance(by: duration, timeout: timeout) { clock.advance(nanoseconds: $0) }
    }

    /// Timers that have not been cancelled.
    package var pendingTimers: Int { scheduler.pendingTimers }

    package var bootID: BootID { clock.bootID }
    package func boottimeNanoseconds() -> Int64 { clock.boottimeNanoseconds() }
    package func realtimeNanoseconds() -> Int64 { clock.realtimeNanoseconds() }
    package func wallClockSynchronized() -> Bool { clock.wallClockSynchronized() }

    package func uptimeNanoseconds() -> Int64 { scheduler.uptimeNanoseconds() }
    package func schedule(
        on queue: DispatchQueue, after delay: Int64, repeating interval: Int64?,
        _ body: @escaping @Sendable () -> Void
    ) -> any ScheduledTimer {
        scheduler.schedule(on: queue, after: delay, repeating: interval, body)
    }
}
