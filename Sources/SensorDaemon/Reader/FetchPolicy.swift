import SensorKitModel

/// Decides what a fetch may return (DESIGN §6.1), as a pure function so every boundary is tested
/// to the nanosecond:
/// - the range is `(from, to]`; both must be set, `to ≥ from`;
/// - if `(from, to]` overlaps the hold `(now − hold, now]` — that is, `to > now − hold` — the
///   fetch returns nothing at all, exactly like SensorKit (no partial results);
/// - nothing older than the window (`now − window`) is returned;
/// - an app sees only data recorded at or after its own first `startRecording` of the sensor.
public enum FetchPolicy {
    public enum Verdict: Hashable, Sendable {
        /// Read `(from, to]`, samples recorded at or after `notBefore`.
        case read(from: Int64, to: Int64, notBefore: Int64)
        /// Complete with no results; `notice` says why, for people (`sensorkitctl` prints it).
        case empty(notice: String)
    }

    public static func decide(from: Int64, to: Int64, now: Int64, hold: Int64, window: Int64,
                              firstStart: Int64?) -> Verdict {
        let holdStart = now - hold
        if to > holdStart {
            return .empty(notice: "the range ends \(describe(to - holdStart)) inside the \(describe(hold)) hold; "
                          + "SensorKit returns nothing for a range that overlaps the hold — ask for data up to \(holdStart) (now − hold)")
        }
        guard let firstStart else {
            return .empty(notice: "this app never started recording this sensor (startRecording), so it has no data")
        }
        let windowStart = now - window
        let effectiveFrom = max(from, windowStart)
        if to <= effectiveFrom {
            return .empty(notice: "the range lies entirely before the \(describe(window)) window; older data was deleted (ageLimit)")
        }
        if to < firstStart {
            return .empty(notice: "the range ends before this app first started recording this sensor")
        }
        return .read(from: effectiveFrom, to: to, notBefore: firstStart)
    }

    /// "36 h", "90 s", "250 ms" — for notices.
    public static func describe(_ nanoseconds: Int64) -> String {
        let magnitude = nanoseconds.magnitude
        if magnitude >= 86_400_000_000_000 && magnitude % 3_600_000_000_000 == 0 { return "\(nanoseconds / 3_600_000_000_000) h" }
        if magnitude >= 3_600_000_000_000 { return String(format2(Double(nanoseconds) / 3.6e12)) + " h" }
        if magnitude >= 1_000_000_000 { return String(format2(Double(nanoseconds) / 1e9)) + " s" }
        if magnitude >= 1_000_000 { return String(format2(Double(nanoseconds) / 1e6)) + " ms" }
        return "\(nanoseconds) ns"
    }

    private static func format2(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return rounded == rounded.rounded() ? String(Int64(rounded)) : String(rounded)
    }
}
