import AppleStyleStudy
import Foundation
import Glibc
import SensorKit
import SensorSimulation
import SensorSystem
import Testing

/// Every test that uses the process-wide client (`ReaderSession`, `SENSORKIT_APP`) lives in this
/// one serialized suite, so two never share it at once.
///
/// The Apple-style `StudyRecorder` against a running sensorkitd: authorization through the
/// consent flow, startRecording, fetchDevices → fetch per device, results cast to SensorKit's
/// classes. The daemon records generated accelerometer and light signals through its own pipeline.
@Suite(.serialized) struct LiveDaemonTests {
    @Test func appleStyleStudyCodeFetchesRecordedData() throws {
        let harness = try DaemonHarness(sources: [
            GeneratedSource(), GeneratedSource(sensor: .ambientLightSensor, rate: 10, perTick: 1),
        ])
        defer {
            ReaderSession.reset()
            harness.stop()
        }
        actAsStudyApp(on: harness)

        let recorder = StudyRecorder()
        let answered = DispatchSemaphore(value: 0)
        let outcome = UncheckedBox<(any Error)?>(nil)
        recorder.requestAccess { error in
            outcome.value = error
            answered.signal()
        }
        // A person answers on the "authorization sheet" (sensorkitctl consent, as root).
        #expect(
            DaemonHarness.eventually(5) {
                (try? harness.connect(app: nil).call(.consentList).consent?.first { $0.app == DaemonHarness.studyApp })?
                    .items.contains { $0.pending == true } == true
            })
        try harness.grant([.accelerometer, .ambientLightSensor], to: DaemonHarness.studyApp)
        #expect(answered.wait(timeout: .now() + 5) == .success)
        #expect(outcome.value == nil, "completion gets nil once the person answered")

        recorder.startRecording()
        #expect(DaemonHarness.eventually(5) { recorder.locked { $0.startedRecording } == 2 })
        // Recorded data becomes visible after the store's commit interval.
        #expect(
            DaemonHarness.eventually(10) {
                harness.samplesVisible(to: DaemonHarness.studyApp) >= 50
                    && harness.samplesVisible(to: DaemonHarness.studyApp, sensor: .ambientLightSensor) >= 5
            })

        recorder.ambientLightReader.fetchDevices()
        recorder.accelerometerReader.fetchDevices()
        #expect(
            DaemonHarness.eventually(10) { recorder.locked { $0.completedFetches } == 2 },
            "errors: \(recorder.locked { $0.errors })")
        let (lux, accelerations, devices, errors) = recorder.locked {
            ($0.luxValues, $0.accelerations, $0.devicesSeen, $0.errors)
        }
        #expect(errors.isEmpty)
        #expect(devices == [SRDevice.current.model, SRDevice.current.model])
        #expect(lux.count >= 5)
        #expect(lux.allSatisfy { ($0 * 2).rounded() == $0 * 2 }, "0.5 lux per count")
        #expect(accelerations.count >= 50)
        #expect(accelerations.allSatisfy { $0.z == 1 && $0.x == -$0.y })
        let timestamps = recorder.locked { $0.resultTimestamps }.map(\.rawValue)
        #expect(timestamps.allSatisfy { abs($0 - SRAbsoluteTime.current().rawValue) < 60 })
    }

    @Test func returningFalseStopsTheFetch() throws {
        // 200 kHz for 3 s: sealed chunks of 64 Ki samples and batches of 8192 make the fetch below
        // more frames than its credit window (8), so the daemon is still sending when the
        // delegate says stop, and only the cancel ends the fetch there.
        let harness = try DaemonHarness(sources: [GeneratedSource(rate: 200_000, perTick: 20_000)])
        defer {
            ReaderSession.reset()
            harness.stop()
        }
        actAsStudyApp(on: harness)
        try harness.grant([.accelerometer], to: DaemonHarness.studyApp)
        let recorder = StudyRecorder()
        recorder.stopAfterFirstResult = true
        recorder.startRecording()
        #expect(DaemonHarness.eventually(5) { recorder.locked { $0.startedRecording } == 1 })
        #expect(DaemonHarness.eventually(30, every: 0.5) { harness.samplesVisible(to: DaemonHarness.studyApp) >= 600_000 })
        recorder.fetch(reader: recorder.accelerometerReader, device: SRDevice.current, hoursBack: 1)
        #expect(DaemonHarness.eventually(10) { recorder.locked { $0.resultTimestamps.count } >= 1 })
        // The daemon stopped too: a fetch left waiting for acks would still be running.
        let admin = try harness.connect(app: nil)
        defer { admin.close() }
        #expect(
            DaemonHarness.eventually(5) { admin.call(.daemonStatus).info?["fetches"] == "0" },
            "the daemon still runs the fetch the delegate stopped: \(admin.call(.daemonStatus).info ?? [:])")
        // Whatever the daemon sent before it stopped has arrived once a round trip on the same
        // connection has, and has reached the delegate once its queue has run.
        _ = try ReaderSession.connection().call(.status)
        recorder.accelerometerReader.delegateQueue.sync {}
        let (results, completed) = recorder.locked { ($0.resultTimestamps.count, $0.completedFetches) }
        #expect(results == 1, "no callbacks after the delegate returned false")
        #expect(completed == 0)
    }

    // The async API (`SRReader`): try await recording, typed batches with flow control, objects.
    @Test func batchesAndObjectsThroughTheAsyncReader() async throws {
        let harness = try DaemonHarness(sources: [GeneratedSource(rate: 1000, perTick: 50)])
        defer {
            ReaderSession.reset()
            harness.stop()
        }
        actAsStudyApp(on: harness)
        let reader = SRReader(sensor: .accelerometer)
        // No consent yet: SensorKit's noAuthorization, not just any error.
        let refusal = await #expect(throws: SRError.self) { try await reader.startRecording() }
        #expect(refusal?.code == .noAuthorization)
        try harness.grant([.accelerometer], to: DaemonHarness.studyApp)
        #expect(try await reader.authorizationStatus == .authorized)
        try await reader.startRecording()
        #expect(DaemonHarness.eventually(20, every: 0.1) { harness.samplesVisible(to: DaemonHarness.studyApp) >= 2500 })
        let request = SRFetchRequest()
        request.from = SRAbsoluteTime.fromCFAbsoluteTime(_cf: CFAbsoluteTimeGetCurrent() - 60)
        request.to = SRAbsoluteTime.current()
        var samples = 0
        var batches = 0
        for try await batch in try reader.batches(request, window: 2) {
            #expect(batch.layout == .motion)
            #expect(batch.columns["z"]?.allSatisfy { $0 == 1 } == true)
            samples += batch.count
            batches += 1
        }
        #expect(samples >= 2000 && batches >= 1)
        // Breaking out early cancels the fetch; the connection stays usable.
        for try await _ in try reader.batches(request, window: 1) { break }
        var objects = 0
        for try await result in try reader.fetch(request) {
            if let array = result.sample as? [CMRecordedAccelerometerData] { objects += array.count }
        }
        #expect(objects >= samples)
        #expect(try await reader.devices().map(\.identifier) == [SRDevice.hostIdentifier])
    }
}

/// Points this process's SensorKit client at the harness daemon, acting as the study app.
func actAsStudyApp(on harness: DaemonHarness) {
    setenv("SENSORKIT_APP", DaemonHarness.studyApp, 1)
    SensorKitEnvironment.install(
        SensorKitEnvironment(
            socketPath: harness.socket, clock: LinuxSystemClock(),
            timeline: harness.daemon.timeline.current))
    ReaderSession.reset()
}

/// A mutable box for a test's callback result.
final class UncheckedBox<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
