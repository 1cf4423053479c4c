import Foundation
import SensorKitModel
import SensorSimulation
import Testing

/// sensorkitctl against a running daemon, as a person or a script runs it (here as root).
@Suite(.serialized) struct SensorkitctlTests {
    func ctl(_ harness: DaemonHarness, _ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: DaemonHarness.productsFolder + "/sensorkitctl")
        process.arguments = ["--socket", harness.socket] + arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
    }

    @Test func sensorsSaysWhichCanBeRecordedAndWhyNot() throws {
        let harness = try DaemonHarness(sources: [GeneratedSource()])
        defer { harness.stop() }
        let result = try ctl(harness, ["sensors"])
        #expect(result.status == 0, "\(result.err)")
        let lines = result.out.split(separator: "\n").map(String.init)
        let heart = lines.first { $0.hasPrefix("heartRate ") } ?? ""
        #expect(
            heart.contains("no: no driver for heartRate: BLE is off (no [ble] section in the configuration)"), "\(result.out)")
        let accelerometer = lines.first { $0.hasPrefix("accelerometer ") } ?? ""
        #expect(accelerometer.contains(" yes "), "\(result.out)")
        let status = try ctl(harness, ["status"])
        #expect(status.out.contains("cannot record heartRate: no driver for heartRate: BLE is off"), "\(status.out)")
    }

    @Test func statusShowsEachStreamsHealthAndReportDrawsTheDay() throws {
        let time = ManualTime()
        let source = GeneratedSource(rate: 100, clock: time, scheduler: time)
        let harness = try DaemonHarness(sources: [source], clock: time, scheduler: time)
        defer { harness.stop() }
        try harness.grant([.accelerometer], to: DaemonHarness.studyApp)
        let connection = try harness.connect(app: DaemonHarness.studyApp)
        #expect(connection.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }.error == nil)
        #expect(DaemonHarness.eventually { source.isRecording })
        try time.advance(by: .milliseconds(1500))
        #expect(DaemonHarness.eventually { harness.samplesVisible(to: DaemonHarness.studyApp) == 151 })
        let status = try ctl(harness, ["status"])
        #expect(status.status == 0, "\(status.err)")
        let lines = status.out.split(separator: "\n").map(String.init)
        #expect(
            lines.contains { $0.hasPrefix("STREAM") && $0.contains("LAST MINUTE") && $0.contains("GAPS IN THE LAST DAY") },
            "\(status.out)")
        let row = lines.first { $0.hasPrefix("accelerometer ") } ?? ""
        #expect(row.contains(" ok ") && row.contains("/100.0 Hz") && row.hasSuffix("none"), "\(status.out)")
        // A stream 1.5 s old is judged over the time it has recorded, not over a whole minute.
        let minuteRate = row.split(separator: " ").first { $0.hasSuffix("/100.0") }.flatMap { Double($0.dropLast(6)) } ?? 0
        #expect(minuteRate > 85 && minuteRate < 115, "\(status.out)")
        #expect(lines.contains { $0.hasPrefix("store: ") && $0.contains("free on its file system") }, "\(status.out)")
        let json = try ctl(harness, ["--json", "status"])
        let document = try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any]
        #expect((document?["daemon"] as? [String: Any])?["recording"] as? String == SRSensor.accelerometer.rawValue)
        #expect(((document?["health"] as? [String: Any])?["streams"] as? [Any])?.count == 1, "\(json.out)")

        let today = DateFormatter()
        today.dateFormat = "yyyy-MM-dd"
        today.locale = Locale(identifier: "en_US_POSIX")
        let svgPath = harness.folder + "/day.svg"
        let report = try ctl(harness, ["report", "--day", today.string(from: Date()), "--svg", svgPath])
        #expect(report.status == 0, "\(report.err)")
        let svg = try String(contentsOfFile: svgPath, encoding: .utf8)
        #expect(
            svg.contains(">accelerometer</text>") && svg.contains("fill=\"\(DayChart.recordedColour)\""), "\(svg.prefix(2000))")
        // The daemon says when the stream came to be and when an app first wanted it, so the day
        // before this recording is "not yet recording", not unexplained; the 1.5 s recorded are seen.
        let stream = try #require(
            ((document?["health"] as? [String: Any])?["streams"] as? [[String: Any]])?.first, "\(json.out)")
        let created = try #require(stream["created"] as? Int64, "\(stream)")
        let wanted = try #require(stream["wantedSince"] as? Int64, "\(stream)")
        #expect(created <= wanted, "registered when the source attached, wanted at startRecording")
        let rects = Self.rects(svg)
        #expect(rects["recorded"]?.allSatisfy { $0 >= DayChart.minimumRecordedWidth } == true, "\(rects)")
        #expect((rects["not-yet"]?.first ?? 0) > 0, "\(rects)")
        #expect(rects["unexplained"]?.allSatisfy { $0 < 2 } ?? true, "at most the moments before the first sample: \(rects)")
        let week = try ctl(harness, ["report", "--week", today.string(from: Date()), "--svg", svgPath])
        #expect(week.status == 0 && week.out.contains("in the 7 days to"), "\(week.err)")
        let weekSVG = try String(contentsOfFile: svgPath, encoding: .utf8)
        #expect(weekSVG.contains(">accelerometer</text>") && weekSVG.contains(">Recording from "), "\(weekSVG.prefix(2000))")
        #expect(Self.rects(weekSVG)["recorded"]?.allSatisfy { $0 >= DayChart.minimumRecordedWidth } == true)
        #expect(try ctl(harness, ["report", "--day", "2026-02-30", "--svg", svgPath]).status == 2)
        #expect(try ctl(harness, ["report", "--svg", svgPath]).status == 2)

        // Consent turned off: no app wants the accelerometer, and the minute since reads "no app
        // wanted it" (the daemon's unwantedSince), not unexplained, before any record says so.
        try harness.grant([.accelerometer], to: DaemonHarness.studyApp, granted: false)
        #expect(DaemonHarness.eventually { !source.isRecording })
        try time.advance(by: .seconds(60))
        let off = try ctl(harness, ["report", "--day", today.string(from: Date()), "--svg", svgPath])
        #expect(off.status == 0, "\(off.err)")
        let offSVG = try String(contentsOfFile: svgPath, encoding: .utf8)
        let notWanted = Self.rects(offSVG)["not-wanted"] ?? []
        #expect(notWanted.count == 1 && notWanted[0] > 0.7 && notWanted[0] < 0.9, "a minute of 1152 px a day: \(notWanted)")
        #expect(offSVG.contains("class=\"not-wanted\" ") && offSVG.contains("fill=\"\(DayChart.colour(.noInterestedClients))\""))
    }

    /// The widths of the report's rectangles by `class` (recorded, not-yet, unexplained, gap,
    /// not-wanted, legend).
    static func rects(_ svg: String) -> [String: [Double]] {
        var widths: [String: [Double]] = [:]
        for line in svg.split(separator: "\n") where line.hasPrefix("<rect class=\"") {
            let fields = line.split(separator: "\"")
            guard let index = fields.firstIndex(where: { $0.hasSuffix(" width=") }), index + 1 < fields.count,
                let width = Double(fields[index + 1])
            else { continue }
            widths[String(fields[1]), default: []].append(width)
        }
        return widths
    }

    @Test func consentStakesFetchAndJSON() throws {
        let harness = try DaemonHarness(sources: [GeneratedSource()])
        defer { harness.stop() }
        let app = DaemonHarness.studyApp

        // Without a terminal the sheet is shown and the person is told how to decide.
        let sheet = try ctl(harness, ["consent", app])
        #expect(sheet.status == 2)
        #expect(sheet.out.contains("Study purpose: Movement and light during the day"))
        #expect(sheet.out.contains("accelerometer (Required): How you move"))
        #expect(sheet.err.contains("--grant/--deny"))

        let declined = try ctl(harness, ["consent", app, "--deny", "accelerometer", "--grant", "ambientLightSensor"])
        #expect(declined.status == 0)
        #expect(declined.out.contains("warning: declined sensors the study marks Required"))
        let granted = try ctl(harness, ["--json", "consent", app, "--grant", "accelerometer"])
        #expect(granted.status == 0)

        let connection = try harness.connect(app: app)
        #expect(connection.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }.error == nil)
        #expect(DaemonHarness.eventually(10) { harness.samplesVisible(to: app) > 50 })

        let stakes = try ctl(harness, ["--json", "stakes"])
        let rows = try JSONDecoder().decode([WireStake].self, from: Data(stakes.out.utf8))
        #expect(rows.map(\.app) == [app] && rows.first?.active == true)

        let status = try ctl(harness, ["status"])
        #expect(status.out.contains("recording: accelerometer"))

        let csv = try ctl(harness, ["fetch", "--app", app, "--sensor", "accelerometer", "--from", "now-1h", "--to", "now"])
        #expect(csv.status == 0, "\(csv.err)")
        let lines = csv.out.split(separator: "\n")
        #expect(lines.first == "sensorTime,writeTime,x,y,z")
        #expect(lines.count > 50)
        #expect(lines.dropFirst().allSatisfy { $0.hasSuffix(",1.0") }, "z is 1 g")
        #expect(csv.err.contains("fetched \(lines.count - 1) samples of accelerometer"))

        let jsonl = try ctl(
            harness, ["fetch", "--app", app, "--sensor", "accelerometer", "--from", "now-1h", "--to", "now", "--format", "jsonl"])
        let first = try JSONSerialization.jsonObject(with: Data(jsonl.out.split(separator: "\n").first!.utf8)) as? [String: Any]
        #expect(first?["z"] as? Double == 1.0)

        // Unknown sensors, bad times and options are usage errors (exit 2) with a reason.
        let bad = try ctl(harness, ["fetch", "--app", app, "--sensor", "teleporter", "--from", "0", "--to", "now"])
        #expect(bad.status == 2 && bad.err.contains("unknown sensor 'teleporter'"))
        // Durations past Int64 nanoseconds are usage errors, not a trap (`DurationText`).
        for from in ["now-1e300d", "now+9223372036854775807ns", "now-106752d"] {
            let huge = try ctl(harness, ["fetch", "--app", app, "--sensor", "accelerometer", "--from", from, "--to", "now"])
            #expect(huge.status == 2 && huge.err.contains("times are SR seconds"), "\(from): \(huge.status) \(huge.err)")
        }
        let badOption = try ctl(harness, ["stakes", "--frobnicate"])
        #expect(badOption.status == 2 && badOption.err.contains("unknown option --frobnicate"))
    }

    @Test func explainsWhyAFetchInsideTheHoldIsEmpty() throws {
        let harness = try DaemonHarness(config: "[store]\nhold = 24h\n", sources: [GeneratedSource()])
        defer { harness.stop() }
        _ = try ctl(harness, ["consent", DaemonHarness.studyApp, "--grant", "accelerometer"])
        let connection = try harness.connect(app: DaemonHarness.studyApp)
        #expect(connection.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }.error == nil)
        let fetch = try ctl(
            harness, ["fetch", "--app", DaemonHarness.studyApp, "--sensor", "accelerometer", "--from", "now-2h", "--to", "now"])
        #expect(fetch.status == 0)
        #expect(fetch.err.contains("fetched 0 samples"))
        #expect(fetch.err.contains("why: the range ends 24 h inside the 24 h hold"), "\(fetch.err)")
    }

    @Test func unreachableDaemonIsAClearError() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: DaemonHarness.productsFolder + "/sensorkitctl")
        process.arguments = ["--socket", "/tmp/no-such-sensorkitd.sock", "status"]
        let err = Pipe()
        process.standardError = err
        try process.run()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 1)
        #expect(text.contains("cannot reach sensorkitd at /tmp/no-such-sensorkitd.sock"))
    }
}
