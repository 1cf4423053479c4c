import Foundation
import Glibc
import SensorChunks
import SensorKitModel
import Testing

@testable import SensorStore

/// The journal's record format: every input is hostile, a file a crash tore included.
@Suite struct HandOverJournalCodecTests {
    static func record(_ generation: UInt64, stream: Int64 = 3, bytes: Int = 40) -> HandOverJournal.Record {
        HandOverJournal.Record(
            generation: generation, stream: stream, bootRow: 1, count: 5,
            bytes: (0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(generation)) })
    }

    static func encoded(_ records: [HandOverJournal.Record]) -> [UInt8] {
        var bytes: [UInt8] = []
        for record in records { HandOverJournal.encode(record, into: &bytes) }
        return bytes
    }

    @Test func recordsRoundTrip() {
        let records = [Self.record(1), Self.record(1, stream: 4, bytes: 0), Self.record(2, bytes: 1_000)]
        let bytes = Self.encoded(records)
        let parsed = HandOverJournal.parse(bytes)
        #expect(parsed.records == records)
        #expect(parsed.end == bytes.count)
        #expect(bytes.count == 3 * (HandOverJournal.prefixSize + HandOverJournal.fixedBodySize) + 1_040)
    }

    @Test func aPayloadHoldsItsSamplesAsPlainColumnsAndOnlyThoseFit() throws {
        let samples = ChunkSamples(
            times: [10, 20, 30, .max], receiveTimes: [11, 21, 31, .min], columns: [[1, -1, 0, .min], [7, 8, 9, 10]])
        let payload = HandOverJournal.payload(samples, range: 1..<4)
        #expect(payload.count == 3 * 4 * 8)
        let back = try #require(HandOverJournal.samples(payload, count: 3, columnCount: 2))
        #expect(
            back == ChunkSamples(times: [20, 30, .max], receiveTimes: [21, 31, .min], columns: [[-1, 0, .min], [8, 9, 10]]))
        // A count or a column count that does not fit the bytes exactly is refused, as are absurd ones.
        for (count, columns) in [(2, 2), (4, 2), (3, 1), (3, 3), (0, 2), (-3, 2), (3, -1), (.max, 2), (3, .max - 1)] {
            #expect(HandOverJournal.samples(payload, count: count, columnCount: columns) == nil, "\(count), \(columns)")
        }
    }

    /// A crash tears the last record anywhere: what parses is the records before it, and the
    /// end is where the torn one starts (the file is cut there).
    @Test func aTornLastRecordEndsTheJournalWhereItStarts() {
        let first = Self.encoded([Self.record(1)])
        let bytes = first + Self.encoded([Self.record(2, bytes: 100)])
        for cut in first.count..<bytes.count {
            let parsed = HandOverJournal.parse(Array(bytes[..<cut]))
            #expect(parsed.records == [Self.record(1)], "cut at \(cut)")
            #expect(parsed.end == first.count, "cut at \(cut)")
        }
    }

    @Test func aDamagedByteAnywhereStopsTheParseAtItsRecord() {
        let first = Self.encoded([Self.record(1)])
        let bytes = first + Self.encoded([Self.record(2)]) + Self.encoded([Self.record(3)])
        let second = first.count..<(2 * first.count)
        for index in second where !(12..<16).contains(index - second.lowerBound) {  // the reserved word is not checked
            var damaged = bytes
            damaged[index] ^= 0x20
            let parsed = HandOverJournal.parse(damaged)
            #expect(parsed.records == [Self.record(1)], "byte \(index)")
            #expect(parsed.end == first.count)
        }
    }

    @Test func impossibleLengthsAndCountsAreRefused() {
        func header(length: UInt32) -> [UInt8] {
            var bytes: [UInt8] = []
            for field in [HandOverJournal.magic, length, 0, 0] { withUnsafeBytes(of: field.littleEndian) { bytes += $0 } }
            return bytes
        }
        for length in [0, UInt32(HandOverJournal.fixedBodySize - 1), UInt32.max, UInt32(HandOverJournal.maxBodySize + 1)] {
            #expect(HandOverJournal.parse(header(length: length) + [UInt8](repeating: 0, count: 200)).end == 0)
        }
        // A whole record with a checksum that matches but no samples: nothing a writer appends.
        var empty = Self.record(1)
        empty.count = 0
        #expect(HandOverJournal.parse(Self.encoded([empty])).records.isEmpty)
        #expect(HandOverJournal.parse([]).end == 0)
        #expect(HandOverJournal.parse([0x53, 0x4B]).end == 0)
    }
}

