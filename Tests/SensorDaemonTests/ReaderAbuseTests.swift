import Foundation
import Glibc
import SensorDaemon
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import Testing

/// Hostile and broken clients: each gets a clear error or is dropped, and the daemon keeps
/// recording and serving others with bounded memory.
@Suite(.serialized) struct ReaderAbuseTests {
    /// A raw socket client speaking bytes.
    final class RawClient {
        let fd: Int32
        init(_ socket: String) throws { fd = try UnixSocket.connect(path: socket) }
        deinit { close(fd) }
        func send(_ bytes: [UInt8]) { try? UnixSocket.writeAll(fd, bytes) }
        func send(json: String) { send(Frame(kind: .message, payload: Array(json.utf8)).encoded()) }
        /// Replies until the connection closes or `seconds` pass.
        func replies(within seconds: Int32 = 2, max: Int = 100) -> (replies: [WireReply], closed: Bool) {
            var decoder = FrameDecoder(limit: WireLimits.maxServerFrame)
            var out: [WireReply] = []
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while out.count < max {
                guard UnixSocket.poll(fd: fd, events: Int16(POLLIN), timeoutMilliseconds: seconds * 1000) != 0 else {
                    return (out, false)
                }
                let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { return (out, true) }
                decoder.feed(buffer[0..<n])
                while let frame = try? decoder.next() {
                    if frame.kind == .message, let reply = try? WireJSON.decode(WireReply.self, from: frame.payload) {
                        out.append(reply)
                    }
                }
            }
            return (out, false)
        }
        func hello(app: String?) -> WireReply? {
            let appField = app.map { ",\"app\":\"\($0)\"" } ?? ""
            send(json: "{\"id\":1,\"op\":\"hello\",\"v\":1\(appField)}")
            return replies(max: 1).replies.first
        }
    }

    func recordingCount(_ harness: DaemonHarness) -> Int { harness.samplesVisible(to: DaemonHarness.studyApp) }

    /// Waits until the daemon has started sending on `client`'s socket (a fetch is running).
    func fetchSending(_ client: RawClient) -> Bool {
        UnixSocket.poll(fd: client.fd, events: Int16(POLLIN), timeoutMilliseconds: 5000) > 0
    }

    /// The daemon's and the generated source's time, moved by hand (`record`).
    let time = ManualTime()

    /// A daemon recording the accelerometer for the study app, generated at `rate` Hz on `time`.
    func recordingHarness(rate: Int = 100, perTick: Int = 10) throws -> DaemonHarness {
        let source = GeneratedSource(rate: rate, perTick: perTick, clock: time, scheduler: time)
        let harness = try DaemonHarness(sources: [source], clock: time, scheduler: time)
        try harness.grant([.accelerometer], to: DaemonHarness.studyApp)
        let app = try harness.connect(app: DaemonHarness.studyApp)
        #expect(app.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }.error == nil)
        app.close()
        #expect(DaemonHarness.eventually { source.isRecording })
        return harness
    }

