import Dispatch
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

/// The limits of docs/protocol.md §6.2 that keep one local user from stalling the daemon for
/// everyone else: work in flight per connection, connections per user and in all, idle fetches.
@Suite(.serialized) struct ReaderLimitsTests {
    /// Writes `request` over and over without ever reading, for `seconds`, on a non-blocking
    /// socket; returns the bytes the daemon took.
    static func flood(_ fd: Int32, with request: [UInt8], for seconds: Double) -> Int {
        let chunk = Array((0..<1024).map { _ in request }.joined())
        var offset = 0
        var total = 0
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let n = chunk.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, chunk.count - offset) }
            if n > 0 {
                total += n
                offset = (offset + n) % chunk.count
            } else {
                usleep(1_000)
            }
        }
        return total
    }

    @Test func aClientThatPipelinesAndNeverReadsIsBoundedAndOthersAreAnswered() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let flooders = try (0..<3).map { _ in try ReaderAbuseTests.RawClient(harness.socket) }
        for flooder in flooders {
            #expect(flooder.hello(app: nil)?.ok == true)
            try UnixSocket.setNonBlocking(flooder.fd)
        }
        // `sensors` has a reply of a few KiB: unread, they fill the daemon's side quickly.
        let request = Frame(kind: .message, payload: Array("{\"id\":5,\"op\":\"sensors\"}".utf8)).encoded()
        let written = Mutex<[Int]>([])
        let done = DispatchGroup()
        for flooder in flooders {
            let fd = flooder.fd
            DispatchQueue.global().async(group: done) {
                let bytes = Self.flood(fd, with: request, for: 3)
                written.withLock { $0.append(bytes) }
            }
        }
        usleep(300_000)
        let admin = try harness.connect(app: nil)
        defer { admin.close() }
        var slowest = 0.0
        var mostQueued = 0
        var mostBytes = 0
        for _ in 0..<10 {
            let start = Date()
            let info = admin.call(.daemonStatus).info ?? [:]
            slowest = max(slowest, Date().timeIntervalSince(start))
            mostQueued = max(mostQueued, Int(info["maxQueuedRequests"] ?? "") ?? .max)
            mostBytes = max(mostBytes, Int(info["queuedReplyBytes"] ?? "") ?? .max)
            usleep(200_000)
        }
        done.wait()
        // Requests the daemon read and has not answered: at most the bound per connection.
        #expect(mostQueued <= 16, "a connection had \(mostQueued) requests queued")
        // Reply bytes: each flooder stops being read at 1 MiB unread, plus the replies to the
        // requests already read then (16 × a few KiB).
        let replyBound = 3 * (1024 * 1024 + 16 * 16 * 1024)
        #expect(mostBytes <= replyBound, "\(mostBytes) bytes of replies queued (bound \(replyBound))")
        #expect(slowest < 1, "another client waited \(slowest) s for daemonStatus during the flood")
        // What the flooders got in: their socket buffers and the bounded backlog, not 3 s of writing.
        let taken = written.withLock { $0 }
        #expect(taken.allSatisfy { $0 < 16 * 1024 * 1024 }, "the daemon took \(taken) bytes of requests")
    }

    @Test func oneUserCannotTakeEveryConnection() throws {
        let harness = try DaemonHarness(config: "profile = lab\n[reader]\nmax-connections-per-user = 3\n")
        defer { harness.stop() }
        let mine = try (0..<3).map { _ in try ReaderAbuseTests.RawClient(harness.socket) }
        for client in mine { #expect(client.hello(app: nil)?.ok == true) }
        // A burst of ten more from the same user: each is told why and closed.
        for _ in 0..<10 {
            let extra = try ReaderAbuseTests.RawClient(harness.socket)
            let (replies, closed) = extra.replies(within: 2, max: 1)
            #expect(replies.first?.error?.code == .tooManyRequests && replies.first?.id == nil, "\(replies)")
            #expect(replies.first?.error?.message.contains("max-connections-per-user") == true)
            if replies.count == 1 { #expect(extra.replies(within: 2).closed) } else { #expect(closed) }
        }
        // Another user still gets in.
        let ctl = harness.folder + "/sensorkitctl"
        try ExecutableForOthers.place(DaemonHarness.productsFolder + "/sensorkitctl", at: ctl)
        let other = try DaemonHarness.asNobody([ctl, "--socket", harness.socket, "sensors"])
        #expect(other.status == 0, "\(other.output)")
        // The burst is one line in the log, with its count.
        #expect(
            DaemonHarness.eventually(3) { harness.logLines().contains { $0.contains("refused 10 connection(s)") } },
            "\(harness.logLines().filter { $0.contains("refused") })")
        #expect(harness.logLines().filter { $0.contains("refused") && $0.contains("connection") }.count == 1)
        // A connection that closes gives its place back.
        shutdown(mine[0].fd, Int32(SHUT_RDWR))
        #expect(DaemonHarness.eventually(5) { (try? ReaderAbuseTests.RawClient(harness.socket))?.hello(app: nil)?.ok == true })
    }

    @Test func runningOutOfDescriptorsPausesAcceptingWithoutSpinning() throws {
        // The real sensorkitd with 64 descriptors and connection limits above that: accept fails
        // with EMFILE, as it would for any limits under a tight LimitNOFILE.
        var template = Array("/tmp/skd-XXXXXX".utf8CString)
        let folder = String(cString: mkdtemp(&template)!)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder + "/apps.d", withIntermediateDirectories: true)
        try "profile = lab\n[reader]\nmax-connections = 1000\nmax-connections-per-user = 1000\n"
            .write(toFile: folder + "/d.conf", atomically: true, encoding: .utf8)
        let socket = folder + "/s.sock"
        let log = open(folder + "/daemon.log", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let null = open("/dev/null", O_RDWR)
        defer { close(log); close(null) }
        let daemon = try ChildProcess(
            [
                "/usr/bin/prlimit", "--nofile=64:1024", DaemonHarness.productsFolder + "/sensorkitd", "--socket", socket,
                "--config", folder + "/d.conf", "--apps-dir", folder + "/apps.d", "--state-dir", folder + "/state",
            ],
            stdin: null, stdout: log, stderr: log)
        defer {
            kill(daemon.pid, SIGKILL)
            daemon.wait()
        }
        #expect(DaemonHarness.eventually(20) { (try? ReaderAbuseTests.RawClient(socket))?.hello(app: nil)?.ok == true })
        var clients = try (0..<100).map { _ in try ReaderAbuseTests.RawClient(socket) }
        let logText = { (try? String(contentsOfFile: folder + "/daemon.log", encoding: .utf8)) ?? "" }
        #expect(DaemonHarness.eventually(5) { logText().contains("accept on") }, "accept never failed: \(logText().suffix(1500))")
        func cpuTicks() -> Int {
            guard let stat = try? String(contentsOfFile: "/proc/\(daemon.pid)/stat", encoding: .utf8),
                let end = stat.lastIndex(of: ")")
            else { return -1 }
            let fields = stat[stat.index(after: end)...].split(separator: " ")
            return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)  // utime, stime
        }
        let before = cpuTicks()
        usleep(1_000_000)
        let spent = cpuTicks() - before
        #expect(spent >= 0 && spent < 20, "the daemon used \(spent) ticks of CPU in 1 s while out of descriptors")
        let failures = logText().split(separator: "\n").filter { $0.contains("accept on") }
        #expect(failures.count == 1, "\(failures.count) lines about failed accepts: \(failures.prefix(3))")
        #expect(failures.first?.contains("Too many open files") == true, "\(failures.prefix(1))")
        // Descriptors come back (the limit is raised): the connections waiting in the backlog
        // are taken within a backoff and answered.
        let raise = Process()
        raise.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
        raise.arguments = ["--pid", String(daemon.pid), "--nofile=1024:1024"]
        try raise.run()
        raise.waitUntilExit()
        let late = clients.last!
        #expect(
            late.hello(app: nil)?.ok == true,
            "a connection from the backlog was not answered once descriptors were free: \(logText().suffix(1500))")
        #expect(DaemonHarness.eventually(3) { logText().contains("accepting connections on \(socket) again") })
        #expect(logText().split(separator: "\n").filter { $0.contains("accept on") }.count == 1)
        clients.removeAll()
    }

    /// The store's database file (its write-ahead log sits beside it).
    static func database(in folder: String) -> String? {
        let files = FileManager.default.enumerator(atPath: folder)?.compactMap { $0 as? String } ?? []
        return files.first { $0.hasSuffix("-wal") }.map { folder + "/" + $0.dropLast(4) }
    }

    /// A daemon recording 50 kHz whose fetch timers run on `scheduler`, with enough stored for a
    /// fetch of many batches.
    func fastRecordingHarness(_ config: String, scheduler: ManualScheduler) throws -> DaemonHarness {
        let harness = try DaemonHarness(
            config: "profile = lab\n" + config, sources: [GeneratedSource(rate: 50_000, perTick: 5_000)],
            scheduler: scheduler)
        try harness.grant([.accelerometer], to: DaemonHarness.studyApp)
        let app = try harness.connect(app: DaemonHarness.studyApp)
        #expect(app.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }.error == nil)
        app.close()
        #expect(
            DaemonHarness.eventually(10, every: 0.1) {
                harness.samplesVisible(to: DaemonHarness.studyApp) >= 4 * WireLimits.samplesPerBatch
            })
        return harness
    }

    /// A full checkpoint of the store's write-ahead log from another process: `busy|log|checkpointed`.
    static func checkpoint(_ database: String) throws -> String {
        let checkpoint = Process()
        checkpoint.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        checkpoint.arguments = [database, ".timeout 500", "PRAGMA wal_checkpoint(TRUNCATE);"]
        let pipe = Pipe()
        checkpoint.standardOutput = pipe
        try checkpoint.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        checkpoint.waitUntilExit()
        return output
    }

    /// A window-1 fetch that is never acknowledged: what it has sent and its final reply.
    final class ParkedFetch: Sendable {
        let batches = Mutex(0)
        let final = Mutex<WireReply?>(nil)

        /// Starts it on `app` and returns once its first batch is in and the daemon has taken note
        /// that it was written (a round trip after it), all at the scheduler's starting time.
        init(on app: ReaderConnection) {
            app.send(
                {
                    $0.sensor = SRSensor.accelerometer.rawValue
                    $0.from = 0
                    $0.to = 9_000_000_000_000_000
                    $0.window = 1
                }, op: .fetch
            ) { [self] incoming in
                switch incoming {
                case .batch: batches.withLock { $0 += 1 }
                case .reply(let reply): final.withLock { $0 = reply }
                }
            }
            _ = DaemonHarness.eventually(5) { batches.withLock { $0 } > 0 }
            _ = app.call(.status)
        }
    }

    @Test func aFetchWaitingForAnAckDoesNotPinTheWriteAheadLog() throws {
        let scheduler = ManualScheduler()
        let harness = try fastRecordingHarness("[reader]\nfetch-idle-timeout = 60s\n", scheduler: scheduler)
        defer { harness.stop() }
        let app = try harness.connect(app: DaemonHarness.studyApp)
        let fetch = ParkedFetch(on: app)  // one batch, then it waits for an ack that never comes
        #expect(fetch.batches.withLock { $0 } == 1)
        scheduler.advance(seconds: 1)  // it has waited a second: it parks
        let admin = try harness.connect(app: nil)
        #expect(admin.call(.daemonStatus).info?["fetches"] == "1", "the fetch must still be waiting")
        guard let database = Self.database(in: harness.folder + "/state") else {
            Issue.record("no write-ahead log under \(harness.folder)/state")
            return
        }
        // A full checkpoint that resets the log succeeds only when no reader holds an old snapshot
        // (tried until the park, queued on the fetch's queue by the scheduler, has run).
        var output = ""
        #expect(
            DaemonHarness.eventually(5, every: 0.05) {
                output = (try? Self.checkpoint(database)) ?? ""
                return output.hasPrefix("0|")
            }, "the checkpoint was blocked (busy|log|checkpointed): \(output)")
        #expect(admin.call(.daemonStatus).info?["fetches"] == "1")
    }

    @Test func aFetchWithoutAcksEndsAfterTheIdleTimeout() throws {
        let scheduler = ManualScheduler()
        let harness = try fastRecordingHarness("[reader]\nfetch-idle-timeout = 2s\n", scheduler: scheduler)
        defer { harness.stop() }
        let app = try harness.connect(app: DaemonHarness.studyApp)
        let fetch = ParkedFetch(on: app)
        // 1.9 s without an ack: still running. A reply asked for now arrives after anything the
        // fetch's timer, run before it was asked, could have sent on this connection.
        scheduler.advance(seconds: 1.9)
        _ = app.call(.status)
        #expect(fetch.final.withLock { $0 } == nil, "ended before its idle timeout")
        scheduler.advance(seconds: 0.1)
        #expect(DaemonHarness.eventually(5) { fetch.final.withLock { $0 } != nil })
        let final = fetch.final.withLock { $0 }
        #expect(final?.error?.code == .timedOut, "\(String(describing: final))")
        #expect(fetch.batches.withLock { $0 } == 1)
        let admin = try harness.connect(app: nil)
        #expect(admin.call(.daemonStatus).info?["fetches"] == "0")
    }
}
