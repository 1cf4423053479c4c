import Dispatch
import Foundation
import Glibc
import SensorDaemon
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorTestKit
import Synchronization
import Testing

@testable import SensorStore

/// The store's writer stalls (a slow disk, a long purge): clients are still answered, the
/// watchdog still pings, and a stop still ends within its deadline (docs/reliability.md,
/// "Shutdown and a stalled store").
@Suite(.serialized) struct StoreStallTests {
    /// Holds the store's writer queue until `release`.
    final class WriterHold: Sendable {
        private let gate = DispatchSemaphore(value: 0)
        private let entered = DispatchSemaphore(value: 0)
        init(_ harness: DaemonHarness) {
            let writer = (harness.daemon.store as! StoreBackend).store.writer
            let (gate, entered) = (self.gate, self.entered)
            writer.thread.async {
                entered.signal()
                gate.wait()
            }
        }
        /// Whether the writer's thread is held within `seconds`.
        func held(within seconds: Double) -> Bool { entered.wait(timeout: .now() + seconds) == .success }
        func release() { gate.signal() }
    }

    /// Sends a request without waiting; `wait` gives its reply, or nil after `seconds`.
    final class Pending: Sendable {
        private let reply = Mutex<WireReply?>(nil)
        private let done = DispatchSemaphore(value: 0)
        init(_ connection: ReaderConnection, _ op: WireRequest.Operation, _ build: (inout WireRequest) -> Void = { _ in }) {
            connection.send(build, op: op) { [self] incoming in
                if case .reply(let final) = incoming {
                    reply.withLock { $0 = final }
                    done.signal()
                }
            }
        }
        func wait(_ seconds: Double) -> WireReply? {
            guard done.wait(timeout: .now() + seconds) == .success else { return nil }
            return reply.withLock { $0 }
        }
    }