    @Test func malformedUnknownAndWrongVersionRequestsGetClearErrors() throws {
        let harness = try recordingHarness()
        defer { harness.stop() }
        let client = try RawClient(harness.socket)
        client.send(json: "{\"id\":1,\"op\":\"status\"}")  // before hello
        client.send(json: "{\"id\":2,\"op\":\"hello\",\"v\":99}")
        client.send(json: "not json at all")
        client.send(json: "{\"id\":3,\"op\":\"teleport\"}")
        client.send(json: "{\"id\":4,\"op\":\"hello\",\"v\":1,\"app\":\"com.example.study\"}")
        client.send(json: "{\"id\":5,\"op\":\"fetch\",\"sensor\":\"com.apple.SensorKit.motion.accelerometer\"}")
        client.send(
            json: "{\"id\":6,\"op\":\"fetch\",\"sensor\":\"com.apple.SensorKit.motion.accelerometer\",\"from\":10,\"to\":5}")
        client.send(Frame(kind: .batch, payload: [1, 2, 3]).encoded())
        // Eight replies, and the connection stays open: a ninth request is still answered.
        client.send(json: "{\"id\":9,\"op\":\"status\"}")
        let (all, closed) = client.replies(max: 9)
        #expect(!closed && all.count == 9, "\(all)")
        #expect(all.last?.id == 9 && all.last?.error == nil)
        let replies = Array(all.prefix(8))
        let codes = replies.map { $0.error?.code }
        #expect(
            codes == [
                .malformedRequest, .unsupportedVersion, .malformedRequest, .unknownOperation, nil,
                .fetchRequestInvalid, .fetchRequestInvalid, .malformedRequest,
            ], "\(replies)")
        #expect(replies[1].error?.message.contains("version 99") == true)
    }

    @Test func oversizedAndBrokenFramesEndTheConnectionNotTheDaemon() throws {
        let harness = try recordingHarness()
        defer { harness.stop() }
        let oversized = try RawClient(harness.socket)
        oversized.send([0xFF, 0xFF, 0xFF, 0x7F, 1])  // announces 2 GiB
        let (replies, closed) = oversized.replies()
        #expect(closed)
        #expect(replies.first?.error?.code == .malformedRequest)
        #expect(replies.first?.error?.message.contains("exceeds the limit") == true)
        let unknownKind = try RawClient(harness.socket)
        unknownKind.send([1, 0, 0, 0, 77])
        #expect(unknownKind.replies().closed)
        let truncated = try RawClient(harness.socket)
        truncated.send([200, 0, 0, 0, 1, 123])  // a frame cut short, then the client leaves
        _ = truncated
        // Everyone else is still served and recording goes on.
        #expect(try harness.record(on: time, for: .milliseconds(100), beyond: recordingCount(harness)))
    }

    @Test func aClientThatNeverReadsIsBoundedAndOthersAreUnaffected() throws {
        // 50 kHz for three seconds: each fetch below has ≈ 150 000 samples (≈ 6 MB of batches),
        // far more than one frame, so a daemon that queued what it read, or even a window's
        // worth of frames per fetch, would hold far more than the bound checked at the end.
        let harness = try recordingHarness(rate: 50_000, perTick: 5_000)
        defer { harness.stop() }
        #expect(try harness.record(on: time, for: .seconds(3), beyond: 149_999))
        let lazy = try RawClient(harness.socket)
        #expect(lazy.hello(app: DaemonHarness.studyApp)?.ok == true)
        // Sixteen fetches with the largest window, and never a read or an ack.
        for id in 10..<26 {
            lazy.send(
                json:
                    "{\"id\":\(id),\"op\":\"fetch\",\"sensor\":\"com.apple.SensorKit.motion.accelerometer\",\"from\":0,\"to\":9000000000000000,\"window\":1000}"
            )
        }
        // A flood of requests it never reads the replies of, for as long as the daemon reads them
        // (it stops at its bound, docs/protocol.md §6.2, and the writes would then block).
        let floodCount = 20_000
        try UnixSocket.setNonBlocking(lazy.fd)
        _ = ReaderLimitsTests.flood(
            lazy.fd, with: Frame(kind: .message, payload: Array("{\"id\":100,\"op\":\"status\"}".utf8)).encoded(), for: 1)
        #expect(try harness.record(on: time, for: .milliseconds(100), beyond: recordingCount(harness)), "recording must go on")
        // The daemon queues the next batch of a fetch only once the previous one is written, so
        // for the lazy client it holds at most one batch frame per fetch plus the replies to the
        // flood (a status reply is a few hundred bytes; 1 KiB each is generous).
        let admin = try harness.connect(app: nil)
        let queued = Int(admin.call(.daemonStatus).info?["queuedReplyBytes"] ?? "") ?? -1
        let batchFrame = BatchFrameWriter.frameSize(columns: BatchLayout.motion.columns.count, count: WireLimits.samplesPerBatch)
        let bound = WireLimits.maxConcurrentFetches * batchFrame + floodCount * 1024
        #expect(queued >= 0 && queued < bound, "\(queued) bytes queued for one client that never reads (bound \(bound))")
        // Its sixteen fetches are all still running (each has more than a window of batches)...
        #expect(admin.call(.daemonStatus).info?["fetches"] == "16")
        // ...and within that bound it is still connected (admin and lazy; the counting
        // connections left).
        #expect(
            DaemonHarness.eventually(5) { admin.call(.daemonStatus).info?["connections"] == "2" },
            "the lazy client was dropped, or others were kept: \(admin.call(.daemonStatus).info ?? [:])")
    }

    /// An `ack`'s batch count is the client's number: the fetch's credit plus `Int.max`
    /// overflowed and trapped, killing the daemon. The credit saturates and stays capped at the
    /// window.
    @Test func anAckOfAbsurdSizeLeavesTheDaemonServing() throws {
        let harness = try recordingHarness(rate: 50_000, perTick: 5_000)
        defer { harness.stop() }
        #expect(try harness.record(on: time, for: .milliseconds(1500), beyond: 74_999))
        let client = try RawClient(harness.socket)
        #expect(client.hello(app: DaemonHarness.studyApp)?.ok == true)
        // Far more batches than the socket buffer holds, and the client does not read yet: the
        // fetch is still running, with credit left, when the ack comes.
        client.send(
            json:
                "{\"id\":7,\"op\":\"fetch\",\"sensor\":\"com.apple.SensorKit.motion.accelerometer\",\"from\":0,\"to\":9000000000000000,\"window\":16}"
        )
        #expect(fetchSending(client))
        client.send(json: "{\"id\":8,\"op\":\"ack\",\"target\":7,\"batches\":9223372036854775807}")
        client.send(json: "{\"id\":9,\"op\":\"status\"}")
        #expect(client.replies(within: 3, max: 3).replies.contains { $0.id == 9 }, "the daemon must still answer")
        #expect(recordingCount(harness) > 0)
    }

    @Test func aClientThatLeavesMidFetchIsForgotten() throws {
        let harness = try recordingHarness()
        defer { harness.stop() }
        #expect(try harness.record(on: time, for: .seconds(1), beyond: 99))
        for window in [1, 16, 1, 16, 16] {
            let leaver = try RawClient(harness.socket)
            #expect(leaver.hello(app: DaemonHarness.studyApp)?.ok == true)
            leaver.send(
                json:
                    "{\"id\":7,\"op\":\"fetch\",\"sensor\":\"com.apple.SensorKit.motion.accelerometer\",\"from\":0,\"to\":9000000000000000,\"window\":\(window)}"
            )
            #expect(fetchSending(leaver))
        }
        let admin = try harness.connect(app: nil)
        #expect(
            DaemonHarness.eventually(5) { admin.call(.daemonStatus).info?["connections"] == "1" },
            "sessions of departed clients must be released")
        // Leaving with replies unread or unsent is an ordinary goodbye, not a failure in the log
        // (one line per uid and kind of reason; the others are counted, docs/reliability.md).
        let closes = harness.logLines().filter { $0.contains(") closed: ") }
        #expect(closes.count >= 1 && !closes.contains { $0.contains("failed") }, "\(closes)")
        #expect(recordingCount(harness) > 0)
    }

    /// A client that shuts down its receiving side makes the daemon's next write fail with EPIPE
    /// (for a client that closes, the read side usually notices first). The connection is closed
    /// as an ordinary goodbye, not logged as a failed write.
    @Test func aClientThatStopsReceivingIsLetGoQuietly() throws {
        let harness = try recordingHarness()
        defer { harness.stop() }
        #expect(try harness.record(on: time, for: .milliseconds(500), beyond: 49))
        let leaver = try RawClient(harness.socket)
        #expect(leaver.hello(app: DaemonHarness.studyApp)?.ok == true)
        #expect(shutdown(leaver.fd, Int32(SHUT_RD)) == 0)
        leaver.send(
            json:
                "{\"id\":7,\"op\":\"fetch\",\"sensor\":\"com.apple.SensorKit.motion.accelerometer\",\"from\":0,\"to\":9000000000000000,\"window\":16}"
        )
        let admin = try harness.connect(app: nil)
        #expect(
            DaemonHarness.eventually(5) { admin.call(.daemonStatus).info?["connections"] == "1" },
            "the daemon must let go of a client it cannot write to")
        let closes = harness.logLines().filter { $0.contains(") closed: ") }
        #expect(
            closes.contains { $0.hasSuffix("closed: client closed the connection (with replies or events unsent)") }, "\(closes)")
        #expect(!closes.contains { $0.contains("failed") }, "\(closes)")
        #expect(recordingCount(harness) > 0)
    }

    @Test func manyConnectionsComeAndGoWithoutLosingAny() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        // fd numbers are reused quickly; every connection must still get its reply.
        for _ in 0..<300 {
            let client = try RawClient(harness.socket)
            #expect(client.hello(app: nil)?.ok == true)
        }
        let admin = try harness.connect(app: nil)
        #expect(DaemonHarness.eventually(5) { admin.call(.daemonStatus).info?["connections"] == "1" })
    }
}
