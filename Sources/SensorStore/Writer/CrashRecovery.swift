import SensorChunks
import SensorKitModel

/// Crash recovery (docs/store.md, crash contract): what `start` does before the writer takes
/// appends — the pieces a crash left are sealed, and the recording runs it ended get their
/// deletion records. Runs on the writer's thread like the rest of the writer.
extension StoreWriter {
    /// Seals the pieces a crash left behind (tier-0 rows) into sealed chunks, per stream and
    /// boot, in arrival order. Pieces that fail their checksum become `systemInitiated` records.
    func recoverPieces() throws {
        let db = try database()
        let pieces = try db.prepare(
            "SELECT id, stream, boot, min_time, max_time, bytes FROM chunks WHERE tier = 0 ORDER BY stream, id")
        var groups: [(stream: StreamID, boot: Int64, ids: [Int64], samples: ChunkSamples)] = []
        var corrupt: [(id: Int64, stream: StreamID, min: Int64, max: Int64)] = []
        while try pieces.step() {
            let id = pieces.int64(0)
            let stream = StreamID(rawValue: pieces.int64(1))
            let boot = pieces.int64(2)
            guard let descriptor = registry.descriptor(stream) else { continue }
            let decoded: ChunkSamples
            do {
                decoded = try ChunkCodec.decode(pieces.blob(5)).samples
                guard decoded.columns.count == descriptor.schema.columns.count else {
                    throw ChunkCodecError.malformed("column count")
                }
            } catch {
                corrupt.append((id, stream, pieces.int64(3), pieces.int64(4)))
                continue
            }
            if let last = groups.last, last.stream == stream, last.boot == boot {
                groups[groups.count - 1].ids.append(id)
                groups[groups.count - 1].samples.append(contentsOf: decoded)
            } else {
                groups.append((stream, boot, [id], decoded))
            }
        }
        guard !groups.isEmpty || !corrupt.isEmpty else { return }
        try begin()
        for piece in corrupt {
            try deleteChunk(piece.id)
            if let descriptor = registry.descriptor(piece.stream) {
                try insertRecord(
                    sensor: descriptor.sensor, device: descriptor.device, start: piece.min, end: piece.max,
                    reason: .systemInitiated, explainsDeletion: true)
            }
        }
        for group in groups {
            guard let descriptor = registry.descriptor(group.stream) else { continue }
            var chunk = OpenChunk(stream: group.stream, roles: descriptor.columnRoles, bootRow: group.boot)
            chunk.append(group.samples, shift: 0)
            chunk.pieceIDs = group.ids
            chunk.durableCount = chunk.count
            while !chunk.isEmpty { try seal(&chunk, count: min(chunk.count, configuration.chunkMaxSamples)) }
        }
        try commit()
    }

    /// Records what a crash or power cut took (docs/store.md, crash contract): for every stream
    /// whose run was still open (a `live_streams` row), the span from its last committed sample
    /// — or the run's first sample, if none of the run was committed — to now, the restart, as
    /// `systemInitiated`. Times are SR ns, so a span across a reboot includes the time the
    /// machine was off. Streams that were not recording have no row and get no record. Returns
    /// the records written (the daemon logs them).
    func recordRunsEndedByCrash() throws -> [StoredDeletionRecord] {
        let db = try database()
        let rows = try db.prepare("SELECT stream, since FROM live_streams ORDER BY stream")
        var runs: [(stream: StreamID, since: Int64)] = []
        while try rows.step() { runs.append((StreamID(rawValue: rows.int64(0)), rows.int64(1))) }
        rows.reset()
        guard !runs.isEmpty else { return [] }
        guard let now = timeline.withLock({ $0.srNanoseconds(of: clock.now()) }) else {
            throw StoreError.currentBootNotAdopted
        }
        var losses: [StoredDeletionRecord] = []
        try begin()
        for run in runs {
            guard let descriptor = registry.descriptor(run.stream) else { continue }
            // From just after the last sample the database keeps: that one is not lost.
            let start = max(try lastCommittedTime(run.stream).map { $0 &+ 1 } ?? run.since, run.since)
            guard now > start else { continue }
            try insertRecord(
                sensor: descriptor.sensor, device: descriptor.device, start: start, end: now,
                reason: .systemInitiated)
            losses.append(
                StoredDeletionRecord(
                    sensor: descriptor.sensor, device: descriptor.device, start: start,
                    end: now, reason: .systemInitiated))
        }
        try db.execute("DELETE FROM live_streams")
        try commit()
        return losses
    }
}
