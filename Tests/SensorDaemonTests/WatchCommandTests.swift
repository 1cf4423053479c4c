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

    /// A daemon recording the 200 Hz accelerometer, which loses every 10th tick (50 ms, ten
    /// samples and more when the timer is late) and reports it as its own gap, next to a 50 Hz
    /// ambient light sensor without gaps (sample i: lux = (i mod 1000) × 0.5).
    func gappyDaemonWithTwoSensors() throws -> DaemonHarness {
        let harness = try DaemonHarness(sources: [
            GeneratedSource(sensor: .accelerometer, rate: 200, perTick: 10, gapEvery: 10),
            GeneratedSource(sensor: .ambientLightSensor, rate: 50, perTick: 5),
        ])
        try harness.grant([.accelerometer, .ambientLightSensor], to: DaemonHarness.studyApp)
        let app = try harness.connect(app: DaemonHarness.studyApp)
        defer { app.close() }
        for sensor in [SRSensor.accelerometer, .ambientLightSensor] {
            let started = app.call(.startRecording) { $0.sensor = sensor.rawValue }
            #expect(started.error == nil, "\(sensor)")
        }
        return harness
    }

    @Test(.timeLimit(.minutes(3)))
    func gapsShowAsTheyHappenAndSeveralSensorsAtOnce() throws {
        let harness = try gappyDaemonWithTwoSensors()
        defer { harness.stop() }
        let (status, out, err) = try Ctl().ctl(
            harness, ["watch", "accelerometer", "ambientLightSensor", "--jsonl", "--seconds", "2.5"])
        #expect(status == 0, "\(err)")
        let lines = out.split(separator: "\n").map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(lines.allSatisfy { $0 != nil }, "every line is a JSON object: \(out.prefix(500))")
        let objects = lines.compactMap { $0 }
        func time(_ object: [String: Any], _ key: String) -> Int64? { (object[key] as? NSNumber)?.int64Value }
        func samples(of sensor: String) -> [(line: Int, time: Int64, object: [String: Any])] {
            objects.enumerated().compactMap { line, object in
                guard object["event"] == nil, object["sensor"] as? String == sensor, let t = time(object, "sensorTime") else {
                    return nil
                }
                return (line, t, object)
            }
        }

        // The light sensor: every sample once, 20 ms apart, lux counting up by half a lux.
        let light = samples(of: "ambientLightSensor")
        #expect(light.count >= 75, "2.5 s at 50 Hz, less the start: \(light.count)")
        for (a, b) in zip(light, light.dropFirst()) {
            #expect(b.time - a.time == 20_000_000, "every light sample once, 20 ms apart")
            let (luxA, luxB) = ((a.object["lux"] as? NSNumber)?.doubleValue, (b.object["lux"] as? NSNumber)?.doubleValue)
            #expect(luxB == ((luxA ?? .nan) + 0.5).truncatingRemainder(dividingBy: 500), "lux of \(b.time) after \(luxA ?? .nan)")
        }

        // The accelerometer: 5 ms apart except across a gap, which the gap event spans exactly
        // (from its last sample before to its first after) and which comes before that first sample.
        let motion = samples(of: "accelerometer")
        #expect(motion.count >= 250, "2.5 s at 200 Hz, less the start and the gaps: \(motion.count)")
        let gaps = objects.enumerated().filter { $0.element["event"] as? String == "gap" }
        var spanned = 0
        for (a, b) in zip(motion, motion.dropFirst()) {
            let steps = (b.time - a.time) / 5_000_000
            #expect(b.time > a.time && (b.time - a.time) % 5_000_000 == 0, "in order on the 5 ms grid: \(a.time) → \(b.time)")
            let (xA, xB) = ((a.object["x"] as? NSNumber)?.doubleValue ?? .nan, (b.object["x"] as? NSNumber)?.doubleValue ?? .nan)
            #expect(
                Int((xB * 1000).rounded()) == (Int((xA * 1000).rounded()) + Int(steps)) % 1000,
                "x counts every sample, lost ones too")
            #expect((b.object["z"] as? NSNumber)?.doubleValue == 1.0 && (b.object["y"] as? NSNumber)?.doubleValue == -xB)
            guard steps > 1 else { continue }
            spanned += 1
            let gap = gaps.first { time($0.element, "from") == a.time && time($0.element, "to") == b.time }
            #expect(gap != nil, "a hole from \(a.time) to \(b.time) without its gap event")
            #expect((gap?.offset ?? .max) < b.line, "the gap shows before the samples after it")
            #expect(gap?.element["sensor"] as? String == "accelerometer")
            #expect((gap?.element["reason"] as? NSNumber)?.intValue == SRDeletionReason.systemInitiated.rawValue)
        }
        #expect(spanned >= 3, "a gap every 0.5 s for 2.5 s: \(spanned) within the samples received")
        #expect(!gaps.contains { $0.element["sensor"] as? String == "ambientLightSensor" }, "the light sensor loses nothing")
        let ends = objects.filter { $0["event"] as? String == "ended" }
        #expect(Set(ends.compactMap { $0["sensor"] as? String }) == ["accelerometer", "ambientLightSensor"] && ends.count == 2)

        // The terminal view: both sensors, the accelerometer's latest gaps (at most three), none for light.
        let (viewStatus, view, viewErr) = try Ctl().ctl(
            harness, ["watch", "accelerometer", "ambientLightSensor", "--seconds", "2"])
        #expect(viewStatus == 0, "\(viewErr)")
        let lastView = (view.components(separatedBy: "\n\n").filter { !$0.isEmpty }.last ?? "").split(separator: "\n")
        let lightAt = try #require(lastView.firstIndex { $0.hasPrefix("ambientLightSensor: ") }, "\(view)")
        let (motionLines, lightLines) = (lastView[..<lightAt], lastView[lightAt...])
        #expect(
            motionLines.first?.hasPrefix("accelerometer: ") == true && motionLines.contains { $0.contains("1.0000 g") }, "\(view)"
        )
        #expect(lightLines.contains { $0.hasPrefix("  lux") && $0.contains(" lx") }, "\(view)")
        let gapLines = motionLines.filter { $0.hasPrefix("  gap: ") }
        #expect((1...3).contains(gapLines.count), "\(view)")
        for line in gapLines {
            let seconds = Double(line.dropFirst("  gap: ".count).prefix { $0 != " " }) ?? 0
            #expect(seconds >= 0.010 && line.hasSuffix(" s lost (systemInitiated)"), "\(line)")
        }
        #expect(!lightLines.contains { $0.contains("gap:") }, "\(view)")
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
