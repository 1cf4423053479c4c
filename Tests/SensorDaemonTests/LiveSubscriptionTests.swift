import Foundation
import SensorDaemon
import SensorKit
import SensorKitModel
import SensorSimulation
import Synchronization
import Testing

/// Live subscriptions end to end (docs/protocol.md §3.9): a real daemon in this process recording
/// a generated 100 Hz accelerometer (10 samples a tick) on time the test moves by hand, a client
/// on its socket.
@Suite(.serialized) struct LiveSubscriptionTests {
    let study = DaemonHarness.studyApp
    let time = ManualTime()
    let source: GeneratedSource

    init() { source = GeneratedSource(clock: time, scheduler: time) }

    func daemon(config: String = "profile = lab\n") throws -> DaemonHarness {
        try DaemonHarness(config: config, sources: [source], clock: time, scheduler: time)
    }

    /// What one subscription received: batches in order, `gap`/`subscribed` events, the final reply.
    final class Received: Sendable {
        let batches = Mutex<[SampleBatchFrame]>([])
        let events = Mutex<[WireReply]>([])
        let final = Mutex<WireReply?>(nil)
        var samples: Int { batches.withLock { $0.reduce(0) { $0 + $1.count } } }
        var ended: WireReply? { final.withLock { $0 } }
    }

    /// Subscribes on `connection`; acknowledges each batch unless `acknowledging` is false. A
    /// status call behind it returns once the daemon has registered the subscription (requests
    /// of a connection are handled in order).
    func subscribe(_ connection: ReaderConnection, window: Int = 8, acknowledging: Bool = true) -> Received {
        let received = Received()
        _ = connection.onEvent { event in
            if event.event == "subscribed" || event.event == "gap" { received.events.withLock { $0.append(event) } }
        }
        connection.send(
            {
                $0.sensor = SRSensor.accelerometer.rawValue
                $0.window = window
            }, op: .subscribe
        ) { incoming in
            switch incoming {
            case .batch(let batch):
                received.batches.withLock { $0.append(batch) }
                if acknowledging { connection.notify(.ack, target: batch.requestID, batches: 1) }
            case .reply(let reply):
                received.final.withLock { $0 = reply }
            }
        }
        _ = connection.call(.status)
        return received
    }

    func startRecording(_ harness: DaemonHarness) throws -> ReaderConnection {
        try harness.grant([.accelerometer], to: study)
        let connection = try harness.connect(app: study)
        let started = connection.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }
        #expect(started.error == nil)
        #expect(DaemonHarness.eventually { source.isRecording })
        return connection
    }

    @Test func batchesArriveAsRecordedWithTheValuesAFetchReturns() throws {
        let harness = try daemon()
        defer { harness.stop() }
        let recorder = try startRecording(harness)
        let watcher = try harness.connect(app: study)
        let received = subscribe(watcher)
        #expect(received.events.withLock { $0.first?.event } == "subscribed")
        let start = harness.now
        try time.advance(by: .milliseconds(1_500))
        #expect(DaemonHarness.eventually { received.samples >= 150 }, "got \(received.samples) samples live")
        let live = received.batches.withLock { $0 }
        let times = live.flatMap(\.sensorTimes)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 == 10_000_000 }, "every sample once, in order")
        #expect(DaemonHarness.eventually { harness.samplesVisible(to: study) >= times.count })
        let (fetched, reply) = DaemonHarness.fetchAll(recorder, sensor: .accelerometer, from: start - 1, to: times.last!)
        #expect(reply.error == nil)
        let fetchedTimes = fetched.flatMap(\.sensorTimes)
        #expect(fetchedTimes.suffix(times.count) == ArraySlice(times))
        for column in 0..<3 {
            let liveValues = live.flatMap { $0.columns[column] }
            let fetchedValues = fetched.flatMap { $0.columns[column] }.suffix(liveValues.count)
            #expect(Array(fetchedValues).map(\.bitPattern) == liveValues.map(\.bitPattern), "column \(column) bit for bit")
        }
        #expect(received.ended == nil, "still running")
        watcher.notify(.cancel, target: live[0].requestID)
        #expect(DaemonHarness.eventually { received.ended != nil })
        #expect(received.ended?.error?.code == .cancelled)
    }

    @Test func aSubscriberThatStopsReadingIsEndedWithWhatItMissed() throws {
        let harness = try daemon()
        defer { harness.stop() }
        _ = try startRecording(harness)
        let watcher = try harness.connect(app: study)
        let received = subscribe(watcher, window: 1, acknowledging: false)
        // One batch of 10 samples per tick: a window of 1 and the buffer's 64 batches take 65
        // ticks; the 66th overruns it.
        for _ in 0..<70 { try time.advance(by: .milliseconds(100)) }
        #expect(DaemonHarness.eventually { received.ended != nil })
        let ended = try #require(received.ended)
        #expect(ended.error?.code == .overrun, "\(ended)")
        let missed = try #require(ended.missed)
        #expect(missed.sensor == SRSensor.accelerometer.rawValue && missed.device == SRDevice.hostIdentifier)
        #expect(missed.samples == 650, "64 buffered batches and the one that found the buffer full")
        let delivered = received.batches.withLock { $0 }
        #expect(delivered.count == 1)
        // (from, to] holds exactly the 650 samples after the delivered ones, 10 ms apart.
        let lastDelivered = delivered[0].sensorTimes.last!
        #expect(missed.from >= lastDelivered && missed.from < lastDelivered + 10_000_000)
        #expect(missed.to == lastDelivered + 650 * 10_000_000)
    }

    @Test func revokingConsentEndsTheSubscription() throws {
        let harness = try daemon()
        defer { harness.stop() }
        _ = try startRecording(harness)
        let watcher = try harness.connect(app: study)
        let received = subscribe(watcher)
        try harness.grant([.accelerometer], to: study, granted: false)
        #expect(DaemonHarness.eventually { received.ended != nil })
        #expect(received.ended?.error?.code == .noAuthorization)
        let refused = subscribe(watcher)
        #expect(refused.ended?.error?.code == .noAuthorization)
    }

    @Test func theSourceStoppingEndsTheSubscriptionWithANotice() throws {
        let harness = try daemon()
        defer { harness.stop() }
        let recorder = try startRecording(harness)
        let watcher = try harness.connect(app: study)
        let received = subscribe(watcher)
        try time.advance(by: .milliseconds(200))
        #expect(DaemonHarness.eventually { received.samples >= 20 }, "\(received.samples)")
        _ = recorder.call(.stopRecording) { $0.sensor = SRSensor.accelerometer.rawValue }
        #expect(DaemonHarness.eventually { received.ended != nil })
        let ended = try #require(received.ended)
        #expect(ended.ok == true && ended.count == received.samples, "\(ended)")
        #expect(ended.notice?.contains("no app records the sensor") == true, "\(ended)")
    }

    @Test func aSensorWithAHoldIsRefused() throws {
        let harness = try daemon(config: "")
        defer { harness.stop() }
        try harness.grant([.accelerometer], to: study)
        let watcher = try harness.connect(app: study)
        let received = subscribe(watcher)
        #expect(received.ended?.error?.code == .fetchRequestInvalid)
        #expect(received.ended?.error?.message.contains("released data only") == true)
    }

    @Test func anAdministratorSubscribesInAnAdminSession() throws {
        let harness = try daemon()
        defer { harness.stop() }
        _ = try startRecording(harness)
        let admin = try harness.connect(app: nil)
        let received = subscribe(admin)
        try time.advance(by: .milliseconds(300))
        #expect(DaemonHarness.eventually { received.samples >= 30 }, "\(received.samples)")
    }
}
