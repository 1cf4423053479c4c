import SensorKitModel
import SensorStore

/// Decides what a fetch may return (docs/protocol.md §3.3), as a pure function so every boundary is tested
/// to the nanosecond:
/// - the range is `(from, to]`; both must be set, `to ≥ from`;
/// - if `(from, to]` overlaps the hold `(now − hold, now]` — that is, `to > now − hold` — the
///   fetch returns nothing at all, exactly like SensorKit (no partial results); a hold of 0
///   (lab rigs) checks nothing, so a range may end in the future;
/// - nothing older than the window (`now − window`) is returned;
/// - an app sees only data recorded at or after its own first `startRecording` of the sensor.
/// The store applies both rules once more to each sample's receive time (`SampleAdmission`,
/// docs/design-notes/0005-clock-steps.md): a sample comes out only when the later of its sensor
/// and receive time has left the hold and the earlier is at or after the first start.
public enum FetchPolicy {
    public enum Verdict: Hashable, Sendable {
        /// Read `(from, to]`, samples recorded at or after `notBefore`.
        case read(from: Int64, to: Int64, notBefore: Int64)
        /// Complete with no results; `notice` says why, for people (`sensorkitctl` prints it).
        case empty(notice: String)
    }

    public static func decide(
        from: Int64, to: Int64, now: Int64, hold: Int64, window: Int64,
        firstStart: Int64?
    ) -> Verdict {
        guard let firstStart else {
            return .empty(notice: "this app never started recording this sensor (startRecording), so it has no data")
        }
        // The range arithmetic is the store's own (one rule, applied again by the store itself);
        // this adds the explanation a person reads when nothing comes back.
        if let visible = RetentionPolicy(hold: hold, window: max(window, 1))
            .visibleRange(from: from, to: to, notBefore: firstStart, now: now)
        {
            return .read(from: visible.after, to: visible.through, notBefore: firstStart)
        }
        // `to` is the client's and may be anything up to Int64.max while `now − hold` is negative
        // (a timeline younger than the hold): saturate rather than trap.
        let holdStart = now.subtractingSaturating(hold)
        if hold > 0 && to > holdStart {
            return .empty(
                notice: "the range ends \(describe(to.subtractingSaturating(holdStart))) inside the \(describe(hold)) hold; "
                    + "SensorKit returns nothing for a range that overlaps the hold — ask for data up to \(holdStart) (now − hold)"
            )
        }
        if to == from {
            return .empty(notice: "the range (from, to] is empty: from equals to")
        }
        if to <= now.subtractingSaturating(window) {
            return .empty(
                notice: "the range lies entirely before the \(describe(window)) window; older data was deleted (ageLimit)")
        }
        return .empty(notice: "the range ends before this app first started recording this sensor")
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
