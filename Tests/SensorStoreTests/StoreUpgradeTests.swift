import Dispatch
import Foundation
import SensorKitModel
import Testing

@testable import SensorStore

/// The store across the change to chunk format 2, and the writer falling behind.
@Suite struct StoreUpgradeTests {
    static let mixedSchema = SampleSchema([
        .integer(name: "counts", scale: 1, offset: 0, unit: ""), .float(name: "level", unit: "V"),
    ])

    /// A database of schema 1 holding a chunk of format 1 (as the previous build left it) opens,
    /// is migrated, and returns every sample of that chunk beside new ones.
    @Test func aSchema1DatabaseWithFormat1ChunksOpensAndReads() throws {
        let fixture = try StoreFixture(StoreTests.noHold)
        let descriptor = StreamDescriptor(
            sensor: .accelerometer, device: "host", source: ["test": .string("upgrade")], schema: Self.mixedSchema)
        let stream = try fixture.opened.register(descriptor)
        let time = fixture.boottime
        fixture.opened.append(
            SampleBatch(
                boot: fixture.clock.bootID, sensorTimes: [time], receiveTimes: [time + 5],
                columns: [.integers([42]), .floats([-0.0])]),
            to: stream)
        try fixture.opened.flush()
        try fixture.opened.close()

        // What the previous build would have left: the old schema version and a format-1 chunk.
        let old = ChunkFormatTests.format1Samples()
        do {
            let db = try SQLiteDatabase(path: fixture.configuration.databasePath)
            let boot = try #require(try db.scalar("SELECT id FROM boots"))
            let insert = try db.prepare(
                "INSERT INTO chunks (stream, boot, tier, min_time, max_time, sample_count, byte_count, bytes) VALUES (?,?,?,?,?,?,?,?)"
            )
            try insert.bind(1, stream.rawValue)
            try insert.bind(2, boot)
            try insert.bind(3, Int64(1))
            try insert.bind(4, old.times.min()!)
            try insert.bind(5, old.times.max()!)
            try insert.bind(6, Int64(old.count))
            try insert.bind(7, Int64(ChunkFormatTests.format1Chunk.count))
            try insert.bind(8, blob: ChunkFormatTests.format1Chunk)
            try insert.run()
            try db.execute("UPDATE streams SET max_chunk_span = \(old.times.max()! - old.times.min()!)")
            // Schema 1 had no receive bounds (added by version 4).
            try db.execute("ALTER TABLE chunks DROP COLUMN min_receive")
            try db.execute("ALTER TABLE chunks DROP COLUMN max_receive")
            try db.execute("UPDATE schema_version SET version = 1")
        }

        try fixture.reopen()
        let db = try SQLiteDatabase(path: fixture.configuration.databasePath)
        #expect(try db.scalar("SELECT version FROM schema_version") == CatalogSchema.currentVersion)
        let expected =
            old.times.indices.map { i in
                StoredRow(
                    time: old.times[i], receive: old.receiveTimes[i],
                    values: [.integer(old.columns[0][i]), .float(Double(bitPattern: UInt64(bitPattern: old.columns[1][i])))])
            } + [StoredRow(time: fixture.sr(time), receive: fixture.sr(time + 5), values: [.integer(42), .float(-0.0)])]
        #expect(try fixture.fetch() == expected)
        // Both chunks predate the receive bounds, so the first-start rule checks their samples one by one.
        #expect(try db.scalar("SELECT count(*) FROM chunks WHERE max_receive IS NULL") == 2)
        let firstStart = old.receiveTimes.sorted()[old.count / 2]
        #expect(
            try fixture.fetch(notBefore: firstStart)
                == expected.filter { min($0.time, $0.receive) >= firstStart })
    }

    /// Appends never block: while the writer is held up, batches that would take it more than
    /// `maxPendingSamples` behind are dropped and recorded as `systemInitiated` gaps; the others
    /// are stored in order once it catches up.
    @Test func batchesBeyondThePendingLimitBecomeGaps() throws {
        let fixture = try StoreFixture {
            StoreTests.noHold(&$0)
            $0.maxPendingSamples = 100
        }
        let stream = try fixture.opened.register(.accelerometer)
        let gate = DispatchSemaphore(value: 0)
        fixture.opened.writer.thread.async { gate.wait() }
        func times(_ range: Range<Int64>) -> [Int64] { range.map { 1_000_000_000 + $0 * 10_000_000 } }
        func columns(_ count: Int) -> [[Int64]] { [[Int64]](repeating: [Int64](repeating: 7, count: count), count: 3) }
        let first = StoreTests.append(fixture, stream, times: times(0..<60), values: columns(60))
        let refused = times(60..<120)
        StoreTests.append(fixture, stream, times: refused, values: columns(60))
        let third = StoreTests.append(fixture, stream, times: times(120..<150), values: columns(30))
        #expect(fixture.opened.pendingSampleCount == 90)
        gate.signal()
        fixture.clock.advance(nanoseconds: 2_000_000_000)
        try fixture.opened.flush()
        #expect(fixture.opened.pendingSampleCount == 0)
        #expect(try fixture.fetch() == first + third)
        let records = try fixture.opened.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max)
        #expect(records.map(\.reason) == [.systemInitiated])
        #expect(records.first?.start == fixture.sr(refused.first!))
        #expect(records.first?.end == fixture.sr(refused.last!))
    }
}
