/// Durations as people write them in sensorkitd.conf and on command lines: `24h`, `7d`, `90s`,
/// `250ms`, `0` (units `ns us ms s m h d`; no sign, no fraction).
public enum DurationText {
    /// The duration in nanoseconds, or nil for anything else (including overflow).
    public static func nanoseconds(_ text: String) -> Int64? {
        let units: [(String, Int64)] = [
            ("ns", 1), ("us", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000),
            ("m", 60_000_000_000), ("h", 3_600_000_000_000), ("d", 86_400_000_000_000),
        ]
        if text == "0" { return 0 }
        for (suffix, factor) in units.sorted(by: { $0.0.count > $1.0.count }) where text.hasSuffix(suffix) {
            guard let number = Int64(text.dropLast(suffix.count)), number >= 0 else { return nil }
            let (product, overflow) = number.multipliedReportingOverflow(by: factor)
            return overflow ? nil : product
        }
        return nil
    }
}
