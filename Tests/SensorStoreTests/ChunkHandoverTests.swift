import Foundation
import SensorKitModel
import Testing

@testable import SensorChunks
@testable import SensorStore

/// `SampleCursor.next(handingOver:)`: whole stored chunks handed over undecoded (the fetch path
/// that lets a client decode them) must add up to exactly what the decoded path returns, and no
/// chunk reaching outside the range, out of time order or corrupt may ever be handed over.
@Suite struct ChunkHandoverTests {
    static let everyFormat = SampleCursor.Handover(formats: Set(ChunkCodec.readableVersions), maxBytes: .max)

    /// Rows through `next(handingOver:)`, chunks decoded here as a client would; and how many
    /// samples came as chunks.
    static func fetchHandingOver(
        _ fixture: StoreFixture, _ handover: SampleCursor.Handover, from: Int64 = .min,
        to: Int64 = .max, notBefore: Int64 = .min
    ) throws -> (rows: [StoredRow], handedOver: Int) {
        let cursor = try fixture.opened.samples(sensor: .accelerometer, device: "host", from: from, to: to, notBefore: notBefore)
        var rows: [StoredRow] = []
        var handedOver = 0
        while let item = try cursor.next(handingOver: handover) {
            switch item {
            case .block(let block):
                for index in 0..<block.count {
                    rows.append(
                        StoredRow(
                            time: block.sensorTime(at: index), receive: block.receiveTime(at: index),
                            values: block.values(at: index)))
                }
            case .chunk(let chunk):
                let columns = try chunk.bytes.withUnsafeBytes { try StoredChunk.decode($0) }
                #expect(columns.sensorTimes.count == chunk.count && columns.timesNonDecreasing)
                for index in 0..<chunk.count {
                    rows.append(
                        StoredRow(
                            time: columns.sensorTimes[index], receive: columns.receiveTimes[index],
                            values: columns.values.map { .integer($0[index]) }))
                }
                handedOver += chunk.count
            }
        }
        return (rows, handedOver)
    }

    static func filledStore(seconds: Int = 20) throws -> (StoreFixture, times: [Int64]) {
        let fixture = try StoreFixture {
            $0.retention = RetentionPolicy(hold: 0, window: 7 * StoreFixture.day)
            $0.chunkMaxSamples = 300
        }
        let stream = try fixture.opened.register(.accelerometer)
        let reference = referenceAccelerometer(seconds: seconds)
        StoreTests.append(fixture, stream, times: reference.times, values: reference.axes)
        fixture.clock.advance(seconds: 10_000)
        try fixture.opened.flush()
        return (fixture, reference.times)
    }

    @Test func wholeChunksAreHandedOverAndBoundaryChunksDecoded() throws {
        let (fixture, times) = try Self.filledStore()
        let all = try fixture.fetch()
        let whole = try Self.fetchHandingOver(fixture, Self.everyFormat)
        #expect(whole.rows == all)
        #expect(whole.handedOver == all.count, "every chunk lies inside an unbounded range")

        // Ranges cutting chunks anywhere, to the nanosecond: the same rows as the decoded path.
        var random = SeededGenerator(seed: 7)
        var (handedOver, decoded) = (0, 0)
        for _ in 0..<40 {
            let a = fixture.sr(times[Int(random.next() % UInt64(times.count))]) + Int64(random.next() % 3) - 1
            let b = fixture.sr(times[Int(random.next() % UInt64(times.count))]) + Int64(random.next() % 3) - 1
            let (from, to) = (min(a, b), max(a, b))
            let notBefore = random.next() % 3 == 0 ? fixture.sr(times[times.count / 2]) : Int64.min
            let expected = try fixture.fetch(from: from, to: to, notBefore: notBefore)
            let got = try Self.fetchHandingOver(fixture, Self.everyFormat, from: from, to: to, notBefore: notBefore)
            #expect(got.rows == expected)
            #expect(got.rows.allSatisfy { $0.time > from && $0.time <= to })
            handedOver += got.handedOver
            decoded += got.rows.count - got.handedOver
        }
        #expect(handedOver > 0 && decoded > 0, "both paths were exercised")
    }

    @Test func formatsTheReceiverCannotReadAndOversizedChunksAreDecodedHere() throws {
        let (fixture, _) = try Self.filledStore(seconds: 10)
        let all = try fixture.fetch()
        let noFormat = try Self.fetchHandingOver(fixture, SampleCursor.Handover(formats: [1], maxBytes: .max))
        #expect(noFormat.rows == all && noFormat.handedOver == 0)
        let tooSmall = try Self.fetchHandingOver(
            fixture, SampleCursor.Handover(formats: [ChunkCodec.formatVersion], maxBytes: 16))
        #expect(tooSmall.rows == all && tooSmall.handedOver == 0)
    }

    @Test func overlappingChunksAreMergedNotHandedOver() throws {
        let (fixture, times) = try Self.filledStore(seconds: 5)
        // A late batch whose times fall among the stored ones: those chunks must be merged.
        let stream = try fixture.opened.register(.accelerometer)
        let late = stride(from: times[100] + 1, to: times[400], by: 50_000_000).map { $0 }
        StoreTests.append(fixture, stream, times: late, values: [late.map { _ in 1 }, late.map { _ in 2 }, late.map { _ in 3 }])
        try fixture.opened.flush()
        let all = try fixture.fetch()
        let got = try Self.fetchHandingOver(fixture, Self.everyFormat)
        #expect(got.rows == all)
        #expect(got.handedOver < all.count - 300)
    }

    @Test func aCorruptChunkIsReportedAndNeverHandedOver() throws {
        let (fixture, _) = try Self.filledStore(seconds: 10)
        try fixture.opened.close()
        let db = try SQLiteDatabase(path: fixture.configuration.databasePath)
        let select = try db.prepare(
            "SELECT id, min_time, max_time, sample_count, bytes FROM chunks ORDER BY min_time LIMIT 1 OFFSET 1")
        #expect(try select.step())
        let (id, minTime, maxTime, count) = (select.int64(0), select.int64(1), select.int64(2), select.int(3))
        var bytes = select.blob(4)
        select.reset()
        bytes[bytes.count / 2] ^= 0x04  // one bit: the checksum no longer matches
        let update = try db.prepare("UPDATE chunks SET bytes = ? WHERE id = ?")
        try update.bind(1, blob: bytes)
        try update.bind(2, id)
        _ = try update.step()
        try fixture.reopen()
        let got = try Self.fetchHandingOver(fixture, Self.everyFormat)
        #expect(got.rows.count == 1_000 - count)
        #expect(!got.rows.contains { $0.time >= minTime && $0.time <= maxTime })
        #expect(got.handedOver == got.rows.count)
        #expect(try fixture.fetch() == got.rows)
        try fixture.opened.flush()
        let records = try fixture.opened.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max)
        #expect(records.map { [$0.start, $0.end] } == [[minTime, maxTime]])
    }
}
