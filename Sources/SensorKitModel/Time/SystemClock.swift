/// Identifies one boot of the machine (`/proc/sys/kernel/random/boot_id`).
public struct BootID: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}

/// A moment as the kernel names it: nanoseconds of `CLOCK_BOOTTIME` in one boot. Every sample is
/// stored this way; the SR timeline is derived from it through the boot's anchor.
public struct BootInstant: Hashable, Sendable, Codable {
    public var boot: BootID
    public var nanoseconds: Int64
    public init(boot: BootID, nanoseconds: Int64) {
        self.boot = boot
        self.nanoseconds = nanoseconds
    }
}

/// The clocks the time model reads. Production: `LinuxSystemClock` (SensorSystem); tests: a fake
/// whose wall clock can be stepped and whose machine can be "rebooted".
public protocol SystemClock: Sendable {
    /// The current boot's identity.
    var bootID: BootID { get }
    /// `CLOCK_BOOTTIME` in nanoseconds: monotonic, counts suspend, restarts at each boot.
    func boottimeNanoseconds() -> Int64
    /// `CLOCK_REALTIME` in nanoseconds since the Unix epoch: the wall clock, which may be stepped.
    func realtimeNanoseconds() -> Int64
    /// Whether the kernel reports the wall clock as synchronised to a time source (an NTP or PTP
    /// daemon disciplines it). Only then is the wall clock trusted to measure time across a
    /// reboot (docs/design-notes/0005-clock-steps.md).
    func wallClockSynchronized() -> Bool
}

extension SystemClock {
    /// The current instant on the boot clock.
    public func now() -> BootInstant { BootInstant(boot: bootID, nanoseconds: boottimeNanoseconds()) }

    /// The wall clock in nanoseconds since the CF epoch (2001-01-01 UTC).
    public func realtimeCFNanoseconds() -> Int64 {
        realtimeNanoseconds() - Int64(kCFAbsoluteTimeIntervalSince1970) * 1_000_000_000
    }
}

extension BootID: CodingKeyRepresentable {
    public var codingKey: any CodingKey { BootIDKey(stringValue: rawValue) }
    public init?<T: CodingKey>(codingKey: T) { self.init(codingKey.stringValue) }

    private struct BootIDKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