    @Test func clientsAreAnsweredWhileAStakeWaitsForTheWriter() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        try harness.grant([.accelerometer], to: DaemonHarness.studyApp)
        let app = try harness.connect(app: DaemonHarness.studyApp)
        let admin = try harness.connect(app: nil)
        let hold = WriterHold(harness)
        let start = Pending(app, .startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }
        // Pipelined behind the start on the same connection: answered after it, and sees it.
        let status = Pending(app, .status) { $0.sensor = SRSensor.accelerometer.rawValue }
        // Another client asks again and again for two seconds, while the start reaches the
        // control queue and waits for the writer: every question is answered. The bound is
        // generous (10 s: the whole suite runs beside it on two cores) and loses nothing, since
        // the writer is held until the end: a control queue waiting for it would never answer.
        let began = Date()
        var answered = 0
        var unanswered = false
        while Date().timeIntervalSince(began) < 2 {
            guard Pending(admin, .daemonStatus).wait(10)?.ok == true else {
                unanswered = true
                break
            }
            answered += 1
        }
        hold.release()
        #expect(!unanswered, "another client waited for the writer (after \(answered) answers)")
        #expect(start.wait(5)?.ok == true)
        #expect(status.wait(5)?.states?.first?.recording == true, "a request after startRecording sees the stake")
    }

    /// A lab fetch (hold 0) whose range reaches samples the hand-over journal still holds needs
    /// the writer to fold them first. It asks without waiting: while the writer stalls, that
    /// fetch waits alone — another client's requests are answered, `daemonStatus` (which reads
    /// every connection's backlog) too — and once the writer goes on, the fetch returns the
    /// journal's samples with the rest. (Until 2026-12-07 the fold was waited for on the control
    /// queue, and every client waited with it.)
    @Test func aFetchReachingTheJournalWaitsAloneWhileTheWriterStalls() throws {
        let harness = try DaemonHarness(sources: [GeneratedSource()])
        defer { harness.stop() }
        try harness.grant([.accelerometer], to: DaemonHarness.studyApp)
        let app = try harness.connect(app: DaemonHarness.studyApp)
        let admin = try harness.connect(app: nil)
        let other = try harness.connect(app: DaemonHarness.studyApp)
        #expect(app.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }.ok == true)
        let writer = (harness.daemon.store as! StoreBackend).store.writer
        // Held while the journal holds samples SQLite has not (a fold may come between the look
        // and the hold: then again).
        var hold: WriterHold?
        for _ in 0..<20 {
            #expect(DaemonHarness.eventually(10) { writer.unfoldedSince.load(ordering: .acquiring) != .max })
            let candidate = WriterHold(harness)
            #expect(candidate.held(within: 10))
            if writer.unfoldedSince.load(ordering: .acquiring) != .max {
                hold = candidate
                break
            }
            candidate.release()
        }
        let writerHold = try #require(hold, "the journal never held unfolded samples while the writer was held")
        let journalSince = writer.unfoldedSince.load(ordering: .acquiring)
        let to = harness.now
        let fetched = Mutex<(samples: [Int64], reply: WireReply)?>(nil)
        Thread {
            let (batches, reply) = DaemonHarness.fetchAll(app, sensor: .accelerometer, from: 0, to: to, timeout: 60)
            fetched.withLock { $0 = (batches.flatMap(\.sensorTimes), reply) }
        }.start()
        let began = Date()
        var answered = 0
        var unanswered: String?
        while Date().timeIntervalSince(began) < 2 {
            guard Pending(admin, .daemonStatus).wait(10)?.ok == true else {
                unanswered = "daemonStatus"
                break
            }
            let status = Pending(other, .status) { $0.sensor = SRSensor.accelerometer.rawValue }
            guard status.wait(10)?.ok == true else {
                unanswered = "another app's status"
                break
            }
            answered += 1
        }
        // What an early end brought, for the message (seen once after a full suite: an ok reply
        // without the journal's samples; not reproduced since).
        let early = fetched.withLock { $0.map { "\($0.samples.count) samples, reply \($0.reply)" } }
        let waitedAlone = early == nil
        writerHold.release()
        #expect(unanswered == nil, "\(unanswered ?? "") waited for the writer (after \(answered) answers)")
        #expect(
            waitedAlone,
            "the fetch ended while the writer was held: it did not reach the journal (\(early ?? ""); journal since SR \(journalSince), to \(to))"
        )
        #expect(DaemonHarness.eventually(30) { fetched.withLock { $0 != nil } })
        let result = try #require(fetched.withLock { $0 })
        #expect(result.reply.ok == true, "\(result.reply)")
        #expect(result.samples.contains { $0 >= journalSince }, "the journal's samples (SR \(journalSince) on) are in the fetch")
    }

    /// A source plugged in while the writer stalls waits in the pipeline to open its stream;
    /// `sensorkitctl devices` meanwhile is answered, and already lists it.
    @Test func devicesIsAnsweredWhileANewSourceWaitsForTheWriter() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let admin = try harness.connect(app: nil)
        let hold = WriterHold(harness)
        defer { hold.release() }
        let source = GeneratedSource(sensor: .rotationRate)
        harness.daemon.pipeline.add(source)
        let devices = Pending(admin, .devices).wait(10)
        #expect(devices != nil, "devices waited for the store's writer")
        #expect(devices?.sources?.contains { $0.source == source.descriptor.source } == true)
    }

    @Test func theWatchdogPingsWhileAPurgeWaitsForTheWriter() throws {
        var template = Array("/tmp/skn-XXXXXX".utf8CString)
        let folder = String(cString: mkdtemp(&template)!)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let notify = try NotifyListener(path: folder + "/notify")
        let scheduler = ManualScheduler()
        let harness = try DaemonHarness(
            scheduler: scheduler, environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "2000000"])
        defer { harness.stop() }
        let hold = WriterHold(harness)
        defer { hold.release() }
        // Housekeeping runs every second; its sixtieth starts a purge, which waits for the writer.
        // Every second still gets its ping.
        var pings = 0
        for second in 1...65 {
            scheduler.advance(seconds: 1)
            let pinged = DaemonHarness.eventually(3) { notify.watchdogPings() > pings }
            #expect(pinged, "no watchdog ping in second \(second) (the purge started in second 60)")
            if !pinged { break }
            pings = notify.watchdogPings()
        }
    }

    @Test func aStopEndsWithinItsDeadlineWhenTheStoreHangs() throws {
        let harness = try DaemonHarness(stopDeadline: 1)
        let hold = WriterHold(harness)
        let result = Mutex<Bool?>(nil)
        let stopped = DispatchSemaphore(value: 0)
        let began = Date()
        Thread {
            let clean = harness.daemon.stop()
            result.withLock { $0 = clean }
            stopped.signal()
        }.start()
        let ended = stopped.wait(timeout: .now() + 5) == .success
        let took = Date().timeIntervalSince(began)
        hold.release()
        defer { try? FileManager.default.removeItem(atPath: harness.folder) }
        #expect(ended && took < 3, "stop took \(took) s with the store hanging (deadline 1 s)")
        #expect(result.withLock { $0 } == false)
        let cut = harness.logLines().filter { $0.contains("shutdown cut short") }
        #expect(cut.count == 1 && cut.first?.contains("flushing and closing the store") == true, "\(cut)")
    }
}
