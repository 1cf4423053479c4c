import Synchronization

/// A clock for tests (and, through `ManualTime`, for a whole daemon a test drives): boot time and
/// wall time advance only when told; the wall clock can be stepped and the machine "rebooted"
/// (new boot id, boot time from zero). Package-only, like `ManualScheduler` and `ManualTime`:
/// a study app importing SensorKit never sees them. Thread-safe.
///
/// The wall clock's "synchronised" flag follows the kernel's `STA_UNSYNC`: a step by hand and a
/// reboot clear it, `synchronize()` (an NTP daemon locking on) sets it. It starts synchronised.
package final class FakeClock: SystemClock, Sendable {
    private struct State {
        var boot: BootID
        var boottime: Int64
        var realtime: Int64
        var boots = 0
        var synchronized = true
    }
    private let state: Mutex<State>

    /// Starts at boot time `boottime` with the wall clock at `realtimeUnixNanoseconds`.
    package init(
        boot: String = "boot-0", boottime: Int64 = 5_000_000_000,
        realtimeUnixNanoseconds: Int64 = 1_795_000_000_000_000_000
    ) {
        state = Mutex(State(boot: BootID(boot), boottime: boottime, realtime: realtimeUnixNanoseconds))
    }

    package var bootID: BootID { state.withLock { $0.boot } }
    package func boottimeNanoseconds() -> Int64 { state.withLock { $0.boottime } }
    package func realtimeNanoseconds() -> Int64 { state.withLock { $0.realtime } }
    package func wallClockSynchronized() -> Bool { state.withLock { $0.synchronized } }

    /// An NTP daemon locks on: the kernel reports the wall clock synchronised from now on.
    package func synchronize() { state.withLock { $0.synchronized = true } }

    /// Time passes: both clocks move forward (saturating at the end of time).
    package func advance(nanoseconds: Int64) {
        state.withLock {
            $0.boottime = $0.boottime.addingReportingOverflow(nanoseconds).overflow ? .max : $0.boottime + nanoseconds
            $0.realtime = $0.realtime.addingReportingOverflow(nanoseconds).overflow ? .max : $0.realtime + nanoseconds
        }
    }

    /// Time passes: both clocks move forward.
    package func advance(seconds: Double) { advance(nanoseconds: Int64(seconds * 1e9)) }

    /// The wall clock is stepped (an administrator, `date -s`); boot time does not move, and the
    /// kernel no longer reports the clock synchronised.
    package func stepWallClock(nanoseconds: Int64) {
        state.withLock {
            $0.realtime += nanoseconds
            $0.synchronized = false
        }
    }

    /// The machine reboots after `downtime`: a new boot id, boot time restarts near zero, and the
    /// wall clock (read from the RTC) is not synchronised until `synchronize()`.
    package func reboot(downtime: Int64 = 60_000_000_000, bootedFor: Int64 = 3_000_000_000) {
        state.withLock {
            $0.synchronized = false
            $0.boots += 1
            $0.boot = BootID("boot-\($0.boots)")
            $0.realtime += downtime + bootedFor
            $0.boottime = bootedFor
        }
    }
}
