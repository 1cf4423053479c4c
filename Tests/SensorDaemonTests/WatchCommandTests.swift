import Foundation
import SensorKitModel
import SensorSimulation
import Testing

/// `sensorkitctl watch` against a daemon recording a generated 200 Hz accelerometer in real time
/// (sample i: x = (i mod 1000)/1000 g, y = −x, z = 1 g), run as a person or a script runs it.
@Suite(.serialized) struct WatchCommandTests {
    typealias Ctl = SensorkitctlTests

    func recordingDaemon() throws -> DaemonHarness {
        let harness = try DaemonHarness(sources: [GeneratedSource(sensor: .accelerometer, rate: 200, perTick: 10)])
        try harness.grant([.accelerometer], to: DaemonHarness.studyApp)
        let app = try harness.connect(app: DaemonHarness.studyApp)
        defer { app.close() }
        let started = app.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }
        #expect(started.error == nil)
        return harness
    }

    @Test(.timeLimit(.minutes(3)))
    func jsonLinesCarryEverySampleOnceInOrderAndTheEnd() throws {
        let harness = try recordingDaemon()
        defer { harness.stop() }
        let (status, out, err) = try Ctl().ctl(harness, ["watch", "accelerometer", "--jsonl", "--seconds", "1.5"])
        #expect(status == 0, "\(err)")
        let lines = out.split(separator: "\n").map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(lines.allSatisfy { $0 != nil }, "every line is a JSON object: \(out.prefix(500))")
        let samples = lines.compactMap { $0 }.filter { $0["event"] == nil }
        #expect(samples.count >= 150, "1.5 s at 200 Hz, less the start: \(samples.count)")
        let times = samples.compactMap { ($0["sensorTime"] as? NSNumber)?.int64Value }
        #expect(times.count == samples.count)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 == 5_000_000 }, "every sample once, 5 ms apart")
        for sample in samples {
            #expect(sample["sensor"] as? String == "accelerometer")
            #expect((sample["z"] as? NSNumber)?.doubleValue == 1.0)
            #expect((sample["y"] as? NSNumber)?.doubleValue == -((sample["x"] as? NSNumber)?.doubleValue ?? .nan))
        }
        let end = try #require(lines.last ?? nil)
        #expect(end["event"] as? String == "ended")
        #expect(((end["error"] as? [String: Any])?["code"] as? NSNumber)?.intValue == 108, "cancelled at --seconds")
    }

    @Test(.timeLimit(.minutes(3)))
    func theViewShowsRateValuesInUnitsAndASparkline() throws {
        let harness = try recordingDaemon()
        defer { harness.stop() }
        let (status, out, err) = try Ctl().ctl(harness, ["watch", "accelerometer", "--seconds", "1.5"])
        #expect(status == 0, "\(err)")
        let lastView = out.components(separatedBy: "\n\n").filter { !$0.isEmpty }.last ?? ""
        #expect(lastView.contains("accelerometer: ") && lastView.contains(" samples/s"), "\(out)")
        #expect(lastView.contains("  z") && lastView.contains("1.0000 g"), "\(lastView)")
        let xLine = lastView.split(separator: "\n").first { $0.hasPrefix("  x") } ?? ""
        #expect(xLine.contains("▁") && xLine.contains("█"), "x climbs: its sparkline spans the blocks: \(xLine)")
    }

    @Test func helpExplainsTheCommand() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let (status, out, _) = try Ctl().ctl(harness, ["watch", "--help"])
        #expect(status == 0)
        #expect(out.contains("Usage: sensorkitctl watch SENSOR") && out.contains("--jsonl") && out.contains("hold of 0"))
        let (bad, _, err) = try Ctl().ctl(harness, ["watch", "no-such-sensor"])
        #expect(bad == 2 && err.contains("unknown sensor"), "\(err)")
    }
}
