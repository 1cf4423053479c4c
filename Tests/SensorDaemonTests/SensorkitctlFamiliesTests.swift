import Foundation
import SensorKitModel
import SensorSimulation
import Testing

/// `sensorkitctl fetch` for the families the session agent and ModemManager feed: the rows a study
/// app fetches through the protocol, column for column, in CSV and in JSON Lines.
extension SensorkitctlTests {
    static let sessionAndModemRows = FamilyRow.all.filter {
        [SRSensor.visits, .phoneUsageReport, .messagesUsageReport].contains($0.sensor)
    }

    @Test(.timeLimit(.minutes(3)), arguments: sessionAndModemRows)
    func fetchesPhoneMessagesAndVisitsAsTheProtocolDoes(_ row: FamilyRow) throws {
        let rig = try Rig(row)
        defer { rig.stop() }
        let app = try rig.recording(FamilySemanticsTests.study)
        defer { app.close() }
        let start = try #require(rig.firstStart(app))
        try rig.produce(endingWithAnEvent: true)
        try rig.time.advance(by: .seconds(1))
        let end = rig.harness.now
        var batches: [SampleBatchFrame] = []
        #expect(
            DaemonHarness.eventually {
                batches = rig.fetch(app, from: start - 1, to: end).batches
                return !batches.isEmpty
            }, "\(row): nothing recorded\n\(rig.log)")
        let layout = try #require(batches.first?.layout)
        let rows = batches.flatMap { batch in
            (0..<batch.count).map { i in [Double(batch.sensorTimes[i])] + batch.columns.map { $0[i] } }
        }

        // The sensor by its Swift name, the times as SR seconds (the rig's clock is hand-moved).
        let name = String(row.sensor.rawValue.split(separator: ".").last!)
        let range = ["--from", "\(Double(start - 1) / 1e9)", "--to", "\(Double(end) / 1e9)"]
        let csv = try ctl(rig.harness, ["fetch", "--app", FamilySemanticsTests.study, "--sensor", name] + range)
        #expect(csv.status == 0, "\(row): \(csv.err)")
        let lines = csv.out.split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        try #require(lines.count == rows.count + 1, "\(row): \(csv.out)")
        #expect(lines[0].map(String.init) == ["sensorTime", "writeTime"] + layout.columns)
        for (line, want) in zip(lines.dropFirst(), rows) {
            let got = [Double(line[0]) ?? .nan] + line.dropFirst(2).map { Double($0) ?? .nan }
            #expect(got == want, "\(row): \(line) vs \(want)")
        }
        #expect(csv.err.contains("fetched \(rows.count) samples of"))

        let jsonl = try ctl(
            rig.harness, ["fetch", "--app", FamilySemanticsTests.study, "--sensor", name, "--format", "jsonl"] + range)
        let objects = jsonl.out.split(separator: "\n")
        #expect(objects.count == rows.count)
        for (object, want) in zip(objects, rows) {
            #expect((try? JSONSerialization.jsonObject(with: Data(object.utf8))) != nil, "\(row): \(object)")
            // Values as printed: Foundation's JSON parser does not read every double back exactly.
            let got = layout.columns.map { Self.jsonNumber(object, $0) ?? .nan }
            #expect(got == Array(want.dropFirst()), "\(row): \(object)")
        }
    }

    /// The number printed for `key` in a JSON Lines object, read with Swift's exact parser.
    static func jsonNumber(_ line: Substring, _ key: String) -> Double? {
        guard let range = line.range(of: "\"\(key)\":") else { return nil }
        let text = line[range.upperBound...].prefix { $0 != "," && $0 != "}" }
        return Double(String(text))
    }
}
