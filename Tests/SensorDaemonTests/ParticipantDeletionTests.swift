import Foundation
import SensorDaemon
import SensorKit
import SensorKitModel
import SensorSimulation
import Testing

/// A participant deletes recorded data (`deleteData`, docs/protocol.md §3.8; docs/store.md,
/// "Deletion by the participant"): the samples of the range are gone from every app's fetches and
/// from the store's files, every app fetches the range as one `userInitiated` record, a Consenter
/// of the app may and nobody else may.
@Suite(.serialized) struct ParticipantDeletionTests {
    static let study = DaemonHarness.studyApp
    static let other = DaemonHarness.otherApp
    static let accelerometer = SRSensor.accelerometer.rawValue

    /// Half a second of a 50 kHz generated accelerometer, both apps granted and recording;
    /// `nobody` answers for com.example.other (its Consenters) and for nothing else.
    static func recording() throws -> (DaemonHarness, ManualTime) {
        let time = ManualTime()
        // Values that look random (splitmix64 of the index): their chunks hold no repeating runs,
        // so a piece of a chunk found in a file is that chunk.
        let source = GeneratedSource(rate: 50_000, perTick: 5_000, clock: time, scheduler: time) { i in
            var z = UInt64(bitPattern: i) &+ 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            return (Int64(z & 0xFFFF), Int64((z >> 16) & 0xFFFF), Int64((z >> 32) & 0xFFFF))
        }
        let harness = try DaemonHarness(sources: [source], clock: time, scheduler: time) { folder in
            let binding = ["Users": ["root", "nobody"], "Consenters": ["nobody"]]
            let data = try PropertyListSerialization.data(fromPropertyList: binding, format: .xml, options: 0)
            try data.write(to: URL(fileURLWithPath: folder + "/apps.d/\(Self.other)/Binding.plist"))
        }
        for app in [study, other] {
            try harness.grant([.accelerometer], to: app)
            let connection = try harness.connect(app: app)
            #expect(connection.call(.startRecording) { $0.sensor = accelerometer }.error == nil)
            connection.close()
        }
        #expect(DaemonHarness.eventually { source.isRecording })
        #expect(try harness.record(on: time, for: .milliseconds(500), beyond: 25_000))  // all 25 001: nothing more comes
        return (harness, time)
    }

    static func sampleTimes(_ harness: DaemonHarness, app: String) throws -> [Int64] {
        let connection = try harness.connect(app: app)
        defer { connection.close() }
        let fetched = DaemonHarness.fetchAll(connection, sensor: .accelerometer, from: 0, to: harness.now)
        #expect(fetched.reply.ok == true, "\(fetched.reply)")
        return fetched.batches.flatMap(\.sensorTimes)
    }

    /// The stored chunks of the accelerometer that hold a sample of `(from, to]`, as SQLite sees
    /// them (read by the sqlite3 tool, beside the daemon's own connections).
    static func chunkBytes(_ harness: DaemonHarness, from: Int64, to: Int64) throws -> [[UInt8]] {
        let query =
            "SELECT hex(bytes) FROM chunks WHERE stream IN (SELECT id FROM streams WHERE sensor = '\(accelerometer)') AND min_time <= \(to) AND max_time > \(from)"
        let result = try CommandOutput.run(["/usr/bin/sqlite3", "-readonly", harness.folder + "/state/store.sqlite", query])
        #expect(result.status == 0, "\(result.output)")
        return result.output.split(separator: "\n").map { line in
            var bytes: [UInt8] = []
            var index = line.startIndex
            while index < line.endIndex, let next = line.index(index, offsetBy: 2, limitedBy: line.endIndex) {
                bytes.append(UInt8(line[index..<next], radix: 16) ?? 0)
                index = next
            }
            return bytes
        }
    }

