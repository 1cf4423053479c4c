import Dispatch
import SensorKitModel

/// One source of samples and deletion records: a sensor on a device. Records are kept per
/// source, chunks per stream (a source has one stream, or a few after its descriptor changed).
struct SourceKey: Hashable, Comparable {
    var sensor: SRSensor
    var device: String

    static func < (a: SourceKey, b: SourceKey) -> Bool { (a.sensor.rawValue, a.device) < (b.sensor.rawValue, b.device) }
}

/// The disk budget (docs/store.md, disk budget): measured before every commit, kept by
/// checkpointing, evicting from the sources over their fair share, sealing early and, last,
/// dropping what is not yet written. Runs on the writer's thread like the rest of the writer.
extension StoreWriter {
    /// What a deletion record's row and its index entry take in the database, about: what a
    /// source's records count against its share.
    static let recordBytes: Int64 = 160
    /// Evicted items of one source (chunks and records) no further apart than this share one
    /// `lowDiskSpace` record. A stream's coverage has holes of a sample period between chunks
    /// and none between a gap record and the data around it; a longer hole is time the source
    /// did not record, which a record must not claim.
    static let recordJoinGap: Int64 = 1_000_000_000
    /// Rows of one source looked at per eviction round.
    static let evictionScan = 4096

    func keepBudget() throws {
        var report = PurgeReport()
        try keepBudget(&report)
    }

    /// Keeps the disk budget before samples are written. What the store will occupy counts the
    /// pages in use, the WAL and its index, and the samples not yet written (at the size their
    /// pieces take); what the file system will have left is what `statvfs` says less those
    /// samples. While over either limit (`maxBytes`; `minFreeBytes`, never less than
    /// `recordReserveBytes`), in this order: the WAL is checkpointed and truncated; the oldest
    /// chunks and records of the sources holding the most are evicted (`lowDiskSpace`); when
    /// nothing evictable is left, the open chunks are sealed early (pieces cannot be evicted,
    /// sealed chunks can); and when even that is not enough, the samples not yet written are
    /// dropped and recorded as `lowDiskSpace`, in the reserve that samples never take.
    func keepBudget(_ report: inout PurgeReport) throws {
        thread.assertCurrent()
        try boundRecords(&report)
        let db = try database()
        var checkpointed = false
        var sealedEarly = false
        // Chunks sealed early and then evicted held the newest samples: a loss of new samples,
        // as much as a drop is (`StoreLossEvent`).
        var evictedBeforeSealing = 0
        defer { if sealedEarly { samplesLostUnreported += report.evictedSamples - evictedBeforeSealing } }
        // Every round frees something; the bound only keeps a pathological catalog from holding
        // the writer.
        for _ in 0..<1000 {
            let (excess, short) = try budgetExcess()
            guard excess > 0 else { return }
            if !checkpointed {
                checkpointed = true
                try commit()
                checkpoint(db)
                continue
            }
            if try evictOverShare(excess, handBack: short, &report) { continue }
            if !sealedEarly {
                sealedEarly = true
                evictedBeforeSealing = report.evictedSamples
                for stream in open.keys.sorted() {
                    guard var chunk = open.removeValue(forKey: stream) else { continue }
                    defer { open[stream] = chunk }
                    if !chunk.isEmpty { try seal(&chunk, count: chunk.count) }
                }
                try commit()
                checkpoint(db)
                continue
            }
            break
        }
        for stream in open.keys.sorted() {
            let unwritten = open[stream].map { $0.count - $0.durableCount } ?? 0
            guard let span = open[stream]?.dropUnwritten(), let descriptor = registry.descriptor(stream) else { continue }
            samplesLostUnreported += unwritten
            try insertRecord(
                sensor: descriptor.sensor, device: descriptor.device, start: span.min, end: span.max,
                reason: .lowDiskSpace)
        }
    }