/// The journal's file: opened owner-only, never through a link, cut after its last whole record.
@Suite struct HandOverJournalFileTests {
    static func scratch() -> String {
        let directory = NSTemporaryDirectory() + "handover-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test func aTornTailIsCutAndTheNextAppendFollowsTheLastWholeRecord() throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/store.handover"
        let whole = HandOverJournalCodecTests.encoded([HandOverJournalCodecTests.record(1)])
        let torn = HandOverJournalCodecTests.encoded([HandOverJournalCodecTests.record(2)])
        try Data(whole + torn.prefix(30)).write(to: URL(fileURLWithPath: path))

        let journal = try HandOverJournal(path: path)
        #expect(try journal.recover() == [HandOverJournalCodecTests.record(1)])
        #expect(journal.size == whole.count)
        let third = HandOverJournalCodecTests.encoded([HandOverJournalCodecTests.record(3)])
        try journal.append(third)
        journal.close()
        let onDisk = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(onDisk == whole + third)
    }

    @Test func aLinkOrADirectoryInItsPlaceIsRefused() throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let target = directory + "/elsewhere"
        _ = FileManager.default.createFile(atPath: target, contents: Data())
        try FileManager.default.createSymbolicLink(atPath: directory + "/store.handover", withDestinationPath: target)
        #expect(throws: (any Error).self) { try HandOverJournal(path: directory + "/store.handover") }
        try FileManager.default.createDirectory(atPath: directory + "/dir", withIntermediateDirectories: false)
        #expect(throws: (any Error).self) { try HandOverJournal(path: directory + "/dir") }
    }

    @Test func aWipingEmptyOverwritesBeforeItCuts() throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let journal = try HandOverJournal(path: directory + "/store.handover")
        let status = try FileManager.default.attributesOfItem(atPath: directory + "/store.handover")
        #expect((status[.posixPermissions] as? Int) == 0o600, "a new journal is the owner's only")
        try journal.append(HandOverJournalCodecTests.encoded([HandOverJournalCodecTests.record(1, bytes: 3_000)]))
        try journal.removeAll(wiping: true)
        #expect(journal.size == 0)
        #expect(try journal.recover().isEmpty)
    }
}

/// The writer with the journal: what a crash leaves is replayed once, never twice, and never
/// what the participant erased. A crash is a copy of the store's files taken while it runs
/// (the database, its write-ahead log and the journal), opened as the daemon would open them.
@Suite struct HandOverJournalReplayTests {
    static func fixture() throws -> StoreFixture {
        try StoreFixture {
            StoreTests.noHold(&$0)
            $0.commitInterval = 0.05  // real ticks, each one append to the journal
            $0.syncInterval = 3_600  // and no fold but the ones a test asks for
        }
    }

    /// Registers the accelerometer and commits the first 10 samples of its run: a run's first
    /// batch goes to SQLite with the row that marks the run live (Crash contract), the next ones
    /// to the journal. Samples every 10 ms from boot time 10 ms.
    static func startRun(_ fixture: StoreFixture) throws -> (StreamID, [StoredRow]) {
        let stream = try fixture.opened.register(.accelerometer)
        let rows = append(fixture, stream, 1...10)
        try fixture.opened.flush()
        return (stream, rows)
    }

