import SensorKitModel
import Synchronization

/// A clock for tests: boot time and wall time advance only when told; the wall clock can be
/// stepped and the machine "rebooted" (new boot id, boot time from zero). Thread-safe.
public final class FakeClock: SystemClock, Sendable {
    private struct State {
        var boot: BootID
        var boottime: Int64
        var realtime: Int64
        var boots = 0
    }
    private let state: Mutex<State>

    /// Starts at boot time `boottime` with the wall clock at `realtimeUnixNanoseconds`.
    public init(boot: String = "boot-0", boottime: Int64 = 5_000_000_000,
                realtimeUnixNanoseconds: Int64 = 1_795_000_000_000_000_000) {
        state = Mutex(State(boot: BootID(boot), boottime: boottime, realtime: realtimeUnixNanoseconds))
    }

    public var bootID: BootID { state.withLock { $0.boot } }
    public func boottimeNanoseconds() -> Int64 { state.withLock { $0.boottime } }
    public func realtimeNanoseconds() -> Int64 { state.withLock { $0.realtime } }

    /// Time passes: both clocks move forward.
    public func advance(nanoseconds: Int64) {
        state.withLock {
            $0.boottime += nanoseconds
            $0.realtime += nanoseconds
        }
    }

    /// Time passes: both clocks move forward.
    public func advance(seconds: Double) { advance(nanoseconds: Int64(seconds * 1e9)) }

    /// The wall clock is stepped (NTP, an administrator); boot time does not move.
    public func stepWallClock(nanoseconds: Int64) { state.withLock { $0.realtime += nanoseconds } }

    /// The machine reboots after `downtime`: a new boot id, boot time restarts near zero.
    public func reboot(downtime: Int64 = 60_000_000_000, bootedFor: Int64 = 3_000_000_000) {
        state.withLock {
            $0.boots += 1
            $0.boot = BootID("boot-\($0.boots)")
            $0.realtime += downtime + bootedFor
            $0.boottime = bootedFor
        }
    }
}
