import Foundation
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorTestKit
import Testing

@testable import SensorDaemon

/// `health` (docs/protocol.md §3.5) against a real daemon recording a generated 100 Hz
/// accelerometer: rates from the catalog, gaps by reason, the store's budget, and who sees what.
@Suite(.serialized) struct HealthTests {
    @Test func reportsRatesGapsAndStoreUse() throws {
        let time = ManualTime()
        let source = GeneratedSource(rate: 100, clock: time, scheduler: time)
        let harness = try DaemonHarness(
            config: "profile = lab\n[store]\nmax-bytes = 64M\n", sources: [source], clock: time, scheduler: time)
        defer { harness.stop() }
        let app = DaemonHarness.studyApp
        try harness.grant([.accelerometer], to: app)
        let connection = try harness.connect(app: app)
        let started = harness.now
        #expect(connection.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }.error == nil)
        #expect(DaemonHarness.eventually { source.isRecording })
        try time.advance(by: .seconds(1))  // 11 ticks: the first sample, then 10 every 100 ms
        // A pause in recording is a noInterestedClients gap.
        #expect(connection.call(.stopRecording) { $0.sensor = SRSensor.accelerometer.rawValue }.error == nil)
        #expect(DaemonHarness.eventually { !source.isRecording })
        try time.advance(by: .milliseconds(300))
        #expect(connection.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }.error == nil)
        #expect(DaemonHarness.eventually { source.isRecording })
        try time.advance(by: .milliseconds(1500))  // 16 ticks: 151 samples

        // 101 + 151 samples, once the store's commit (on real time, at most 0.5 s away) is in.
        let admin = try harness.connect(app: nil)
        var reply = admin.call(.health)
        #expect(
            DaemonHarness.eventually {
                reply = admin.call(.health)
                return reply.health?.streams.first?.lastMinute == 252
            }, "\(String(describing: reply.health?.streams))")
        let health = try #require(reply.health, "\(String(describing: reply.error))")
        let stream = try #require(health.streams.first { $0.sensor == SRSensor.accelerometer.rawValue })
        #expect(stream.device == "host" && stream.recording && stream.expectedRate == 100)
        #expect(health.now - started == 2_800_000_000, "the daemon's clock is the test's")
        #expect(stream.lastDay == stream.lastMinute)
        #expect(health.now - (stream.lastSample ?? 0) < 10_000_000_000, "the newest sample is fresh")
        #expect(stream.gaps.map(\.reason) == [SRDeletionReason.noInterestedClients.rawValue], "\(stream.gaps)")
        #expect(stream.gaps.first.map { $0.count == 1 && $0.seconds >= 0.29 && $0.seconds <= 0.31 } == true, "\(stream.gaps)")
        #expect(stream.records.map(\.reason) == [SRDeletionReason.noInterestedClients.rawValue])
        // A 0.3 s pause is far narrower than a day's merge gap (21.6 s): one span, ending at the newest sample.
        #expect(stream.spans.count == 1 && stream.spans.first?.last == stream.lastSample, "\(stream.spans)")
        #expect(health.to == health.now && health.from == health.now - 86_400_000_000_000)
        let store = try #require(health.store)
        #expect(store.occupiedBytes > 0 && store.availableBytes > 0 && store.maxBytes == 64 << 20)

