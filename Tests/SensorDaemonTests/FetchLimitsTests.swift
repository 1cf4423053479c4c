import Dispatch
import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import SensorTestKit
import Synchronization
import Testing

@testable import SensorDaemon

/// Running fetches are bounded per Unix user and in all, from the descriptors the daemon has
/// left, so one app cannot exhaust them and never denies another app's fetch (docs/protocol.md
/// §6.2, docs/reliability.md "Descriptors").
@Suite(.serialized) struct FetchLimitsTests {
    @Test func aUserGetsItsShareAndTheRestStaysForOthers() {
        var admission = FetchAdmission(total: 5, perUser: 2)
        #expect(admission.admit(1000) == nil && admission.admit(1000) == nil)
        #expect(admission.admit(1000)?.contains("max-fetches-per-user") == true)
        #expect(admission.admit(0) == nil && admission.admit(0) == nil && admission.admit(65534) == nil)
        #expect(admission.admit(42)?.contains("max-fetches)") == true)
        admission.release(1000)
        #expect(admission.admit(42) == nil)
        admission.release(7)  // never admitted: changes nothing
        #expect(admission.running == 5 && admission.runningPerUser[1000] == 1)
    }

    @Test func limitsComeFromTheDescriptorsLeft() {
        // LimitNOFILE=1024 with 40 open: 128 kept for recording, a quarter of the other 856 for
        // the store's readers (two descriptors each, four of them for health and devices).
        let limits = ReaderLimits(.init(), openFiles: 1024, inUse: 40)
        #expect(limits.maxConnections == 642 && limits.maxConnectionsPerUser == 80)
        #expect(limits.maxFetches == 103 && limits.maxFetchesPerUser == 12 && limits.maxStoreReaders == 107)
        #expect(
            limits.maxConnections + limits.maxStoreReaders * ReaderLimits.descriptorsPerStoreReader + 40
                + ReaderLimits.reserve(openFiles: 1024) <= 1024)
        // Almost nothing left: still one fetch each, never a negative count.
        let tight = ReaderLimits(.init(), openFiles: 96, inUse: 90)
        #expect(tight.maxFetches >= 1 && tight.maxFetchesPerUser >= 1 && tight.maxConnections >= 1)
    }

    /// Descriptors this process holds for one daemon: the server ends of connections to its
    /// socket (the kernel names them by the listener's path in /proc/net/unix) and files under
    /// its folder (the store's database and logs). Other tests run in the same process at the
    /// same time, so the process's whole count would measure them too.
    static func descriptorsOpen(by harness: DaemonHarness) -> Int {
        let listed = (try? String(contentsOfFile: "/proc/net/unix", encoding: .utf8)) ?? ""
        var served = Set<Substring>()
        for line in listed.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.count >= 8, fields[7] == harness.socket { served.insert(fields[6]) }
        }
        guard let entries = try? SystemCalls.directoryEntries("/proc/self/fd") else { return -1 }
        return entries.reduce(0) { count, entry in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry)
            else { return count }
            if target.hasPrefix(harness.folder + "/") { return count + 1 }
            if target.hasPrefix("socket:["), served.contains(target.dropFirst(8).dropLast()) { return count + 1 }
            return count
        }
    }

    @Test(.timeLimit(.minutes(3))) func oneAppFloodingFetchesNeitherExhaustsDescriptorsNorDeniesAnother() throws {
        // 20 kHz: each fetch below has more than one batch (8,192 samples), so with a window of
        // one and no acks it stays running.
        // Eight fetches per user, as a daemon under LimitNOFILE=640 derives (the derivation is
        // checked above); the test process itself has far more descriptors.
        // Two seconds of recording pass at once on time moved by hand.
        let time = ManualTime()
        let source = GeneratedSource(rate: 20_000, perTick: 2_000, clock: time, scheduler: time)
        let harness = try DaemonHarness(
            config: "profile = lab\n[reader]\nmax-fetches-per-user = 8\n", sources: [source], clock: time, scheduler: time)
        defer { harness.stop() }
        try harness.grant([.accelerometer], to: DaemonHarness.studyApp)
        try harness.grant([.accelerometer], to: DaemonHarness.otherApp)
        for app in [DaemonHarness.studyApp, DaemonHarness.otherApp] {
            let connection = try harness.connect(app: app)
            #expect(connection.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }.error == nil)
            connection.close()
        }
        #expect(DaemonHarness.eventually { source.isRecording })
        #expect(try harness.record(on: time, for: .seconds(2), beyond: 39_999, app: DaemonHarness.otherApp))
        guard let line = harness.logLines().first(where: { $0.contains("reader limits:") }),
            let perUser = line.firstMatch(of: /(\d+) fetches running, (\d+) per user/).map({ Int($0.2)! })
        else {
            Issue.record("no reader limits in the log")
            return
        }
        let script = harness.folder + "/fetch_flood.py"
        try FileManager.default.copyItem(atPath: ReaderChurnTests.top.path + "/scripts/soak/fetch_flood.py", toPath: script)
        chmod(script, 0o755)

        // Another user opens 20 connections with 16 fetches each — far more than its share — and
        // never acknowledges a batch.
        let connections = 20
        let before = Self.descriptorsOpen(by: harness)
        let flood = DispatchGroup()
        let result = Mutex<(status: Int32, output: String)>((-1, ""))
        // On a thread of its own, not a libdispatch worker: the daemon in this process needs
        // those for its connections (ReaderChurnTests says why).
        flood.enter()
        Thread {
            defer { flood.leave() }
            let outcome =
                (try? DaemonHarness.asNobody([
                    "/usr/bin/timeout", "60", TestEnvironment.python, script, harness.socket,
                    DaemonHarness.otherApp, String(connections), "16", "6",
                ])) ?? (-1, "did not start")
            result.withLock { $0 = outcome }
        }.start()
        var peak = before
        let watchEnd = Date().addingTimeInterval(2)
        while Date() < watchEnd {
            peak = max(peak, Self.descriptorsOpen(by: harness))
            usleep(10_000)
        }
        // Meanwhile the study app (root) fetches everything it recorded, and gets it.
        let app = try harness.connect(app: DaemonHarness.studyApp)
        defer { app.close() }
        let start = Date()
        let (batches, reply) = DaemonHarness.fetchAll(app, sensor: .accelerometer, from: 0, to: harness.now, timeout: 30)
        let seconds = Date().timeIntervalSince(start)
        peak = max(peak, Self.descriptorsOpen(by: harness))
        flood.wait()
        let floodResult = result.withLock { $0 }

        #expect(reply.error == nil, "the other app's fetch failed during the flood: \(reply.error.map { "\($0)" } ?? "")")
        #expect(batches.reduce(0) { $0 + $1.count } >= 40_000)
        #expect(seconds < 20, "the other app's fetch took \(seconds) s during the flood")
        #expect(floodResult.status == 0, "\(floodResult.output)")
        let counts =
            floodResult.output.firstMatch(of: /started: (\d+), fetches refused with error 103: (\d+)/)
            .map { [Int($0.1)!, Int($0.2)!] } ?? []
        #expect(
            counts.count == 2 && counts[0] <= perUser && counts[1] >= 100,
            "flooder: \(floodResult.output) (\(perUser) fetches per user)")
        // Descriptors: the flooder's sockets, and at most two per store reader of its share, with
        // the study app's own connection and fetch and a few spare readers (health, devices).
        let grown = peak - before
        #expect(peak > before, "the flood was not seen in the daemon's descriptors")
        #expect(
            grown <= connections + perUser * ReaderLimits.descriptorsPerStoreReader
                + (1 + ReaderLimits.spareStoreReaders) * ReaderLimits.descriptorsPerStoreReader + 1,
            "descriptors grew by \(grown) during the flood (\(perUser) fetches per user)")
        print(
            "fetch flood: \(floodResult.output.trimmingCharacters(in: .whitespacesAndNewlines)); descriptors +\(grown) at the peak; the other app's fetch of \(batches.reduce(0) { $0 + $1.count }) samples took \(String(format: "%.2f", seconds)) s"
        )
    }
}
