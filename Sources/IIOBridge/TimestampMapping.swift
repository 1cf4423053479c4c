import Glibc
import SensorSystem

/// How a buffered device's scans get their `CLOCK_BOOTTIME` sensor times (docs/iio.md §5):
///
/// - `.boottime`: the kernel stamps `in_timestamp` with boottime because we selected it in
///   `current_timestamp_clock` before enabling the buffer; used as is.
/// - `.mapped(clock)`: the kernel stamps with another clock (the attribute is absent before 4.5,
///   where it is `realtime`, or it refused `boottime`). Each read converts with an offset
///   `boottime − clock` measured right then from paired clock readings, so a stepped wall clock
///   or the drift of `monotonic_raw` never accumulates.
/// - `.estimated`: the device has no timestamp element; a scan's time is the read time minus
///   one period per scan that was queued behind it. Recorded as such in the stream's details.
///
/// Pure apart from `ClockPairing.system`, which reads the clocks (`clock_gettime`, never blocks).
public enum TimestampMapping: Hashable, Sendable, CustomStringConvertible {
    case boottime
    case mapped(IIOTimestampClock)
    case estimated

    /// The mapping for a layout and the clock `current_timestamp_clock` reads back after enabling;
    /// nil `clock` means the attribute does not exist (kernels before 4.5 stamp with realtime).
    public init(hasTimestamp: Bool, clock: IIOTimestampClock?) {
        if !hasTimestamp {
            self = .estimated
        } else if clock == .boottime {
            self = .boottime
        } else {
            self = .mapped(clock ?? .realtime)
        }
    }

    public var description: String {
        switch self {
        case .boottime: "kernel in_timestamp, boottime"
        case let .mapped(clock):
            "kernel in_timestamp (\(clock.rawValue)) mapped to boottime by paired clock readings at each read"
        case .estimated: "estimated: read time minus one period per queued scan (no in_timestamp)"
        }
    }
}

/// Measures `boottime − clock` for a kernel timestamp clock: boottime, the clock, boottime again,
/// and the clock reading set against the middle of the two boottime readings (the error is at most
/// half the bracket, a few tens of nanoseconds). Injectable so tests are deterministic.
public struct ClockPairing: Sendable {
    private let measure: @Sendable (IIOTimestampClock) -> Int64

    public init(_ measure: @escaping @Sendable (IIOTimestampClock) -> Int64) { self.measure = measure }

    /// `boottime − clock` in nanoseconds now.
    public func boottimeOffset(of clock: IIOTimestampClock) -> Int64 { measure(clock) }

    /// The machine's clocks through `clock_gettime` (vDSO; never blocks, never fails for these ids).
    public static let system = ClockPairing { clock in
        let before = read(CLOCK_BOOTTIME)
        let reading = read(clockID(clock))
        let after = read(CLOCK_BOOTTIME)
        return before + (after - before) / 2 - reading
    }

    /// The `clockid_t` the kernel uses for each `current_timestamp_clock` value
    /// (`iio_device_get_clock` in industrialio-core.c).
    static func clockID(_ clock: IIOTimestampClock) -> clockid_t {
        switch clock {
        case .realtime: CLOCK_REALTIME
        case .monotonic: CLOCK_MONOTONIC
        case .monotonicRaw: CLOCK_MONOTONIC_RAW
        case .realtimeCoarse: CLOCK_REALTIME_COARSE
        case .monotonicCoarse: CLOCK_MONOTONIC_COARSE
        case .boottime: CLOCK_BOOTTIME
        case .tai: CLOCK_TAI
        }
    }

    private static func read(_ clock: clockid_t) -> Int64 { LinuxSystemClock.read(clock) }
}
