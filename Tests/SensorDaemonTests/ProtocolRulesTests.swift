import Foundation
import Glibc
import SensorDaemon
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import SensorTestKit
import Synchronization
import Testing

/// The rules of docs/protocol.md that a client written from the document alone relies on, each
/// checked against the real daemon (docs/reliability.md, "The protocol document matches the
/// daemon").
@Suite(.serialized) struct ProtocolRulesTests {
    typealias RawClient = ReaderAbuseTests.RawClient
    static let accelerometer = SRSensor.accelerometer.rawValue

    /// §3.3: `startRecording`/`stopRecording` of a `.tombstones` stream is refused with 100 and
    /// changes no stake (deletion records are fetched, never recorded).
    @Test func deletionRecordStreamsAreNeverStartedOrStopped() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        try harness.grant([.accelerometer], to: DaemonHarness.studyApp)
        let app = try harness.connect(app: DaemonHarness.studyApp)
        defer { app.close() }
        for op in [WireRequest.Operation.startRecording, .stopRecording] {
            let reply = app.call(op) { $0.sensor = Self.accelerometer + ".tombstones" }
            #expect(reply.error?.code == .malformedRequest, "\(op): \(reply)")
            #expect(reply.error?.message.contains("deletion-record") == true)
        }
        let admin = try harness.connect(app: nil)
        defer { admin.close() }
        #expect(admin.call(.stakes).stakes == [], "no stake in the parent either")
    }

    /// §1.3: an app session may call exactly `daemonStatus` of the administrative operations
    /// (what records and which devices are attached are an administrator's to see); the others
    /// are refused with 104.
    @Test func appSessionsMayCallOnlyTheListedAdministrativeOperations() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let app = try harness.connect(app: DaemonHarness.studyApp)
        defer { app.close() }
        let administrative = WireRequest.Operation.allCases.filter(\.isAdministrative)
        #expect(
            Set(administrative) == [
                .daemonStatus, .sensors, .devices, .apps, .consentList, .consentDecide, .stakes, .health, .deleteData,
                .watchConsent,
            ])
        for op in administrative {
            let reply = app.call(op) {
                $0.app = DaemonHarness.studyApp
                $0.decisions = [Self.accelerometer: true]
            }
            if op == .daemonStatus {
                #expect(reply.ok == true, "\(op) is allowed in an app session: \(reply)")
            } else {
                #expect(reply.error?.code == .notPermitted, "\(op) is refused in an app session: \(reply)")
            }
        }
        // The refused consentDecide decided nothing.
        #expect(app.call(.status) { $0.sensor = Self.accelerometer }.states?.first?.authorizationStatus == 0)
        let admin = try harness.connect(app: nil)
        defer { admin.close() }
        #expect(admin.call(.apps).apps?.count == 2, "an admin session (root) still sees every app")
    }

    /// §6.2/§7: a connection runs up to 16 fetches at once; the 17th gets 103 with its id.
    @Test func theSeventeenthRunningFetchIsRefused() throws {
        let time = ManualTime()
        let source = GeneratedSource(rate: 50_000, perTick: 5_000, clock: time, scheduler: time)
        let harness = try DaemonHarness(sources: [source], clock: time, scheduler: time)
        defer { harness.stop() }
        try harness.grant([.accelerometer], to: DaemonHarness.studyApp)
        let starter = try harness.connect(app: DaemonHarness.studyApp)
        #expect(starter.call(.startRecording) { $0.sensor = Self.accelerometer }.error == nil)
        starter.close()
        #expect(DaemonHarness.eventually { source.isRecording })
        // Enough samples that a fetch with window 1 that is never acknowledged keeps running:
        // more than the batch it sends and the one it reads ahead (half a second: 25 001).
        #expect(try harness.record(on: time, for: .milliseconds(500), beyond: 3 * WireLimits.samplesPerBatch))
        let client = try RawClient(harness.socket)
        #expect(client.hello(app: DaemonHarness.studyApp)?.ok == true)
        let limit = WireLimits.maxConcurrentFetches
        #expect(limit == 16)
        for id in 10..<(10 + limit + 1) {
            client.send(
                json:
                    "{\"id\":\(id),\"op\":\"fetch\",\"sensor\":\"\(Self.accelerometer)\",\"from\":0,\"to\":\(harness.now),\"window\":1}"
            )
        }
        // A status request behind them: the replies go out in request order, so everything the
        // fetches answered has arrived once its reply has (no waiting for silence).
        client.send(json: "{\"id\":99,\"op\":\"status\"}")
        let (replies, closed) = client.replies(within: 10, max: 2)
        #expect(!closed)
        // The sixteenth was accepted (no reply yet: it waits for an ack); only the seventeenth
        // has an answer, 103.
        #expect(replies.map(\.id) == [UInt32(10 + limit), 99], "\(replies)")
        #expect(replies.first?.id == UInt32(10 + limit) && replies.first?.error?.code == .tooManyRequests, "\(replies)")
        let admin = try harness.connect(app: nil)
        defer { admin.close() }
        #expect(admin.call(.daemonStatus).info?["fetches"] == String(limit))
    }

    /// §3.4: `ack` and `cancel` never get a reply, not even before `hello`.
    @Test func ackAndCancelBeforeHelloGetNoReply() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let client = try RawClient(harness.socket)
        client.send(json: "{\"id\":5,\"op\":\"ack\",\"target\":2,\"batches\":1}")
        client.send(json: "{\"id\":6,\"op\":\"cancel\",\"target\":2}")
        client.send(json: "{\"id\":7,\"op\":\"status\"}")
        client.send(json: "{\"id\":1,\"op\":\"hello\",\"v\":1}")
        let (replies, closed) = client.replies(within: 1, max: 3)
        #expect(!closed)
        #expect(replies.map(\.id) == [7, 1], "\(replies)")
        #expect(replies.first?.error?.code == .malformedRequest && replies.last?.ok == true)
    }

    /// §3.2: a `v` that is not a JSON integer (a string) is a malformed request: 100 without
    /// `id`, naming the field; the connection stays open and `hello` may be retried.
    @Test func aStringVersionIsAMalformedRequest() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let client = try RawClient(harness.socket)
        client.send(json: "{\"id\":1,\"op\":\"hello\",\"v\":\"1\"}")
        client.send(json: "{\"id\":2,\"op\":\"hello\",\"v\":1}")
        let (replies, closed) = client.replies(within: 2, max: 2)
        #expect(!closed && replies.count == 2, "\(replies)")
        #expect(replies.first?.id == nil && replies.first?.error?.code == .malformedRequest)
        #expect(replies.first?.error?.message.contains("field 'v'") == true, "\(replies)")
        #expect(replies.last?.id == 2 && replies.last?.ok == true)
    }

    /// §2: a malformed `id` gets a message that says so; only bytes that are not JSON are called
    /// "not valid JSON".
    @Test func malformedIDsAreNamedAsSuch() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let client = try RawClient(harness.socket)
        let ids = ["-1", "4294967296", "1.5", "1e30", "\"7\"", "null", "[1]"]
        for id in ids { client.send(json: "{\"id\":\(id),\"op\":\"hello\",\"v\":1}") }
        client.send(json: "{\"op\":\"hello\",\"v\":1}")
        client.send(json: "not json at all")
        let (replies, closed) = client.replies(within: 2, max: ids.count + 2)
        #expect(!closed && replies.count == ids.count + 2, "\(replies)")
        for (reply, id) in zip(replies, ids) {
            #expect(reply.id == nil && reply.error?.code == .malformedRequest)
            let message = reply.error?.message ?? ""
            #expect(message.contains("field 'id' is malformed") && !message.contains("not valid JSON"), "id \(id): \(message)")
        }
        #expect(replies[ids.count].error?.message.contains("field 'id' is missing") == true, "\(replies)")
        #expect(replies[ids.count + 1].error?.message.contains("not valid JSON") == true, "\(replies)")
    }

    /// §3.5: a pending consent request shows in `consentList` (`pending: true`, status 0) until
    /// someone decides.
    @Test func aPendingConsentRequestIsVisibleInConsentList() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let admin = try harness.connect(app: nil)
        defer { admin.close() }
        func item() -> WireConsentRequest.Item? {
            admin.call(.consentList) { $0.app = DaemonHarness.studyApp }.consent?.first?.items.first {
                $0.sensor == Self.accelerometer
            }
        }
        #expect(item()?.pending == false && item()?.status == 0, "not asked yet")
        let app = try harness.connect(app: DaemonHarness.studyApp)
        defer { app.close() }
        let answered = Mutex<WireReply?>(nil)
        _ = app.send({ $0.sensors = [Self.accelerometer] }, op: .requestAuthorization) { incoming in
            if case .reply(let reply) = incoming { answered.withLock { $0 = reply } }
        }
        #expect(DaemonHarness.eventually(5) { item()?.pending == true }, "\(String(describing: item()))")
        #expect(item()?.status == 0)
        try harness.grant([.accelerometer], to: DaemonHarness.studyApp)
        #expect(item()?.pending == false && item()?.status == 1)
        #expect(DaemonHarness.eventually(5) { answered.withLock { $0?.ok } == true })
    }

    /// §2: a frame that stops arriving part-way is not waited on forever: after the
    /// partial-frame timeout the daemon answers 100 without `id` and closes the connection. A
    /// frame that arrives in pieces within the timeout is served.
    @Test func aTruncatedFrameIsNotWaitedOnForever() throws {
        let scheduler = ManualScheduler()
        let harness = try DaemonHarness(scheduler: scheduler)
        defer { harness.stop() }
        #expect(harness.daemon.server.partialFrameTimeout == 10)
        /// Sends `bytes` and waits until the daemon has read them and armed the frame's deadline.
        func sendPiece(_ client: RawClient, _ bytes: [UInt8]) {
            let before = scheduler.pendingTimers
            client.send(bytes)
            #expect(DaemonHarness.eventually(5) { scheduler.pendingTimers == before + 1 }, "no deadline armed")
        }
        let slow = try RawClient(harness.socket)
        let hello = Frame(kind: .message, payload: Array("{\"id\":1,\"op\":\"hello\",\"v\":1}".utf8)).encoded()
        sendPiece(slow, Array(hello.prefix(7)))
        scheduler.advance(seconds: 9.9)
        slow.send(Array(hello.dropFirst(7)))
        #expect(slow.replies(within: 2, max: 1).replies.first?.ok == true)
        // A fresh connection, and one that has had whole frames before, alike.
        for truncated in [try RawClient(harness.socket), slow] {
            sendPiece(truncated, [200, 0, 0, 0, 1, 123])  // promises 200 bytes, sends 2, then silence
            scheduler.advance(seconds: 9.9)
            scheduler.advance(seconds: 0.1)
            let (replies, closed) = truncated.replies(within: 3)
            #expect(closed, "the connection must be closed")
            #expect(replies.first?.id == nil && replies.first?.error?.code == .malformedRequest, "\(replies)")
            #expect(replies.first?.error?.message.contains("incomplete frame") == true, "\(replies)")
        }
    }

    /// §4.1/§6.2 (issue: a 20.9 MB reply frame): no reply frame exceeds 4 MiB. A reply that
    /// would is answered with 109 `replyTooLarge` for its id; a narrower request still works.
    @Test func noReplyFrameExceedsTheProtocolsLimit() throws {
        let apps = (0..<48).map { String(format: "org.example.big%02d", $0) }
        let purpose = String(repeating: "A study of how people move. ", count: 4_000)  // ≈ 108 KB
        let harness = try DaemonHarness { folder in
            for app in apps {
                try DaemonHarness.writeApp(
                    app, in: folder + "/apps.d", entitlements: ["motion-accelerometer"], users: ["root"], purpose: purpose)
            }
        }
        defer { harness.stop() }
        let client = try RawClient(harness.socket)
        #expect(client.hello(app: nil)?.ok == true)
        client.send(json: "{\"id\":2,\"op\":\"apps\"}")
        client.send(json: "{\"id\":3,\"op\":\"consentList\"}")
        client.send(json: "{\"id\":4,\"op\":\"consentList\",\"app\":\"\(apps[0])\"}")
        var decoder = FrameDecoder(limit: Int(UInt32.max))
        var replies: [WireReply] = []
        var largest = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while replies.count < 3, UnixSocket.poll(fd: client.fd, events: Int16(POLLIN), timeoutMilliseconds: 5_000) != 0 {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(client.fd, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            decoder.feed(buffer[0..<n])
            while let frame = try decoder.next() {
                largest = max(largest, frame.payload.count + 1)
                replies.append(try WireJSON.decode(WireReply.self, from: frame.payload))
            }
        }
        #expect(replies.map(\.id) == [2, 3, 4])
        #expect(largest <= WireLimits.maxServerFrame, "a reply frame of \(largest) bytes")
        #expect(replies.first?.error?.code == .replyTooLarge, "\(replies.first?.error as Any)")
        #expect(replies.dropFirst().first?.error?.code == .replyTooLarge)
        #expect(replies.last?.consent?.first?.purpose == purpose, "one app's sheet still fits")
    }
}
