/// Arithmetic on numbers that came from a client, a device or a file: Swift traps on overflow,
/// which would kill the daemon and stop recording for everyone, so such numbers are combined with
/// these, which stop at the type's bounds instead (docs/reliability.md, "No app, client or sensor
/// can crash it"). A result at a bound is still ordered correctly against every sane value, which
/// is all that range checks and comparisons need.
extension FixedWidthInteger {
    /// `self + other`, or the nearest bound when that does not fit.
    @inlinable
    public func addingSaturating(_ other: Self) -> Self {
        let (result, overflow) = addingReportingOverflow(other)
        guard overflow else { return result }
        return other > 0 ? .max : .min
    }

    /// `self − other`, or the nearest bound when that does not fit.
    @inlinable
    public func subtractingSaturating(_ other: Self) -> Self {
        let (result, overflow) = subtractingReportingOverflow(other)
        guard overflow else { return result }
        return other > 0 ? .min : .max
    }

    /// `self × other`, or the nearest bound when that does not fit.
    @inlinable
    public func multipliedSaturating(by other: Self) -> Self {
        let (result, overflow) = multipliedReportingOverflow(by: other)
        guard overflow else { return result }
        return (self < 0) == (other < 0) ? .max : .min
    }
}
