import Foundation
import Glibc
import SensorChunks
import SensorKitModel
import Testing

@testable import SensorStore

/// Staged samples (docs/store.md, "Staged samples"): what a source holds and has not handed
/// over, mirrored into a file mapping, comes back after a crash when it continues what the store
/// holds — exactly once, with the crash's deletion record after it — and never otherwise.
@Suite struct StagedSamplesTests {
    typealias Replay = HandOverJournalReplayTests

    /// Stages samples number `numbers` (at `n` × 10 ms boot time, values as `Replay.append`'s).
    static func stage(_ staging: any SampleStaging, _ numbers: ClosedRange<Int64>, continuing: Int64?) {
        for (index, number) in numbers.enumerated() {
            let row = staging.slots + index * 5
            row[0] = number * 10_000_000
            row[1] = number * 10_000_000 + 1_000
            for column in 0..<3 { row[2 + column] = 0x5EC2_E700 + number }
        }
        staging.publish(count: numbers.count, continuing: continuing)
    }

    /// A run whose samples 1…100 are stored (the first batch in SQLite, the rest in the journal).
    static func storedRun() throws -> (StoreFixture, StreamID, [StoredRow]) {
        let fixture = try Replay.fixture()
        let (stream, lead) = try Replay.startRun(fixture)
        let rows = lead + Replay.append(fixture, stream, 11...100)
        try Replay.awaitJournaled(fixture, bytesAbove: 0)
        return (fixture, stream, rows)
    }

    static func srTime(_ fixture: StoreFixture, _ number: Int64) -> Int64 { fixture.sr(number * 10_000_000) }

    @Test(.timeLimit(.minutes(2)))
    func stagedSamplesThatContinueTheStoredOnesSurviveACrashOnce() throws {
        let (fixture, stream, rows) = try Self.storedRun()
        let staging = try fixture.opened.staging(for: stream, capacity: 256)
        // 91…150, continuing sample 90: 91…100 were handed over and stored already.
        Self.stage(staging, 91...150, continuing: 90 * 10_000_000)
        let crashed = try Replay.crashCopy(fixture)
        defer { Replay.remove(crashed) }
        #expect(try Replay.rows(crashed) == rows.map(\.time) + (101...150).map { Self.srTime(fixture, $0) })
        let records = try crashed.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max)
        #expect(records.count == 1 && (records.first?.start ?? 0) > Self.srTime(fixture, 150), "\(records)")
        // Taken in once: the file is gone, and a second open finds nothing more.
        #expect(
            !FileManager.default.fileExists(
                atPath: StagedSamplesFile.path(directory: crashed.configuration.directory, stream: stream)))
        try crashed.flush()
        #expect(try Replay.rows(crashed).count == 150)
    }

    /// Staged samples the store cannot prove continue what it holds stay out — the crash's record
    /// covers them: no continuation (a new run, or after a gap whose record the crash may have
    /// taken), or a continuation past the newest stored sample (a batch handed over and lost).
    @Test(.timeLimit(.minutes(2)), arguments: [nil, Int64(120 * 10_000_000)])
    func stagedSamplesThatDoNotContinueTheStoredOnesStayOut(continuing: Int64?) throws {
        let (fixture, stream, rows) = try Self.storedRun()
        Self.stage(try fixture.opened.staging(for: stream, capacity: 256), 121...150, continuing: continuing)
        let crashed = try Replay.crashCopy(fixture)
        defer { Replay.remove(crashed) }
        #expect(try Replay.rows(crashed) == rows.map(\.time))
        let records = try crashed.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max)
        #expect(
            records.count == 1 && (records.first?.start ?? 0) > rows.last!.time
                && (records.first?.start ?? 0) < Self.srTime(fixture, 121))
    }

    /// The file as the writer leaves it round-trips; anything else — another magic or version, a
    /// size that does not fit its capacity and columns, a count past the capacity, a cut
    /// anywhere — is not taken.
    @Test func theFileRoundTripsAndHostileOnesAreRefused() throws {
        let directory = NSTemporaryDirectory() + "staged-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = try StagedSamplesFile(
            directory: directory, stream: StreamID(rawValue: 7), boot: BootID("boot-a"), anchor: 1_000_000, capacity: 8,
            columns: 3)
        Self.stage(file, 1...5, continuing: 0)
        let path = StagedSamplesFile.path(directory: directory, stream: StreamID(rawValue: 7))
        let bytes = try #require(StoreWriter.readSmallRegularFile(path))
        #expect(bytes.count == StagedSamplesFile.headerSize + 5 * 8 * 8)
        let left = try #require(StagedSamplesFile.parse(bytes))
        #expect(left.stream == 7 && left.boot == "boot-a" && left.anchor == 1_000_000 && left.continuing == 0)
        #expect(left.samples.times == (1...5).map { $0 * 10_000_000 })
        #expect(left.samples.columns == Array(repeating: (1...5).map { 0x5EC2_E700 + $0 }, count: 3))

        for cut in [0, 1, StagedSamplesFile.headerSize - 1, StagedSamplesFile.headerSize, bytes.count - 1] {
            #expect(StagedSamplesFile.parse(Array(bytes[..<cut])) == nil, "cut at \(cut)")
        }
        #expect(StagedSamplesFile.parse(bytes + [0]) == nil)
        func with(_ field: StagedSamplesFile.Field, _ value: Int64) -> [UInt8] {
            var changed = bytes
            withUnsafeBytes(of: value.littleEndian) { changed.replaceSubrange(field.rawValue..<(field.rawValue + 8), with: $0) }
            return changed
        }
        for (field, value) in [
            (StagedSamplesFile.Field.magicAndVersion, Int64(0x2_5453_4B53)), (.capacity, 9), (.capacity, 0), (.capacity, .max),
            (.columns, 2), (.columns, -1), (.count, 9), (.count, -1), (.count, 0), (.continuing, .min),
        ] {
            #expect(StagedSamplesFile.parse(with(field, value)) == nil, "\(field) = \(value)")
        }
        // An empty batch publishes nothing to take.
        file.publish(count: 0, continuing: nil)
        #expect(StagedSamplesFile.parse(try #require(StoreWriter.readSmallRegularFile(path))) == nil)
    }

    /// A clean close removes the files of streams that hold nothing staged.
    @Test(.timeLimit(.minutes(2)))
    func aCleanCloseRemovesEmptyStagingFiles() throws {
        let (fixture, stream, _) = try Self.storedRun()
        let staging = try fixture.opened.staging(for: stream, capacity: 64)
        #expect(staging === (try fixture.opened.staging(for: stream, capacity: 64)))
        Self.stage(staging, 101...110, continuing: 100 * 10_000_000)
        staging.publish(count: 0, continuing: nil)
        let path = StagedSamplesFile.path(directory: fixture.directory, stream: stream)
        #expect(FileManager.default.fileExists(atPath: path))
        try fixture.opened.close()
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
