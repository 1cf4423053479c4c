import Foundation
import SensorKitModel
import Testing

/// `DayChart`: the day and week pictures of `sensorkitctl report`, as SVG elements (parsed by
/// libxml2) and as pixels (`SVGRendering`: rsvg-convert, pngtopam). The PNGs are kept for a
/// person to look at (`SVGRendering.artefacts`).
@Suite struct DayChartTests {
    static let hour: Int64 = 3_600_000_000_000
    static let start: Int64 = 1_000 * hour
    static func h(_ n: Double) -> Int64 { start + Int64(n * Double(hour)) }
    static let background: Set<String> = ["#ffffff", "#f5f5f5"]

    /// Accelerometer recorded 00–06, 08–09, 09:30–15 and 16–18 with a systemInitiated gap 06–08,
    /// a person's deletion 09–09:30 and nothing explaining 15–16; a wearable's heart rate recorded
    /// 12–13 only, not wanted 00–12, nothing explaining 13–18, from a daemon that did not say when
    /// the stream began; a long-named PPG stream that began at 11; now at 18.
    static func chart() -> DayChart {
        DayChart(
            title: "Recording on Tuesday 1 December 2026", subtitle: "local time", start: start, end: h(24), now: h(18),
            ticks: (0...24).map { (h(Double($0)), String(format: "%02d", $0)) },
            rows: [
                .init(
                    name: "accelerometer", recorded: [h(0)...h(6), h(8)...h(9), h(9.5)...h(15), h(16)...h(18)],
                    gaps: [(h(6)...h(8), .systemInitiated), (h(9)...h(9.5), .userInitiated)], notBefore: h(-30)),
                .init(name: "heartRate on ble:<AA&BB>", recorded: [h(12)...h(13)], gaps: [(h(0)...h(12), .noInterestedClients)]),
                .init(
                    name: "photoplethysmogram on ble:Polar Sense 0A1B2C3D, left wrist", recorded: [h(11.25)...h(17.5)],
                    gaps: [(h(17.5)...h(17.6), .lowDiskSpace)], notBefore: h(11)),
            ])
    }

    /// A 30-second recording: the stream registered and wanted at 10:00, samples 10:00:02–10:00:32,
    /// the picture drawn at 10:00:40.
    static func thirtySeconds() -> DayChart {
        let second = hour / 3600
        return DayChart(
            title: "Recording on Tuesday 1 December 2026", subtitle: "local time", start: start, end: h(24),
            now: h(10) + 40 * second, ticks: (0...24).map { (h(Double($0)), String(format: "%02d", $0)) },
            rows: [
                .init(name: "accelerometer", recorded: [(h(10) + 2 * second)...(h(10) + 32 * second)], gaps: [], notBefore: h(10))
            ]
        )
    }

    /// Seven days: an accelerometer registered on day 2 at 10:00, recording until day 3 18:00,
    /// lost until day 4 08:00 (systemInitiated), recording since; a heart rate strap known since
    /// day 1, first wanted on day 5 at 10:00, with three 20-minute recordings and a disk eviction.
    /// Now is day 7 at 12:00.
    static func week() -> DayChart {
        let day = 24.0
        let d = { (n: Double, hours: Double) in h((n - 1) * day + hours) }
        return DayChart(
            title: "Recording from 1 December 2026 to 7 December 2026", subtitle: "the 7-day window", start: start,
            end: d(8, 0), now: d(7, 12),
            ticks: (0..<28).filter { $0 % 4 != 0 }.map { (h(Double($0) * 6), "") },
            captions: (1...7).map { (d(Double($0), 12), "Day \($0)") }, boundaries: (1...8).map { d(Double($0), 0) },
            rows: [
                .init(
                    name: "accelerometer", recorded: [d(2, 10)...d(3, 18), d(4, 8)...d(7, 12)],
                    gaps: [(d(3, 18)...d(4, 8), .systemInitiated)], notBefore: d(2, 10)),
                .init(
                    name: "heartRate on ble:Polar H10 7E37D222",
                    recorded: [d(5, 10)...d(5, 10.33), d(5, 14)...d(5, 14.33), d(6, 9)...d(6, 9.33)],
                    gaps: [(d(5, 10.33)...d(5, 14), .noInterestedClients), (d(6, 9.2)...d(6, 9.25), .lowDiskSpace)],
                    notBefore: d(5, 10)),
            ])
    }

    static func rects(_ elements: [SVGRendering.Element], _ role: String) -> [SVGRendering.Element] {
        elements.filter { $0.name == "rect" && $0.attributes["class"] == role }
    }