    /// Bytes over the budget (≤ 0 within it), and whether free space on the file system is what
    /// is short (then freed pages must go back to it).
    func budgetExcess() throws -> (excess: Int64, short: Bool) {
        let usage = try measureDisk()
        let unwritten = open.values.reduce(0) { $0 + ($1.count - $1.durableCount) }
        let unsealed = open.values.reduce(0) { $0 + $1.count }
        // Their pieces, and one commit's WAL frames for the catalog and index pages beside them.
        let pending = unwritten == 0 ? 0 : Int64(Double(unwritten) * pieceBytesPerSample) + 4 * 4096
        // Sealing an open chunk writes its samples once more, into the WAL and then the database,
        // before its pieces are freed: room the file system must still have when the seal comes.
        let sealing = Int64(2 * Double(unsealed) * pieceBytesPerSample)
        let floor = max(configuration.minFreeBytes ?? 0, configuration.recordReserveBytes)
        let short = floor.subtractingSaturating(
            usage.availableBytes.subtractingSaturating(pending).subtractingSaturating(sealing))
        guard let maxBytes = configuration.maxBytes else { return (short, short > 0) }
        let over = (usage.occupiedBytes &+ pending).subtractingSaturating(maxBytes)
        return (max(short, over), short > 0)
    }

    /// Folds the oldest chunks and records of a source holding more than `maxRecordsPerSource`
    /// deletion records down to half of it (`evictOldest(of:atLeast:)`): a flood of records
    /// stays bounded whether or not a disk budget is set. The counts are read once a tenth of the
    /// bound has been inserted since the last look, not at every commit.
    func boundRecords(_ report: inout PurgeReport) throws {
        let bound = max(configuration.maxRecordsPerSource, 2)
        guard recordsSinceCount >= max(bound / 10, 1) else { return }
        recordsSinceCount = 0
        let db = try database()
        let counts = try db.prepare(
            "SELECT sensor, device, count(*) FROM deletion_records GROUP BY sensor, device HAVING count(*) > ?")
        try counts.bind(1, Int64(bound))
        var over: [(SourceKey, Int64)] = []
        while try counts.step() {
            over.append((SourceKey(sensor: SRSensor(rawValue: counts.string(0)), device: counts.string(1)), counts.int64(2)))
        }
        counts.reset()
        for (source, count) in over.sorted(by: { $0.0 < $1.0 }) {
            // Several rounds when the oldest rows of one scan are not enough.
            let remaining = try db.prepare("SELECT count(*) FROM deletion_records WHERE sensor = ? AND device = ?")
            var left = count - Int64(bound / 2)
            for _ in 0..<64 where left > 0 {
                guard try evictOldest(of: source, atLeast: left.multipliedSaturating(by: Self.recordBytes), &report) > 0 else {
                    break
                }
                remaining.reset()
                try remaining.bind(1, source.sensor.rawValue)
                try remaining.bind(2, source.device)
                guard try remaining.step() else { break }
                left = remaining.int64(0) - Int64(bound / 2)
            }
            remaining.reset()
        }
        try commit()
    }

    /// What each source holds in the database: its streams' chunks and its deletion records.
    func sourceUsage() throws -> [SourceKey: Int64] {
        let db = try database()
        var usage: [SourceKey: Int64] = [:]
        let chunks = try db.prepare("SELECT stream, sum(byte_count) + 64 * count(*) FROM chunks GROUP BY stream")
        while try chunks.step() {
            guard let descriptor = registry.descriptor(StreamID(rawValue: chunks.int64(0))) else { continue }
            usage[SourceKey(sensor: descriptor.sensor, device: descriptor.device), default: 0] += chunks.int64(1)
        }
        chunks.reset()
        let records = try db.prepare("SELECT sensor, device, count(*) FROM deletion_records GROUP BY sensor, device")
        while try records.step() {
            let source = SourceKey(sensor: SRSensor(rawValue: records.string(0)), device: records.string(1))
            usage[source, default: 0] += records.int64(2).multipliedSaturating(by: Self.recordBytes)
        }
        records.reset()
        return usage
    }

