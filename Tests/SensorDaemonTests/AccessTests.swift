import Foundation
import Glibc
import SensorDaemon
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import Testing

/// A stranger learns nothing (docs/protocol.md §1.2): a uid that administers nothing gets one
/// answer for an app that is not installed and one that does not bind it, and nothing about
/// recording, devices or the daemon's load.
@Suite(.serialized) struct AccessTests {
    static let study = DaemonHarness.studyApp
    static let accelerometer = SRSensor.accelerometer.rawValue

    /// A daemon recording the accelerometer fast (50 kHz generated), the study app granted and
    /// recording, with more than two batches stored; `config` is the daemon's configuration.
    static func recording(config: String = "profile = lab\n", grant: Bool = true) throws -> DaemonHarness {
        let harness = try DaemonHarness(config: config, sources: [GeneratedSource(rate: 50_000, perTick: 5_000)])
        if grant { try harness.grant([.accelerometer], to: study) }
        let app = try harness.connect(app: study)
        #expect(app.call(.startRecording) { $0.sensor = accelerometer }.error == nil)
        app.close()
        #expect(DaemonHarness.eventually(20, every: 0.1) { harness.samplesVisible(to: study) >= 3 * WireLimits.samplesPerBatch })
        return harness
    }

    /// `sensorkitctl` as nobody: bound to com.example.other, a Consenter of nothing, not root and
    /// not in the daemon's group.
    static func asNobody(_ harness: DaemonHarness, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let ctl = harness.folder + "/sensorkitctl"
        if !FileManager.default.fileExists(atPath: ctl) {
            try FileManager.default.copyItem(atPath: DaemonHarness.productsFolder + "/sensorkitctl", toPath: ctl)
        }
        return try DaemonHarness.asNobody(["/usr/bin/timeout", "30", ctl, "--socket", harness.socket] + arguments)
    }

    @Test(.timeLimit(.minutes(1))) func aStrangerLearnsNothing() throws {
        let harness = try Self.recording()
        defer { harness.stop() }
        // The same answer for an app that is not installed and one installed that does not bind it.
        let absent = try Self.asNobody(harness, ["fetch", "--app", "com.example.absent", "--sensor", "accelerometer", "--from", "0", "--to", "now"])
        let unbound = try Self.asNobody(harness, ["fetch", "--app", Self.study, "--sensor", "accelerometer", "--from", "0", "--to", "now"])
        #expect(absent.status == unbound.status && absent.status != 0)
        #expect(absent.output.replacingOccurrences(of: "com.example.absent", with: "APP")
                == unbound.output.replacingOccurrences(of: Self.study, with: "APP"), "\(absent.output)\n\(unbound.output)")
        // Root, an administrator, hears which it is.
        do {
            _ = try harness.connect(app: "com.example.absent")
            Issue.record("an absent app was accepted")
        } catch {
            #expect("\(error)".contains("no app 'com.example.absent' is installed in apps.d"), "\(error)")
        }

        // Nothing about recording, devices or the daemon's load.
        let status = try Self.asNobody(harness, ["--json", "status"])
        #expect(status.status == 0, "\(status.output)")
        let document = try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any]
        let daemon = try #require(document?["daemon"] as? [String: String], "\(status.output)")
        for key in ["recording", "connections", "fetches", "queuedReplyBytes", "maxQueuedRequests"] {
            #expect(daemon[key] == nil, "\(key) shown to a stranger: \(daemon)")
        }
        #expect(daemon["version"] != nil && daemon["now"] != nil, "what any client needs stays")
        let devices = try Self.asNobody(harness, ["devices"])
        #expect(devices.status != 0 && !devices.output.contains("generated"), "\(devices.output)")
        let sensors = try Self.asNobody(harness, ["--json", "sensors"])
        #expect(!sensors.output.contains("\"recording\" : \"yes\"") && sensors.output.contains("shown to administrators only"), "\(sensors.output)")
        // Root sees all of it.
        let admin = try harness.connect(app: nil)
        let info = admin.call(.daemonStatus).info ?? [:]
        #expect(info["recording"] == Self.accelerometer && info["connections"] != nil, "\(info)")
        #expect(admin.call(.devices).sources?.isEmpty == false)
    }
}