    /// Every byte the store keeps on disk: the database, its write-ahead log and index.
    static func storeFiles(_ harness: DaemonHarness) throws -> [UInt8] {
        let folder = harness.folder + "/state"
        var all: [UInt8] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            if let data = FileManager.default.contents(atPath: folder + "/" + name) { all += data }
        }
        return all
    }

    /// 32-byte pieces from inside each chunk (past its header): a chunk's bytes may be split
    /// over SQLite's overflow pages, so several pieces are looked for. Only pieces of many
    /// different bytes: a constant column codes to runs of one byte, which zeroed pages and any
    /// other chunk hold too.
    static func pieces(of chunks: [[UInt8]]) -> [[UInt8]] {
        chunks.flatMap { chunk in
            stride(from: 16, to: max(16, chunk.count - 32), by: max(32, chunk.count / 16)).map { Array(chunk[$0..<$0 + 32]) }
        }.filter { Set($0).count >= 20 }
    }

    static func found(_ pieces: [[UInt8]], in haystack: [UInt8]) -> Int {
        let data = Data(haystack)
        return pieces.filter { data.range(of: Data($0)) != nil }.count
    }

    @Test(.timeLimit(.minutes(3))) func deletedSamplesAreGoneFromFetchesAndFilesAndEveryAppFetchesTheRecord() throws {
        let (harness, _) = try Self.recording()
        defer { harness.stop() }
        let before = try Self.sampleTimes(harness, app: Self.study)
        try #require(before.count == 25_001)
        let from = before[2_000], to = before[18_000]
        let inRange = before.filter { $0 > from && $0 <= to }.count
        let chunks = try Self.chunkBytes(harness, from: from, to: to)
        try #require(!chunks.isEmpty)
        let pieces = Self.pieces(of: chunks)
        // The search can see them: before the deletion the files hold these bytes.
        let visible = Self.found(pieces, in: try Self.storeFiles(harness))
        #expect(visible > pieces.count / 2, "\(visible) of \(pieces.count) pieces of chunks of \(chunks.map(\.count)) bytes")

        let admin = try harness.connect(app: nil)
        defer { admin.close() }
        let reply = admin.call(.deleteData) {
            $0.app = Self.study
            $0.sensors = [Self.accelerometer]
            $0.from = from
            $0.to = to
        }
        #expect(reply.ok == true, "\(reply)")
        #expect(reply.count == inRange)
        #expect(reply.notice == nil, "the checkpoint finished: \(reply)")

        for app in [Self.study, Self.other] {
            let after = try Self.sampleTimes(harness, app: app)
            #expect(after.count == before.count - inRange, "\(app)")
            #expect(!after.contains { $0 > from && $0 <= to }, "\(app) fetches no sample of the range")
            let connection = try harness.connect(app: app)
            let records = DaemonHarness.fetchAll(
                connection, sensor: SRSensor(Self.accelerometer + ".tombstones"), from: 0, to: harness.now)
            connection.close()
            let all = records.batches.flatMap { batch in
                batch.sensorTimes.indices.map {
                    (start: batch.sensorTimes[$0], end: Int64(batch.columns[0][$0]), reason: Int(batch.columns[1][$0]))
                }
            }
            #expect(
                all.contains { $0.start == from && $0.end == to && $0.reason == SRDeletionReason.userInitiated.rawValue },
                "\(app) fetches the userInitiated record: \(all)")
        }
        // The chunks that held the range, cut or whole, are nowhere in the store's files.
        #expect(Self.found(pieces, in: try Self.storeFiles(harness)) == 0)
    }

    @Test(.timeLimit(.minutes(3))) func onlyTheAppsConsentersAndRootMayDeleteAndRangesAreBounded() throws {
        let (harness, _) = try Self.recording()
        defer { harness.stop() }
        let ctl = DaemonHarness.productsFolder + "/sensorkitctl"
        let before = try Self.sampleTimes(harness, app: Self.study)
        try #require(before.count == 25_001)
        let (from, to) = (Double(before[1_000]) / 1e9, Double(before[3_000]) / 1e9)
        let inRange = { (times: [Int64]) in times.filter { $0 > before[1_000] && $0 <= before[2_999] }.count }
        func delete(_ app: String) throws -> (status: Int32, output: String) {
            try DaemonHarness.asNobody([
                ctl, "--socket", harness.socket, "delete", app, "--from", String(from), "--to", String(to), "--sensor",
                "accelerometer",
            ])
        }
        // nobody acts as com.example.other and answers for it; it answers for com.example.study not at all.
        let refused = try delete(Self.study)
        #expect(refused.status == 1, "\(refused.output)")
        #expect(refused.output.contains("only its Consenters and root may"), "\(refused.output)")
        #expect(inRange(try Self.sampleTimes(harness, app: Self.study)) == 1_999, "nothing was deleted")

        let allowed = try delete(Self.other)
        #expect(allowed.status == 0, "\(allowed.output)")
        #expect(allowed.output.contains("deleted"), "\(allowed.output)")
        // The data is the sensor's: the study loses it too.
        #expect(inRange(try Self.sampleTimes(harness, app: Self.study)) == 0, "\(allowed.output)")

        let admin = try harness.connect(app: nil)
        defer { admin.close() }
        let tooWide = admin.call(.deleteData) {
            $0.app = Self.study
            $0.from = harness.now - 9 * 86_400_000_000_000
            $0.to = harness.now
        }
        #expect(tooWide.error?.code == .malformedRequest, "\(tooWide)")
        let notEntitled = admin.call(.deleteData) {
            $0.app = Self.other
            $0.sensors = [SRSensor.ambientLightSensor.rawValue]
            $0.from = 0
            $0.to = harness.now
        }
        #expect(notEntitled.error?.code == .invalidEntitlement, "\(notEntitled)")
    }
}
