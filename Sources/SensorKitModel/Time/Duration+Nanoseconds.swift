extension Duration {
    /// Whole nanoseconds of a duration, saturating: a negative one counts as none, one past
    /// `Int64.max` nanoseconds (≈ 292 years) as `Int64.max`.
    public var saturatingNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (total, overflowAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflow || overflowAgain ? .max : total
    }
}