    @Test func geometryMapsTheDayOntoThePlot() {
        let chart = Self.chart()
        #expect(chart.x(Self.start) == chart.plotLeft)
        #expect(chart.x(Self.h(24)) == chart.plotLeft + DayChart.plotWidth)
        #expect(chart.x(Self.h(12)) == chart.plotLeft + DayChart.plotWidth / 2)
        #expect(chart.x(Self.start - Self.hour) == chart.plotLeft, "clamped")
        #expect(chart.barTop(1) - chart.barTop(0) == DayChart.rowHeight)
        #expect(abs(chart.coveredFraction([Self.start...Self.h(9)], through: Self.h(18)) - 0.5) < 1e-12)
        #expect(chart.labelWidth > DayChart.minimumLabelWidth, "grown for the PPG stream's name")
    }

    @Test func textNamesRowsEscapesThemAndDrawsEachReasonInItsColour() throws {
        let svg = Self.chart().svg()
        let elements = try SVGRendering.elements(svg)
        let texts = elements.filter { $0.name == "text" }.map(\.text)
        #expect(texts.contains("accelerometer"))
        #expect(texts.contains("heartRate on ble:<AA&BB>") && svg.contains(">heartRate on ble:&lt;AA&amp;BB&gt;</text>"))
        #expect(!svg.contains("<AA&BB>"))
        #expect(texts.contains("14 h 30 min recorded (80.6 %)"), "14.5 of 18 elapsed hours: \(texts)")
        #expect(texts.contains("60 min recorded (5.6 %)"), "1 of 18")
        #expect(texts.contains("6 h 15 min recorded (89.3 %)"), "6.25 of the 7 hours since it began")
        for reason in SRDeletionReason.allCases {
            #expect(texts.contains(DayChart.legendText(reason)))
        }
        #expect(texts.contains(DayChart.notYetText) && texts.contains(DayChart.unexplainedText) && texts.contains("recorded"))
        #expect(Self.rects(elements, "legend").count == 3 + SRDeletionReason.allCases.count)
        #expect(svg.contains("fill=\"\(DayChart.colour(.systemInitiated))\""))
        #expect(texts.contains("now") && texts.contains("06") && texts.contains("24"))
        // Row 1's daemon did not say when the stream began: its whole elapsed day is unexplained
        // underneath (00–18 is 3/4 of the plot). Row 2 is "not yet" until 11, unexplained after.
        let chart = Self.chart()
        let unexplained = Self.rects(elements, "unexplained"), notYet = Self.rects(elements, "not-yet")
        #expect(
            unexplained.contains {
                $0.number("y") == chart.barTop(1) && $0.number("x") == chart.plotLeft
                    && abs($0.number("width") - DayChart.plotWidth * 0.75) < 0.01
            })
        #expect(notYet.count == 1 && abs(notYet[0].number("width") - DayChart.plotWidth * 11 / 24) < 0.01)
        #expect(notYet[0].number("y") == chart.barTop(2) && notYet[0].attributes["fill"] == DayChart.notYetColour)
        #expect(DayChart.escape("a\u{1}b\"") == "a\u{FFFD}b&quot;")
    }

    @Test func rendersToPixelsWithEachGapInItsRowAndPlaceAndNoNameCut() throws {
        let chart = Self.chart()
        let image = try SVGRendering.render(chart.svg(), name: "day-with-gaps")
        #expect(image.width == Int(chart.width) && image.height == Int(chart.height))
        let hour = { (n: Double) in Int(chart.x(Self.h(n)).rounded()) }
        let row = { (index: Int) in Int(chart.barTop(index) + DayChart.barHeight / 2) }
        // Between hour lines. Row 0: recorded at 03:30, the systemInitiated gap at 07:30, the
        // deletion at 09:15, unexplained at 15:30, blank after now.
        #expect(image.hex(hour(3.5), row(0)) == DayChart.recordedColour)
        #expect(image.hex(hour(7.5), row(0)) == DayChart.colour(.systemInitiated))
        #expect(image.hex(hour(9.25), row(0)) == DayChart.colour(.userInitiated))
        #expect(image.hex(hour(15.5), row(0)) == DayChart.unexplainedColour)
        #expect(image.hex(hour(21.5), row(0)) == "#ffffff")
        // Row 1: not wanted at 06:30, recorded at 12:30, unexplained at 15:30.
        #expect(image.hex(hour(6.5), row(1)) == DayChart.colour(.noInterestedClients))
        #expect(image.hex(hour(12.5), row(1)) == DayChart.recordedColour)
        #expect(image.hex(hour(15.5), row(1)) == DayChart.unexplainedColour)
        #expect(image.hex(hour(7.5), row(1)) != DayChart.colour(.systemInitiated))
        // Row 2: not yet at 05:30, recorded at 14:30.
        #expect(image.hex(hour(5.5), row(2)) == DayChart.notYetColour)
        #expect(image.hex(hour(14.5), row(2)) == DayChart.recordedColour)
        try expectNoLabelCut(chart, image)
    }

    /// Each name and caption is drawn whole: its ink starts inside the picture, right of the
    /// margin, and is no wider than `TextWidth` promised.
    func expectNoLabelCut(_ chart: DayChart, _ image: SVGRendering.PAMImage) throws {
        for (index, row) in chart.rows.enumerated() {
            let top = Int(chart.barTop(index))
            let band = top..<(top + Int(DayChart.barHeight) + 2)
            let ink = try #require(image.ink(xs: 0..<Int(chart.plotLeft - 2), ys: band, background: Self.background))
            #expect(ink.lowerBound >= Int(DayChart.margin), "\(row.name) starts at x \(ink.lowerBound)")
            let promised = max(
                TextWidth.bound(row.name, size: 13, bold: true), TextWidth.bound(chart.caption(row), size: 10))
            #expect(Double(ink.upperBound - ink.lowerBound) <= promised, "\(row.name): \(ink) against \(promised)")
        }
    }

    @Test func aThirtySecondRecordingIsSeenAndTheTimeBeforeItIsNotYetNotUnexplained() throws {
        let chart = Self.thirtySeconds()
        let h = Self.h
        let elements = try SVGRendering.elements(chart.svg())
        let recorded = try #require(Self.rects(elements, "recorded").first)
        #expect(recorded.number("width") >= DayChart.minimumRecordedWidth)
        let notYet = try #require(Self.rects(elements, "not-yet").first)
        #expect(notYet.number("x") == chart.plotLeft && abs(notYet.number("width") - DayChart.plotWidth * 10 / 24) < 0.01)
        // What is unexplained is the 10 s between the stream's start and now without data.
        for rect in Self.rects(elements, "unexplained") { #expect(rect.number("width") < 1) }
        #expect(elements.contains { $0.name == "text" && $0.text == "30 s recorded (75.0 %)" })
        var instants = chart
        instants.rows[0].recorded = [h(10)...h(10), h(11)...h(11)]
        #expect(instants.caption(instants.rows[0]) == "2 moments recorded", "a state sampled on change")
        let image = try SVGRendering.render(chart.svg(), name: "thirty-seconds")
        let y = Int(chart.barTop(0) + DayChart.barHeight / 2)
        #expect(image.hex(Int(chart.x(Self.h(5))), y) == DayChart.notYetColour)
        #expect(image.hex(Int(recorded.number("x") + 2), y) == DayChart.recordedColour)
        try expectNoLabelCut(chart, image)
    }

    @Test func aWeekShowsEachDayAndShortRecordingsAndTheLegendFits() throws {
        let chart = Self.week()
        let elements = try SVGRendering.elements(chart.svg())
        let texts = elements.filter { $0.name == "text" }.map(\.text)
        for day in 1...7 { #expect(texts.contains("Day \(day)")) }
        let lines = elements.filter { $0.name == "line" }
        #expect(lines.count == 21 + 8 + 1, "a line every 6 hours, each midnight and now")
        #expect(lines.filter { $0.attributes["stroke"] == "#9e9e9e" }.count == 8, "midnights stand out")
        let recorded = Self.rects(elements, "recorded")
        #expect(recorded.count == 5 && recorded.allSatisfy { $0.number("width") >= DayChart.minimumRecordedWidth })
        // The heart rate strap is not yet recording until day 5 10:00, the accelerometer until day 2.
        let notYet = Self.rects(elements, "not-yet")
        #expect(notYet.count == 2 && abs(notYet[1].number("width") - DayChart.plotWidth * (4 * 24 + 10) / 168) < 0.01)
        let legend = chart.legend()
        #expect(legend.count == 8)
        for entry in legend {
            #expect(entry.x >= DayChart.margin && entry.x + entry.width <= chart.width - DayChart.margin, "\(entry.text)")
        }
        for (a, b) in zip(legend, legend.dropFirst()) where a.line == b.line {
            #expect(a.x + a.width < b.x, "\(a.text) overlaps \(b.text)")
        }
        let image = try SVGRendering.render(chart.svg(), name: "week")
        #expect(image.height == Int(chart.height))
        let y = { (index: Int) in Int(chart.barTop(index) + DayChart.barHeight / 2) }
        let at = { (day: Double, hours: Double) in Int(chart.x(Self.h((day - 1) * 24 + hours)).rounded()) }
        #expect(image.hex(at(1, 15), y(0)) == DayChart.notYetColour)
        #expect(image.hex(at(3, 3), y(0)) == DayChart.recordedColour)
        #expect(image.hex(at(4, 2), y(0)) == DayChart.colour(.systemInitiated))
        #expect(image.hex(at(5, 12), y(1)) == DayChart.colour(.noInterestedClients))
        #expect(image.hex(at(7, 18), y(1)) == "#f5f5f5", "after now: the shaded odd row, no bar")
        try expectNoLabelCut(chart, image)
    }

    /// The participant turns the accelerometer off at 09:00 (its only stake released) and on
    /// again at 14:00; recorded 08:00–09:00 and from 14:00. While it is off (now 12:00) the daemon
    /// says `unwantedSince` 09:00; once it is on again (now 18:00) the pipeline has written the
    /// 09:00–14:00 `noInterestedClients` record. Neither picture calls that time unexplained.
    static func consentOffThenOn(now: Double) -> DayChart {
        let h = Self.h
        let off = now < 14
        return DayChart(
            title: "Recording on Tuesday 1 December 2026", subtitle: "local time", start: start, end: h(24), now: h(now),
            ticks: (0...24).map { (h(Double($0)), String(format: "%02d", $0)) },
            rows: [
                .init(
                    name: "accelerometer", recorded: off ? [h(8)...h(9)] : [h(8)...h(9), h(14)...h(now)],
                    gaps: off ? [] : [(h(9)...h(14), .noInterestedClients)], notBefore: h(8),
                    unwantedSince: off ? h(9) : nil)
            ])
    }

    @Test func timeAfterConsentIsTurnedOffIsNotWantedNotUnexplained() throws {
        let whileOff = Self.consentOffThenOn(now: 12)
        let elements = try SVGRendering.elements(whileOff.svg())
        let notWanted = try #require(Self.rects(elements, "not-wanted").first)
        #expect(notWanted.attributes["fill"] == DayChart.colour(.noInterestedClients))
        #expect(
            notWanted.number("x") == whileOff.x(Self.h(9)) && abs(notWanted.number("width") - DayChart.plotWidth * 3 / 24) < 0.01)
        let imageOff = try SVGRendering.render(whileOff.svg(), name: "consent-off")
        let y = Int(whileOff.barTop(0) + DayChart.barHeight / 2)
        let hour = { (chart: DayChart, n: Double) in Int(chart.x(Self.h(n)).rounded()) }
        #expect(imageOff.hex(hour(whileOff, 4.5), y) == DayChart.notYetColour)
        #expect(imageOff.hex(hour(whileOff, 8.5), y) == DayChart.recordedColour)
        for at in [9.5, 10.5, 11.5] {
            #expect(imageOff.hex(hour(whileOff, at), y) == DayChart.colour(.noInterestedClients), "\(at)")
        }
        #expect(imageOff.hex(hour(whileOff, 13.5), y) == "#ffffff", "after now")
        // What is left unexplained underneath is hidden: no pixel of the row shows it.
        for x in hour(whileOff, 8)..<hour(whileOff, 12) {
            #expect(imageOff.hex(x, y) != DayChart.unexplainedColour, "x \(x)")
        }

        let onAgain = Self.consentOffThenOn(now: 18)
        #expect(Self.rects(try SVGRendering.elements(onAgain.svg()), "not-wanted").isEmpty)
        let imageOn = try SVGRendering.render(onAgain.svg(), name: "consent-off-then-on")
        for at in [9.5, 11.5, 13.5] {
            #expect(imageOn.hex(hour(onAgain, at), y) == DayChart.colour(.noInterestedClients), "\(at)")
        }
        #expect(imageOn.hex(hour(onAgain, 15.5), y) == DayChart.recordedColour)
        for x in hour(onAgain, 8)..<hour(onAgain, 18) {
            #expect(imageOn.hex(x, y) != DayChart.unexplainedColour, "x \(x)")
        }
        try expectNoLabelCut(onAgain, imageOn)
    }
}
