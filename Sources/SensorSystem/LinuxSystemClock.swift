import CSensorLinux
import Glibc
import SensorKitModel

/// The machine's real clocks: `clock_gettime(CLOCK_BOOTTIME)`, `clock_gettime(CLOCK_REALTIME)` and
/// `/proc/sys/kernel/random/boot_id`. Never blocks.
public struct LinuxSystemClock: SystemClock {
    public let bootID: BootID

    /// Reads the boot id once; it cannot change while this process lives.
    public init(procRoot: String = "/proc") {
        bootID = BootID(SystemFiles.readTrimmed(procRoot + "/sys/kernel/random/boot_id") ?? "unknown-boot")
    }

    public func boottimeNanoseconds() -> Int64 { Self.read(CLOCK_BOOTTIME) }
    public func realtimeNanoseconds() -> Int64 { Self.read(CLOCK_REALTIME) }

    /// `adjtimex` (read only): synchronised when the kernel clears `STA_UNSYNC`, which it sets at
    /// boot and whenever the clock is set by hand (`settimeofday`, `date -s`), and only an NTP or
    /// PTP daemon clears. A failing call counts as not synchronised.
    public func wallClockSynchronized() -> Bool {
        (try? Self.clockState()).map { !$0.unsynchronised } ?? false
    }

    /// The kernel's clock state: `TIME_ERROR` or `STA_UNSYNC` both mean "not synchronised".
    public static func clockState() throws(SystemError) -> (state: Int32, status: Int32, unsynchronised: Bool) {
        var status: Int32 = 0
        let state = try syscall("adjtimex") { csl_clock_state(&status) }
        return (state, status, state == csl_time_error() || status & csl_status_unsync() != 0)
    }

    /// `clock_gettime`; cannot fail for these clock ids on Linux ≥ 2.6.39.
    public static func read(_ clock: clockid_t) -> Int64 {
        do { return try SystemCalls.clockNanoseconds(clock) } catch { preconditionFailure("\(error)") }
    }
}