    /// Evicts about `excess` bytes from the sources holding the most (`FairShare`), each losing
    /// its oldest chunks and records, with `lowDiskSpace` records for what went; with `handBack`,
    /// the freed pages go back to the file system (incremental vacuum, which the checkpoint that
    /// truncates the WAL carries into the file). False when nothing could be freed.
    func evictOverShare(_ excess: Int64, handBack: Bool, _ report: inout PurgeReport) throws -> Bool {
        let db = try database()
        let cuts = FairShare.cuts(try sourceUsage(), excess: excess)
        var freed: Int64 = 0
        for (source, cut) in cuts.sorted(by: { $0.key < $1.key }) {
            freed = freed.addingSaturating(try evictOldest(of: source, atLeast: cut, &report))
        }
        guard freed > 0 else { return false }
        try commit()
        if handBack { try db.execute("PRAGMA incremental_vacuum") }
        // The eviction's own WAL frames count too: without this the next measure would find the
        // WAL grown and evict again.
        checkpoint(db)
        return true
    }

    /// A chunk or a deletion record of one source, as eviction sees it.
    private struct Held {
        var start: Int64
        var end: Int64
        var chunk: Int64?
        var record: Int64?
        var samples: Int
        var bytes: Int64
    }

    /// Evicts the oldest chunks and records of `source`, at least `cut` bytes of them when that
    /// much is evictable, and records their span as `lowDiskSpace`: one record per run of
    /// evicted items no more than `recordJoinGap` apart, less the spans of chunks the source
    /// still holds, so no record covers a sample that is still stored. Stops before the pieces of
    /// an open chunk and before the oldest sample an open chunk holds (not yet written, or in
    /// pieces that cannot be evicted). Returns the bytes freed, less the records written.
    private func evictOldest(of source: SourceKey, atLeast cut: Int64, _ report: inout PurgeReport) throws -> Int64 {
        let db = try database()
        let streams = registry.streams(sensor: source.sensor, device: source.device).map(\.id)
        let owned = Set(streams.flatMap { open[$0]?.pieceIDs ?? [] })
        var horizon = streams.compactMap { open[$0].flatMap { $0.isEmpty ? nil : $0.minTime } }.min() ?? .max
        var held: [Held] = []
        let chunks = try db.prepare(
            "SELECT id, min_time, max_time, sample_count, byte_count FROM chunks WHERE stream = ? ORDER BY min_time, id LIMIT \(Self.evictionScan)"
        )
        for stream in streams {
            chunks.reset()
            try chunks.bind(1, stream.rawValue)
            var rows = 0
            while try chunks.step() {
                rows += 1
                held.append(
                    Held(
                        start: chunks.int64(1), end: chunks.int64(2), chunk: chunks.int64(0), record: nil,
                        samples: chunks.int(3), bytes: chunks.int64(4) + 64))
            }
            // Past the last row read, chunks of this stream were not looked at.
            if rows == Self.evictionScan, let last = held.last { horizon = min(horizon, last.start) }
        }
        chunks.reset()
        let records = try db.prepare(
            "SELECT id, start_time, end_time FROM deletion_records WHERE sensor = ? AND device = ? ORDER BY end_time LIMIT \(Self.evictionScan)"
        )
        try records.bind(1, source.sensor.rawValue)
        try records.bind(2, source.device)
        var recordRows = 0
        var lastRecordEnd = Int64.min
        while try records.step() {
            recordRows += 1
            lastRecordEnd = records.int64(2)
            held.append(
                Held(
                    start: records.int64(1), end: lastRecordEnd, chunk: nil, record: records.int64(0), samples: 0,
                    bytes: Self.recordBytes))
        }
        records.reset()
        if recordRows == Self.evictionScan { horizon = min(horizon, lastRecordEnd) }
        // By start: a chunk comes before the records inside its span, so a prefix that ends
        // between them takes the chunk, never records whose chunk is kept.
        held.sort { ($0.start, $0.end) < ($1.start, $1.end) }

        var victims: [Held] = []
        var taken: Int64 = 0
        for item in held {
            guard taken < cut, item.end < horizon, !(item.chunk.map(owned.contains) ?? false) else { break }
            victims.append(item)
            taken += item.bytes
        }
        var spans = Self.joined(victims.map { ($0.start, $0.end) })
        // Rewriting records as as many records frees nothing.
        guard !victims.isEmpty, victims.contains(where: { $0.chunk != nil }) || spans.count < victims.count else { return 0 }

        for victim in victims {
            guard let chunk = victim.chunk else { continue }
            try deleteChunk(chunk)
            report.evictedChunks += 1
            report.evictedSamples += victim.samples
        }
        let evictedChunks = Set(victims.compactMap(\.chunk))
        for key in open.keys { open[key]?.pieceIDs.removeAll { evictedChunks.contains($0) } }
        coalescing.forget(sensor: source.sensor, device: source.device)

        // What the source still holds inside those spans is not claimed (chunks whose times
        // overlap, after a clock step, say).
        let kept = try db.prepare(
            "SELECT min_time, max_time FROM chunks WHERE stream = ? AND min_time <= ? AND max_time >= ?")
        for stream in streams {
            for span in spans {
                kept.reset()
                try kept.bind([stream.rawValue, span.end, span.start])
                while try kept.step() {
                    spans = Self.subtracting((kept.int64(0), kept.int64(1)), from: spans)
                }
            }
        }
        kept.reset()
        // A record goes only when the new records cover it whole; one that reaches into a kept
        // chunk stays as it is (its loss stays explained).
        let deleteRecord = try db.prepare("DELETE FROM deletion_records WHERE id = ?")
        var recordsFolded = 0
        for victim in victims {
            guard let record = victim.record,
                spans.contains(where: { $0.start <= victim.start && victim.end <= $0.end })
            else { continue }
            try begin()
            deleteRecord.reset()
            try deleteRecord.bind(1, record)
            try deleteRecord.run()
            recordsFolded += 1
        }
        let freed = victims.reduce(Int64(0)) { $0 + ($1.chunk != nil ? $1.bytes : 0) } + Int64(recordsFolded) * Self.recordBytes
        for span in spans {
            try insertRecord(
                sensor: source.sensor, device: source.device, start: span.start, end: span.end,
                reason: .lowDiskSpace, explainsDeletion: true)
        }
        return max(0, freed - Int64(spans.count) * Self.recordBytes)
    }

