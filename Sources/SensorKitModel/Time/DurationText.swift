/// Durations as people read and write them — the one parser and the one formatter:
/// `sensorkitd.conf`, `sensorkit-export` and `sensorkitctl` read them with `nanoseconds`, and
/// `sensorkitctl` shows them with `text(seconds:)`.
public enum DurationText {
    /// `24h`, `7d`, `90s`, `250ms`, `0` → nanoseconds (units `ns us ms s m h d`, no sign). With
    /// `allowingFraction` (`sensorkitctl`'s times, which always took them) also `1.5h`, rounded to
    /// the nearest nanosecond; the configuration and `sensorkit-export` take whole numbers only.
    /// Nil for anything else, and for a duration beyond `Int64.max` nanoseconds (≈ 292 years):
    /// the text is hostile input, so it never traps.
    public static func nanoseconds(_ text: String, allowingFraction: Bool = false) -> Int64? {
        if text == "0" { return 0 }
        // Longest suffix first: "ms" before "s", "ns" before "s".
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count)
            let parts = number.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
            // The whole part as before fractions were allowed (`Int64`'s grammar, not below 0).
            guard let whole = parts.first, let wholeValue = Int64(whole), wholeValue >= 0,
                parts.count == 1 || (allowingFraction && whole.allSatisfy(\.isASCIIDigit))
            else { return nil }
            var (total, overflow) = wholeValue.multipliedReportingOverflow(by: factor)
            guard !overflow else { return nil }
            if parts.count == 2 {
                let fraction = parts[1]
                guard !fraction.isEmpty, fraction.allSatisfy(\.isASCIIDigit) else { return nil }
                // At most 18 digits count (more cannot change a nanosecond of a day).
                let digits = fraction.prefix(18)
                let scaled = (Double(Int64(digits)!) / pow10(digits.count) * Double(factor)).rounded()
                (total, overflow) = total.addingReportingOverflow(Int64(scaled))
                guard !overflow else { return nil }
            }
            return total
        }
        return nil
    }

    /// How long, for a person: `0.4 s`, `42 s`, `13 min`, `5 h 02 min`, `3 d 4 h`; `?` when
    /// not finite, and a negative duration shows as 0.
    public static func text(seconds: Double) -> String {
        guard seconds.isFinite else { return "?" }
        let s = max(0, seconds)
        if s < 10 {
            let tenths = Int((s * 10).rounded())
            return "\(tenths / 10).\(tenths % 10) s"
        }
        if s < 120 { return "\(Int(s.rounded())) s" }
        let minutes = Int(min(s, 1e15) / 60)
        if minutes < 120 { return "\(minutes) min" }
        if minutes < 48 * 60 {
            let rest = minutes % 60
            return "\(minutes / 60) h \(rest < 10 ? "0" : "")\(rest) min"
        }
        return "\(minutes / 1440) d \(minutes % 1440 / 60) h"
    }

    private static let units: [(String, Int64)] = [
        ("ns", 1), ("us", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000),
        ("m", 60_000_000_000), ("h", 3_600_000_000_000), ("d", 86_400_000_000_000),
    ].sorted { $0.0.count > $1.0.count }

    private static func pow10(_ exponent: Int) -> Double {
        (0..<exponent).reduce(1.0) { value, _ in value * 10 }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
