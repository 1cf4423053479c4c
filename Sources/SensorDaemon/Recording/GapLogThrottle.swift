import SensorKitModel

/// Says a stream's steady loss once an hour, not at every gap: a source that cannot observe part
/// of what it reports (device usage on a shell without the wlr protocols records a deletion
/// record every interval, 96 a day) would otherwise fill the journal with one warning per gap.
/// Every gap is still recorded; only its log line is held back. A pure value, fed the gap's own
/// end time, so tests need no clock.
struct GapLogThrottle: Sendable {
    /// How long the same reason stays quiet after it was logged, in nanoseconds.
    static let quietNanoseconds: Int64 = 3_600_000_000_000

    private var last: (why: String, at: Int64)?
    private var held = 0

    /// Whether a gap for `why` ending at `end` (boot ns) is logged: nil when it is held back (the
    /// same reason as the line logged less than an hour before); else how many gaps were held
    /// back since the last line logged, for this line to say.
    mutating func admit(_ why: String, endingAt end: Int64) -> Int? {
        if let last, last.why == why, end.subtractingSaturating(last.at) < Self.quietNanoseconds {
            held = held == .max ? held : held + 1
            return nil
        }
        defer {
            last = (why, end)
            held = 0
        }
        return held
    }
}
