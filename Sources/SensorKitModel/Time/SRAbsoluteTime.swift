/// Seconds on SensorKit's timeline, Apple's `SRAbsoluteTime` (a `CFTimeInterval` wrapped as a
/// Swift struct). The timeline ticks across suspend and reboots and never jumps when the wall clock
/// is stepped; see `Timeline` and docs/design-notes/0001-time.md for how it is built on Linux.
///
/// The conversions that need "now" (`current()`, `fromCFAbsoluteTime(_cf:)`,
/// `toCFAbsoluteTime()`, `fromContinuousTime(_continuous:)`) live in the `SensorKit` client module,
/// which owns the system clock; this type is pure.
///
/// Like Apple's, it is deliberately not `Comparable` (study code often adds that conformance
/// itself, and a second one would not compile); compare `rawValue`s.
public struct SRAbsoluteTime: RawRepresentable, Hashable, Sendable, Codable {
    public let rawValue: CFTimeInterval
    public init(rawValue: CFTimeInterval) { self.rawValue = rawValue }
    public init(_ rawValue: CFTimeInterval) { self.rawValue = rawValue }

    /// The instant `nanoseconds` after the timeline's origin, rounded to the nearest Double.
    /// Exact to the nanosecond for the first ~97 days of a timeline (Double has 53 bits); the
    /// store and the wire keep integer nanoseconds, so nothing is lost where it matters.
    public init(nanoseconds: Int64) {
        let (seconds, fraction) = nanoseconds.floorDividedBy(1_000_000_000)
        self.rawValue = Double(seconds) + Double(fraction) / 1e9
    }

    /// This instant in integer nanoseconds from the timeline's origin (nearest nanosecond).
    /// NaN and infinities have no instant: nil.
    public var nanoseconds: Int64? {
        guard rawValue.isFinite, abs(rawValue) < 9.2e9 else { return nil }
        let seconds = rawValue.rounded(.down)
        let fraction = ((rawValue - seconds) * 1e9).rounded()
        return Int64(seconds) * 1_000_000_000 + Int64(fraction)
    }
}

extension Int64 {
    /// Floor division with a non-negative remainder, for splitting nanoseconds into seconds.
    func floorDividedBy(_ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let q = self / divisor, r = self % divisor
        return r < 0 ? (q - 1, r + divisor) : (q, r)
    }
}
