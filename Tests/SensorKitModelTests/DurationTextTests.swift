import SensorKitModel
import Testing

/// The one duration parser and formatter (configuration, `sensorkit-export`, `sensorkitctl`).
@Suite struct DurationTextTests {
    @Test(
        arguments: [
            ("0", 0), ("250ms", 250_000_000), ("90s", 90_000_000_000), ("36h", 129_600_000_000_000),
            ("7d", 604_800_000_000_000), ("5ns", 5), ("3us", 3_000), ("2m", 120_000_000_000),
            ("9223372036854775807ns", Int64.max),
        ] as [(String, Int64)])
    func parsesWhatPeopleWrite(text: String, nanoseconds: Int64) {
        #expect(DurationText.nanoseconds(text) == nanoseconds)
        #expect(DurationText.nanoseconds(text, allowingFraction: true) == nanoseconds)
    }

    /// Fractions only where they were always taken (sensorkitctl's times): a configuration or an
    /// export option with one is still refused.
    @Test(
        arguments: [
            ("1.5h", 5_400_000_000_000), ("0.25s", 250_000_000), ("1.0000000004s", 1_000_000_000), ("2.5ms", 2_500_000),
        ] as [(String, Int64)])
    func fractionsOnlyWhereAllowed(text: String, nanoseconds: Int64) {
        #expect(DurationText.nanoseconds(text, allowingFraction: true) == nanoseconds)
        #expect(DurationText.nanoseconds(text) == nil)
    }

    /// Hostile text is nil, never a trap: sensorkitctl's own parser multiplied a Double into
    /// `Int64(…)`, which traps on "1e300d".
    @Test(arguments: [
        "", "h", "-1s", "-0.5s", "1e300d", "99999999999d", "9223372036854775808ns", "1.s", ".5s", "1.5.5s",
        "1,5h", "1 h", "5", "inf", "nans", "1.-5s", "106751.99117d",
    ])
    func refusesTheRest(text: String) {
        #expect(DurationText.nanoseconds(text) == nil)
        #expect(DurationText.nanoseconds(text, allowingFraction: true) == nil)
    }

    @Test(
        arguments: [
            (0.0, "0.0 s"), (0.44, "0.4 s"), (9.96, "10.0 s"), (42.4, "42 s"), (119.4, "119 s"), (780, "13 min"),
            (7_199, "119 min"), (5 * 3600 + 2 * 60 + 30, "5 h 02 min"), (47 * 3600 + 59 * 60, "47 h 59 min"),
            (3 * 86_400 + 4 * 3600 + 59, "3 d 4 h"), (-5, "0.0 s"), (.nan, "?"), (.infinity, "?"), (1e300, "11574074074 d 1 h"),
        ] as [(Double, String)])
    func showsHowLong(seconds: Double, text: String) {
        #expect(DurationText.text(seconds: seconds) == text)
    }
}
