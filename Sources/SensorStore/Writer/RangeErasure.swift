import Dispatch
import SensorChunks
import SensorKitModel

/// A participant's deletion (docs/store.md, "Deletion by the participant"): every sample of a
/// sensor with sensor time in `(from, to]` leaves the store, in one transaction with the
/// `userInitiated` records that explain it, and the bytes that held them are overwritten.
/// Runs on the writer's thread like the rest of the writer.
extension StoreWriter {
    /// Removes the samples of `sensor` (on every device) with sensor time in `(from, to]`: open
    /// chunks reaching into the range are sealed first, chunks wholly inside go, chunks that
    /// straddle an end are decoded and written again with only the samples outside. Each device
    /// that had a stream of the sensor gets one `userInitiated` record over the range. SQLite's
    /// `secure_delete` zeroes the freed cells and pages, and a truncating checkpoint carries the
    /// zeroes into the database file and empties the write-ahead log; `erased` says whether it
    /// could finish (a reader's snapshot can hold it: the next checkpoint finishes the job).
    func erase(sensor: SRSensor, after from: Int64, through to: Int64) throws -> RangeErasure {
        thread.assertCurrent()
        precondition(from < to, "an erased range is (from, to] with from < to")
        let db = try database()
        storeInbox()
        let streams = registry.all.filter { $0.descriptor.sensor == sensor }
        var report = RangeErasure()
        // The commits below fold the journal; a cut of it meanwhile must not leave its bytes behind.
        erasing = true
        defer { erasing = false }
        try commit()
        try db.execute("PRAGMA secure_delete = ON")
        defer { try? db.execute("PRAGMA secure_delete = OFF") }
        try begin()
        for stream in streams {
            // Samples still in memory or in pieces are sealed, so the chunks below hold them all.
            if var chunk = open.removeValue(forKey: stream.id) {
                defer { open[stream.id] = chunk }
                if !chunk.isEmpty && chunk.minTime <= to {
                    while !chunk.isEmpty { try seal(&chunk, count: min(chunk.count, configuration.chunkMaxSamples)) }
                }
            }
            try eraseChunks(of: stream, after: from, through: to, &report)
        }
        for device in Set(streams.map(\.descriptor.device)).sorted() {
            try insertRecord(
                sensor: sensor, device: device, start: from, end: to, reason: .userInitiated, explainsDeletion: true)
            report.devices.append(device)
        }
        try commit()
        let checkpoint = try db.prepare("PRAGMA wal_checkpoint(TRUNCATE)")
        report.erased = try checkpoint.step() && checkpoint.int64(0) == 0
        checkpoint.reset()
        // The erased samples may still be in the hand-over journal's records, all folded by the
        // commit above: wipe them now, not once the erasure is on the disk (a power cut before
        // that loses only what the participant asked to erase, plus the crash's own record).
        cutFoldedJournal(synced: true, wiping: true)
        return report
    }

    private func eraseChunks(
        of stream: RegisteredStream, after from: Int64, through to: Int64, _ report: inout RangeErasure
    ) throws {
        let db = try database()
        let query = try db.prepare(
            "SELECT id, boot, min_time, max_time, sample_count, bytes FROM chunks WHERE stream = ? AND min_time <= ? AND max_time > ?"
        )
        try query.bind([stream.id.rawValue, to, from])
        var rows: [(id: Int64, boot: Int64, min: Int64, max: Int64, count: Int, bytes: [UInt8])] = []
        while try query.step() {
            rows.append((query.int64(0), query.int64(1), query.int64(2), query.int64(3), query.int(4), query.blob(5)))
        }
        query.reset()
        for row in rows {
            if row.min > from && row.max <= to {
                try deleteChunk(row.id)
                report.samples += row.count
                report.chunks += 1
                continue
            }
            let samples: ChunkSamples
            do {
                samples = try ChunkCodec.decode(row.bytes).samples
                guard samples.columns.count == stream.descriptor.schema.columns.count else {
                    throw ChunkCodecError.malformed("column count")
                }
            } catch {
                // A chunk that cannot be read cannot be cut: it goes whole, the part outside the
                // range explained as any unreadable chunk is.
                try deleteChunk(row.id)
                try insertRecord(
                    sensor: stream.descriptor.sensor, device: stream.descriptor.device, start: row.min, end: row.max,
                    reason: .systemInitiated, explainsDeletion: true)
                report.samples += row.count
                report.chunks += 1
                continue
            }
            let kept = samples.outside(after: from, through: to)
            guard kept.count < samples.count else { continue }
            try deleteChunk(row.id)
            if kept.count > 0 {
                let bytes = encoder.encode(
                    kept, range: 0..<kept.count, roles: stream.descriptor.columnRoles, effort: .best)
                try insertChunk(
                    stream: stream.id, bootRow: row.boot, tier: 1, samples: kept, range: 0..<kept.count, bytes: bytes)
            }
            report.samples += samples.count - kept.count
            report.chunks += 1
        }
    }
}

extension ChunkSamples {
    /// The samples whose sensor time is not in `(from, to]`, in their order.
    func outside(after from: Int64, through to: Int64) -> ChunkSamples {
        let keep = times.indices.filter { times[$0] <= from || times[$0] > to }
        return ChunkSamples(
            times: keep.map { times[$0] }, receiveTimes: keep.map { receiveTimes[$0] },
            columns: columns.map { column in keep.map { column[$0] } })
    }
}

/// What a participant's deletion removed.
public struct RangeErasure: Hashable, Sendable {
    /// Samples removed, and chunks deleted or rewritten.
    public var samples = 0
    public var chunks = 0
    /// The devices that got a `userInitiated` record.
    public var devices: [String] = []
    /// Whether the freed bytes were overwritten in the files already (the checkpoint finished).
    public var erased = false
    public init() {}
}