    /// Spans sorted and joined where they overlap or are at most `recordJoinGap` apart.
    static func joined(_ spans: [(start: Int64, end: Int64)]) -> [(start: Int64, end: Int64)] {
        var out: [(start: Int64, end: Int64)] = []
        for span in spans.sorted(by: { $0.start < $1.start }) {
            if let last = out.last, span.start.subtractingSaturating(last.end) <= recordJoinGap {
                out[out.count - 1].end = max(last.end, span.end)
            } else {
                out.append(span)
            }
        }
        return out
    }

    /// `spans` less the closed interval `hole`.
    static func subtracting(_ hole: (start: Int64, end: Int64), from spans: [(start: Int64, end: Int64)])
        -> [(start: Int64, end: Int64)]
    {
        spans.flatMap { span -> [(start: Int64, end: Int64)] in
            guard hole.start <= span.end, span.start <= hole.end else { return [span] }
            var parts: [(start: Int64, end: Int64)] = []
            if span.start < hole.start { parts.append((span.start, hole.start - 1)) }
            if hole.end < span.end { parts.append((hole.end + 1, span.end)) }
            return parts
        }
    }

    /// Copies the WAL into the database and truncates it. A reader's snapshot can keep it from
    /// finishing; the budget then measures what is left and evicts for it, so a checkpoint that
    /// could not finish is no failure.
    func checkpoint(_ db: SQLiteDatabase) {
        try? db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    /// Pages in use and free space on the store's file system.
    func diskUsage() throws -> DiskUsage {
        thread.assertCurrent()
        return try measureDisk()
    }
}
