import Foundation
import SensorKitModel
import Testing

/// `DayChart`: the day picture of `sensorkitctl report`, as text and as pixels (rendered with
/// Debian's rsvg-convert and read back with netpbm's pngtopam, both from scripts/install-deps.sh).
@Suite struct DayChartTests {
    static let hour: Int64 = 3_600_000_000_000
    static let start: Int64 = 1_000 * hour

    /// Accelerometer recorded 00–06 and 08–24 with a systemInitiated gap 06–08; a wearable's
    /// heart rate recorded 12–13 only, not wanted 00–12, with nothing explaining 13–18; now at 18.
    static func chart() -> DayChart {
        let h = { (n: Double) in start + Int64(n * Double(hour)) }
        return DayChart(
            title: "Recording on Tuesday 1 December 2026", subtitle: "local time", start: start, end: h(24), now: h(18),
            ticks: (0...24).map { (h(Double($0)), String(format: "%02d", $0)) },
            rows: [
                .init(name: "accelerometer", recorded: [h(0)...h(6), h(8)...h(18)], gaps: [(h(6)...h(8), .systemInitiated)]),
                .init(name: "heartRate on ble:<AA&BB>", recorded: [h(12)...h(13)], gaps: [(h(0)...h(12), .noInterestedClients)]),
            ])
    }

    @Test func geometryMapsTheDayOntoThePlot() {
        let chart = Self.chart()
        #expect(chart.x(Self.start) == DayChart.plotLeft)
        #expect(chart.x(Self.start + 24 * Self.hour) == DayChart.plotLeft + DayChart.plotWidth)
        #expect(chart.x(Self.start + 12 * Self.hour) == DayChart.plotLeft + DayChart.plotWidth / 2)
        #expect(chart.x(Self.start - Self.hour) == DayChart.plotLeft, "clamped")
        #expect(chart.barTop(1) - chart.barTop(0) == DayChart.rowHeight)
        #expect(
            abs(chart.coveredFraction([Self.start...(Self.start + 9 * Self.hour)], through: Self.start + 18 * Self.hour) - 0.5)
                < 1e-12)
    }

    @Test func textNamesRowsEscapesThemAndDrawsEachReasonInItsColour() {
        let svg = Self.chart().svg()
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
        #expect(svg.hasSuffix("</svg>\n"))
        #expect(svg.contains(">accelerometer</text>"))
        #expect(svg.contains(">heartRate on ble:&lt;AA&amp;BB&gt;</text>"))
        #expect(!svg.contains("<AA&BB>"))
        #expect(svg.contains(">88.9 % recorded</text>"), "16 of 18 elapsed hours")
        #expect(svg.contains(">5.6 % recorded</text>"), "1 of 18")
        for reason in SRDeletionReason.allCases {
            #expect(svg.contains(DayChart.legendText(reason)))
        }
        #expect(svg.contains("fill=\"\(DayChart.colour(.systemInitiated))\""))
        #expect(svg.contains(">now</text>") && svg.contains(">06</text>") && svg.contains(">24</text>"))
        // The unexplained background covers the elapsed day only (00–18 is 3/4 of the plot).
        #expect(
            svg.contains(
                "<rect x=\"\(Int(DayChart.plotLeft))\" y=\"\(Int(Self.chart().barTop(0)))\" width=\"\(Int(DayChart.plotWidth * 0.75))\" height=\"22\" fill=\"\(DayChart.unexplainedColour)\"/>"
            ))
        #expect(DayChart.escape("a\u{1}b\"") == "a\u{FFFD}b&quot;")
    }

    @Test func rendersToPixelsWithEachGapInItsRowAndPlace() throws {
        let chart = Self.chart()
        let folder = NSTemporaryDirectory() + "daychart-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try chart.svg().write(toFile: folder + "/day.svg", atomically: true, encoding: .utf8)
        try run("/usr/bin/rsvg-convert", ["-o", folder + "/day.png", folder + "/day.svg"])
        let image = try PAMImage(try run("/usr/bin/pngtopam", ["-alphapam", folder + "/day.png"]))
        #expect(image.width == Int(DayChart.width) && image.height == Int(chart.height))
        let hour = { (n: Double) in Int(chart.x(Self.start + Int64(n * Double(Self.hour))).rounded()) }
        let row = { (index: Int) in Int(chart.barTop(index) + DayChart.barHeight / 2) }
        // Between hour lines. Row 0: recorded at 03:30, the systemInitiated gap at 07:30, blank after now.
        #expect(image.hex(hour(3.5), row(0)) == DayChart.recordedColour)
        #expect(image.hex(hour(7.5), row(0)) == DayChart.colour(.systemInitiated))
        #expect(image.hex(hour(21.5), row(0)) == "#ffffff")
        // Row 1: not wanted at 06:30, recorded at 12:30, unexplained at 15:30.
        #expect(image.hex(hour(6.5), row(1)) == DayChart.colour(.noInterestedClients))
        #expect(image.hex(hour(12.5), row(1)) == DayChart.recordedColour)
        #expect(image.hex(hour(15.5), row(1)) == DayChart.unexplainedColour)
        // The gap's colour is in row 0 only where the gap is.
        #expect(image.hex(hour(7.5), row(1)) != DayChart.colour(.systemInitiated))
    }

    @discardableResult
    func run(_ tool: String, _ arguments: [String]) throws -> Data {
        guard FileManager.default.isExecutableFile(atPath: tool) else {
            throw ToolMissing(description: "\(tool) is missing: run scripts/install-deps.sh")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ToolMissing(description: "\(tool) exited \(process.terminationStatus)")
        }
        return data
    }

    struct ToolMissing: Error, CustomStringConvertible { var description: String }

    /// A netpbm PAM image (P7), 8-bit samples.
    struct PAMImage {
        var width = 0, height = 0, depth = 0
        var pixels: [UInt8] = []

        init(_ data: Data) throws {
            let bytes = [UInt8](data)
            guard let end = bytes.firstRange(of: Array("ENDHDR\n".utf8)) else {
                throw ToolMissing(description: "not a PAM image")
            }
            for line in String(decoding: bytes[..<end.lowerBound], as: UTF8.self).split(separator: "\n") {
                let words = line.split(separator: " ")
                guard words.count == 2, let value = Int(words[1]) else { continue }
                switch words[0] {
                case "WIDTH": width = value
                case "HEIGHT": height = value
                case "DEPTH": depth = value
                default: break
                }
            }
            pixels = Array(bytes[end.upperBound...])
            guard depth >= 3, pixels.count >= width * height * depth else { throw ToolMissing(description: "short PAM image") }
        }

        func hex(_ x: Int, _ y: Int) -> String {
            let offset = (y * width + x) * depth
            return "#" + pixels[offset..<offset + 3].map { String(format: "%02x", $0) }.joined()
        }
    }
}