    /// Appends samples number `numbers` (at `n` × 10 ms, each value a recognizable pattern).
    @discardableResult
    static func append(_ fixture: StoreFixture, _ stream: StreamID, _ numbers: ClosedRange<Int64>) -> [StoredRow] {
        let values = numbers.map { 0x5EC2_E700 + $0 }
        return StoreTests.append(fixture, stream, times: numbers.map { $0 * 10_000_000 }, values: [values, values, values])
    }

    static func journalSize(_ fixture: StoreFixture) -> Int {
        let writer = fixture.opened.writer
        return writer.thread.sync { writer.journal?.size ?? -1 }
    }

    /// Waits until the writer has appended samples to the journal and holds nothing else.
    static func awaitJournaled(_ fixture: StoreFixture, bytesAbove: Int) throws {
        let start = Date()
        while journalSize(fixture) <= bytesAbove {
            try #require(Date().timeIntervalSince(start) < 10, "nothing reached the journal")
            Thread.sleep(forTimeInterval: 0.01)
        }
        let writer = fixture.opened.writer
        while (writer.thread.sync { writer.open.values.contains { $0.hasUncommittedSamples } }) {
            try #require(Date().timeIntervalSince(start) < 10, "samples stayed uncommitted")
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    /// The store's files as a crash now would leave them, opened in a folder of their own.
    static func crashCopy(_ fixture: StoreFixture, journalOn: Bool = true) throws -> SensorStore {
        let copy = NSTemporaryDirectory() + "sensorstore-crashcopy-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        let writer = fixture.opened.writer
        try writer.thread.sync {
            for name in try FileManager.default.contentsOfDirectory(atPath: fixture.directory) {
                try FileManager.default.copyItem(atPath: fixture.directory + "/" + name, toPath: copy + "/" + name)
            }
        }
        var configuration = fixture.configuration
        configuration.directory = copy
        configuration.handOverJournal = journalOn
        return try SensorStore(configuration: configuration, clock: fixture.clock, timeline: fixture.timeline)
    }

    static func rows(_ store: SensorStore) throws -> [Int64] {
        let cursor = try store.samples(sensor: .accelerometer, device: "host", from: .min, to: .max)
        var times: [Int64] = []
        while let block = try cursor.next() { times += (0..<block.count).map { block.sensorTime(at: $0) } }
        return times
    }

    static func remove(_ store: SensorStore) {
        try? store.close()
        try? FileManager.default.removeItem(atPath: store.configuration.directory)
    }

    @Test(.timeLimit(.minutes(2)))
    func samplesOnlyTheJournalHoldsSurviveACrash() throws {
        let fixture = try Self.fixture()
        let (stream, lead) = try Self.startRun(fixture)
        let expected = lead + Self.append(fixture, stream, 11...300)
        try Self.awaitJournaled(fixture, bytesAbove: 0)
        // Only the run's first batch is in SQLite: the journal alone holds the rest.
        let writer = fixture.opened.writer
        #expect(writer.thread.sync { writer.open[stream]?.durableCount } == 10)

        let crashed = try Self.crashCopy(fixture)
        defer { Self.remove(crashed) }
        #expect(try Self.rows(crashed) == expected.map(\.time))
        // The crash record starts after the last replayed sample: nothing it covers was kept.
        let records = try crashed.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max)
        #expect(records.count == 1)
        #expect((records.first?.start ?? 0) > expected.last!.time)
        // Replayed once: the replay's own fold marks them, so a second crash replays nothing again.
        try crashed.flush()
        #expect(try Self.rows(crashed).count == 300)
    }

    @Test(.timeLimit(.minutes(2)))
    func aJournalSwitchedOffAfterACrashIsStillReplayedAndThenRemoved() throws {
        let fixture = try Self.fixture()
        let (stream, lead) = try Self.startRun(fixture)
        let expected = lead + Self.append(fixture, stream, 11...120)
        try Self.awaitJournaled(fixture, bytesAbove: 0)
        let crashed = try Self.crashCopy(fixture, journalOn: false)
        defer { Self.remove(crashed) }
        #expect(try Self.rows(crashed) == expected.map(\.time))
        #expect(!FileManager.default.fileExists(atPath: crashed.configuration.journalPath))
    }

    @Test(.timeLimit(.minutes(2)))
    func foldedRecordsAreNotReplayedTwice() throws {
        // Against a power cut the journal keeps folded records until a synced commit.
        let fixture = try StoreFixture {
            StoreTests.noHold(&$0)
            $0.commitInterval = 0.05
            $0.syncInterval = 3_600
            $0.durability = .powerLoss
        }
        let (stream, lead) = try Self.startRun(fixture)
        let first = lead + Self.append(fixture, stream, 11...100)
        try Self.awaitJournaled(fixture, bytesAbove: 0)
        // A reader reaching the journal's samples folds them; the journal keeps the folded
        // records until that commit is on the disk (here: until the store promises that).
        #expect(try fixture.fetch().map(\.time) == first.map(\.time))
        let folded = Self.journalSize(fixture)
        #expect(folded > 0, "the folded records wait for a synced commit")
        let second = Self.append(fixture, stream, 101...200)
        try Self.awaitJournaled(fixture, bytesAbove: folded)

        let crashed = try Self.crashCopy(fixture)
        defer { Self.remove(crashed) }
        #expect(try Self.rows(crashed) == (first + second).map(\.time))
    }

    @Test(.timeLimit(.minutes(2)))
    func erasedSamplesLeaveTheJournalAndAreNotResurrected() throws {
        let fixture = try Self.fixture()
        let (stream, lead) = try Self.startRun(fixture)
        let rows = lead + Self.append(fixture, stream, 11...200)
        try Self.awaitJournaled(fixture, bytesAbove: 0)
        _ = try fixture.opened.erase(sensor: .accelerometer, after: rows[49].time, through: rows[149].time)
        #expect(Self.journalSize(fixture) == 0)
        let onDisk = try [UInt8](Data(contentsOf: URL(fileURLWithPath: fixture.configuration.journalPath)))
        #expect(onDisk.isEmpty)

        let crashed = try Self.crashCopy(fixture)
        defer { Self.remove(crashed) }
        #expect(try Self.rows(crashed) == (rows[..<50] + rows[150...]).map(\.time))
    }

    @Test(.timeLimit(.minutes(2)))
    func aCleanCloseLeavesAnEmptyJournalAndEverySample() throws {
        let fixture = try Self.fixture()
        let (stream, lead) = try Self.startRun(fixture)
        let rows = lead + Self.append(fixture, stream, 11...100)
        try Self.awaitJournaled(fixture, bytesAbove: 0)
        try fixture.reopen()
        #expect(Self.journalSize(fixture) == 0)
        #expect(try fixture.fetch().map(\.time) == rows.map(\.time))
        #expect(try fixture.opened.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max).isEmpty)
    }

    /// Off, every tick commits to SQLite as before and the journal file is never made.
    @Test(.timeLimit(.minutes(2)))
    func switchedOffNoJournalIsWritten() throws {
        let fixture = try StoreFixture {
            StoreTests.noHold(&$0)
            $0.commitInterval = 0.05
            $0.handOverJournal = false
        }
        let (stream, _) = try Self.startRun(fixture)
        Self.append(fixture, stream, 11...100)
        let writer = fixture.opened.writer
        let start = Date()
        while (writer.thread.sync { writer.open[stream]?.durableCount ?? 0 }) < 100 {
            try #require(Date().timeIntervalSince(start) < 10)
            Thread.sleep(forTimeInterval: 0.01)
        }
        #expect(!FileManager.default.fileExists(atPath: fixture.configuration.journalPath))
    }
}