        // An explicit range bounds spans and records; a reversed or too-wide one is refused.
        let narrow = admin.call(.health) {
            $0.from = health.now - 100_000_000; $0.to = health.now
        }
        #expect(narrow.health?.streams.first?.records.isEmpty == true)
        #expect(
            admin.call(.health) {
                $0.from = health.now; $0.to = health.now - 1
            }.error?.code == .malformedRequest)
        #expect(
            admin.call(.health) {
                $0.from = 0; $0.to = 9 * 86_400_000_000_000
            }.error?.code == .malformedRequest)
        // An app sees no health (other apps' recording would show through it).
        #expect(connection.call(.health).error?.code == .notPermitted)
    }

    /// The participant turns the accelerometer off (the app's only stake ends) and, 2 s later, on
    /// again with the app starting it anew: meanwhile `health` says since when no app has wanted
    /// it (the picture's "no app wanted it"); once it records again the `noInterestedClients`
    /// record covers that time and `unwantedSince` is gone.
    @Test(.timeLimit(.minutes(3))) func timeNoAppWantsTheSensorIsSaidUntilRecordingResumes() throws {
        let time = ManualTime()
        let source = GeneratedSource(rate: 100, clock: time, scheduler: time)
        let harness = try DaemonHarness(sources: [source], clock: time, scheduler: time)
        defer { harness.stop() }
        let app = DaemonHarness.studyApp, accelerometer = SRSensor.accelerometer.rawValue
        try harness.grant([.accelerometer], to: app)
        let connection = try harness.connect(app: app)
        #expect(connection.call(.startRecording) { $0.sensor = accelerometer }.error == nil)
        #expect(DaemonHarness.eventually { source.isRecording })
        try time.advance(by: .seconds(1))
        let admin = try harness.connect(app: nil)
        func stream() -> WireStreamHealth? { admin.call(.health).health?.streams.first { $0.sensor == accelerometer } }
        #expect(DaemonHarness.eventually { stream()?.lastSample != nil })
        #expect(stream()?.unwantedSince == nil && stream()?.wantedSince != nil, "wanted: nothing unwanted")

        let turnedOff = harness.now
        try harness.grant([.accelerometer], to: app, granted: false)
        #expect(DaemonHarness.eventually { !source.isRecording })
        try time.advance(by: .seconds(2))
        let off = try #require(stream())
        #expect(!off.recording)
        let since = try #require(off.unwantedSince, "said while nobody wants it")
        #expect(since >= turnedOff && since <= turnedOff + 100_000_000, "\(since - turnedOff) ns after the decision")
        #expect(off.records.isEmpty, "no record yet: the pipeline writes it when recording resumes")

        try harness.grant([.accelerometer], to: app)
        #expect(connection.call(.startRecording) { $0.sensor = accelerometer }.error == nil)
        #expect(DaemonHarness.eventually { source.isRecording })
        try time.advance(by: .seconds(1))
        var again = stream()
        #expect(
            DaemonHarness.eventually {
                again = stream(); return again?.records.isEmpty == false
            }, "\(String(describing: again))")
        #expect(again?.unwantedSince == nil && again?.recording == true)
        let record = try #require(again?.records.first)
        #expect(record.reason == SRDeletionReason.noInterestedClients.rawValue)
        #expect(abs(record.start - since) <= 100_000_000, "the record starts where unwantedSince said")
    }

    @Test func anotherUserSeesOnlyTheSensorsOfStudiesItAnswersFor() throws {
        let time = ManualTime()
        let source = GeneratedSource(rate: 100, clock: time, scheduler: time)
        let harness = try DaemonHarness(sources: [source], clock: time, scheduler: time)
        defer { harness.stop() }
        try harness.grant([.accelerometer], to: DaemonHarness.studyApp)
        let connection = try harness.connect(app: DaemonHarness.studyApp)
        #expect(connection.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }.error == nil)
        #expect(DaemonHarness.eventually { source.isRecording })
        try time.advance(by: .milliseconds(800))
        #expect(DaemonHarness.eventually { harness.samplesVisible(to: DaemonHarness.studyApp) == 81 })
        let ctl = harness.folder + "/sensorkitctl"
        try ExecutableForOthers.place(DaemonHarness.productsFolder + "/sensorkitctl", at: ctl)
        // nobody is a user of com.example.other but answers for no study: no stream.
        let nobody = try DaemonHarness.asNobody([ctl, "--socket", harness.socket, "--json", "status"])
        #expect(nobody.status == 0, "\(nobody.output)")
        let document = try JSONSerialization.jsonObject(with: Data(nobody.output.utf8)) as? [String: Any]
        let health = document?["health"] as? [String: Any]
        #expect((health?["streams"] as? [Any])?.isEmpty == true, "\(nobody.output)")
        #expect(health?["store"] != nil, "the store's use is no secret")
        // Root sees the stream.
        let admin = try harness.connect(app: nil)
        #expect(admin.call(.health).health?.streams.map(\.sensor) == [SRSensor.accelerometer.rawValue])
    }

    @Test func expectedRateComesFromTheSourceDetails() {
        #expect(ExpectedRate.of(["rate": "100"]) == 100)
        #expect(ExpectedRate.of(["samplingFrequency": "100 Hz (raised from 12.5 Hz)"]) == 100)
        #expect(ExpectedRate.of(["samplingFrequency": "polled every 250.0 ms"]) == 4)
        #expect(ExpectedRate.of(["samplingFrequency": "polled every 2.0 s"]) == 0.5)
        #expect(ExpectedRate.of(["samplingFrequency": "0 Hz (in_accel_sampling_frequency)"]) == nil)
        #expect(ExpectedRate.of(["samplingFrequency": "unknown"]) == nil)
        #expect(ExpectedRate.of(["rate": "-5"]) == nil && ExpectedRate.of(["rate": "nan"]) == nil)
        #expect(ExpectedRate.of([:]) == nil)
        #expect(ExpectedRate.of(["sampleRate": "130 Hz"]) == 130, "a wearable's PMD stream")
    }
}
