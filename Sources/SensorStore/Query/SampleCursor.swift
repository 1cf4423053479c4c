import SensorChunks
import SensorKitModel

/// A streaming query: the samples of one sensor on one device in `(after, through]`, in time
/// order, delivered block by block as chunks are decoded — a day is never held in memory, only
/// the chunks that overlap the current position. Samples whose receive time fails the query's
/// `SampleAdmission` (received inside the hold, or before the app's first start) are left out;
/// the chunk index's receive bounds say which chunks need that checked sample by sample.
///
/// Order: by sensor time. Samples with equal times keep the order they were appended in: within a
/// chunk by a stable sort, across chunks by chunk id (chunks are written in append order; after a
/// crash, recovered pieces get new ids, so ties across that boundary may come out of order).
/// Chunks that overlap in time (late or out-of-order data, several streams of one sensor) are
/// merged sample by sample.
///
/// The cursor reads inside a read transaction on its own connection from the first `next()`
/// until it returns nil, is released, or is `park`ed: the write-ahead log cannot be checkpointed
/// past an open snapshot, so a cursor whose reader waits (a fetch without credit) parks, and the
/// next `next()` continues from the chunk index it took at the start (docs/store.md).
/// `next()` may block on disk reads. Not thread-safe: use it from one thread at a time.
public final class SampleCursor {
    private struct ChunkRef {
        let id: Int64
        let stream: StreamID
        let bootRow: Int64
        let minTime: Int64
        let maxTime: Int64
        let sampleCount: Int
        /// Some receive time may fail the admission (or the bounds are unknown): decode and filter.
        let checksReceives: Bool
        /// 0: a piece of a chunk still being written, replaced under a new id when it is sealed.
        let tier: Int64
    }

    private struct Run {
        let ref: ChunkRef
        let stream: RegisteredStream
        let boot: BootID
        let anchor: Int64
        let samples: ChunkSamples
        var position: Int
        let end: Int
        var head: Int64 { samples.times[position] }
    }

    private let pool: ReaderPool
    private var db: SQLiteDatabase?
    private let streams: [StreamID: RegisteredStream]
    private let after: Int64
    private let through: Int64
    private let admission: SampleAdmission
    private let reportCorrupt: (Int64, StreamID, Int64, Int64) -> Void
    private var index: [ChunkRef] = []
    private var nextIndex = 0
    private var active: [Run] = []
    private var boots: [Int64: (BootID, Int64)] = [:]
    private var fetchBytes: SQLiteStatement?
    /// Chunks handed over whole are read with this, straight into the array handed over.
    private var chunkBytes: SQLiteBlobReader?
    private var started = false
    /// The snapshot was ended by `park`; the next `next` begins a new one.
    private var parked = false

    /// A cursor that yields nothing (range in the hold, empty range, unknown sensor).
    init(empty pool: ReaderPool) {
        self.pool = pool
        streams = [:]
        after = 0
        through = 0
        admission = SampleAdmission(releasedThrough: .max, notBefore: .min)
        reportCorrupt = { _, _, _, _ in }
        started = true
    }

    init(
        pool: ReaderPool, streams: [RegisteredStream], after: Int64, through: Int64, admission: SampleAdmission,
        reportCorrupt: @escaping (Int64, StreamID, Int64, Int64) -> Void
    ) {
        self.pool = pool
        self.streams = Dictionary(uniqueKeysWithValues: streams.map { ($0.id, $0) })
        self.after = after
        self.through = through
        self.admission = admission
        self.reportCorrupt = reportCorrupt
    }

    deinit { finish() }

    /// The next block of samples, or nil when the query is done.
    public func next() throws -> SampleBlock? {
        while let item = try next(handingOver: nil) {
            if case .block(let block) = item { return block }
        }
        return nil
    }

    /// What `next(handingOver:)` yields: decoded samples, or a whole stored chunk.
    public enum Item: Sendable {
        case block(SampleBlock)
        case chunk(EncodedChunk)
    }

    /// Which stored chunks may be handed over undecoded.
    public struct Handover: Sendable {
        /// Chunk format versions the receiver decodes.
        public var formats: Set<UInt8>
        /// The largest chunk (in bytes) to hand over; larger ones are decoded here.
        public var maxBytes: Int

        public init(formats: Set<UInt8>, maxBytes: Int) {
            self.formats = formats
            self.maxBytes = maxBytes
        }
    }

    /// The next item, or nil when the query is done. With `handover`, a chunk that lies wholly
    /// inside the range (by the chunk index), in time order, overlapping no other chunk, in one of
    /// the accepted formats and not larger than allowed comes back as it was stored: exactly the
    /// samples the decoded path would have returned for it, in the same order. Every other chunk
    /// is decoded and comes back as blocks. A chunk that fails its checksum is reported and
    /// skipped either way, so nothing corrupt is ever handed over.
    public func next(handingOver handover: Handover?) throws -> Item? {
        if !started { try start() }
        if parked { try resume() }
        while true {
            if active.isEmpty {
                guard nextIndex < index.count else {
                    finish()
                    return nil
                }
                let ref = index[nextIndex]
                nextIndex += 1
                if let handover, isWhole(ref, followedBy: nextIndex) {
                    if let chunk = try takeWhole(ref, handover) { return .chunk(chunk) }
                } else {
                    try load(ref)
                }
                continue
            }
            // The run with the earliest head (ties: the older chunk).
            var chosen = 0
            for candidate in active.indices.dropFirst() {
                let a = active[candidate], b = active[chosen]
                if a.head < b.head || (a.head == b.head && a.ref.id < b.ref.id) { chosen = candidate }
            }
            let head = active[chosen].head
            // A chunk not yet loaded may hold samples before (or tied with) this one.
            if nextIndex < index.count, index[nextIndex].minTime <= head {
                try load(index[nextIndex])
                nextIndex += 1
                continue
            }
            // Emit up to the point where another run (or the next chunk) must take over.
            let run = active[chosen]
            var limit = Int64.max  // emit times ≤ limit
            // (The next chunk starts after `head` here, so the subtractions cannot wrap.)
            if nextIndex < index.count { limit = index[nextIndex].minTime - 1 }
            for (position, other) in active.enumerated() where position != chosen {
                let otherHead = other.head
                // An older run wins ties, so stop before its head; a newer one from its head on.
                // (An older run's head is > ours here, so the subtraction cannot wrap.)
                limit = min(limit, other.ref.id < run.ref.id ? otherHead - 1 : otherHead)
            }
            var end = run.samples.times[run.position..<run.end].partitioningIndex { $0 > limit }
            if end == run.position { end = run.position + 1 }
            let block = SampleBlock(
                stream: run.stream.id, schema: run.stream.descriptor.schema, boot: run.boot, bootAnchor: run.anchor,
                samples: run.samples, range: run.position..<end)
            if end == run.end {
                active.remove(at: chosen)
            } else {
                active[chosen].position = end
            }
            return .block(block)
        }
    }

    /// Whether every sample of `ref` is in `(after, through]` and admitted by its receive time, and
    /// no other chunk can interleave with it: nothing is active (checked by the caller) and the
    /// next chunk starts after it.
    private func isWhole(_ ref: ChunkRef, followedBy next: Int) -> Bool {
        ref.minTime > after && ref.maxTime <= through && !ref.checksReceives
            && (next >= index.count || index[next].minTime > ref.maxTime)
    }

    /// `ref` as stored when it can be handed over; otherwise it is loaded for decoding (or, if
    /// corrupt, reported and skipped) and nil is returned.
    private func takeWhole(_ ref: ChunkRef, _ handover: Handover) throws -> EncodedChunk? {
        guard let reader = chunkBytes, let stream = streams[ref.stream], let (boot, anchor) = boots[ref.bootRow] else {
            return nil
        }
        let bytes = try reader.bytes(ofRow: ref.id)
        let verdict = bytes.withUnsafeBytes { raw -> Result<EncodedChunk?, ChunkCodecError> in
            do throws(ChunkCodecError) {
                let inspection = try ChunkCodec.inspect(raw)
                guard inspection.header.columnCount == stream.descriptor.schema.columns.count,
                    inspection.header.count == ref.sampleCount
                else { throw .malformed("chunk does not match its stream") }
                guard inspection.header.timesNonDecreasing, handover.formats.contains(inspection.version),
                    raw.count <= handover.maxBytes
                else { return .success(nil) }
                return .success(
                    EncodedChunk(
                        stream: stream.id, schema: stream.descriptor.schema, boot: boot, bootAnchor: anchor,
                        count: ref.sampleCount, formatVersion: inspection.version, bytes: bytes))
            } catch {
                return .failure(error)
            }
        }
        switch verdict {
        case .success(let chunk?):
            return chunk
        case .success(nil):
            try load(ref)
            return nil
        case .failure:
            reportCorrupt(ref.id, ref.stream, ref.minTime, ref.maxTime)
            return nil
        }
    }

    /// Reads the chunk index of the range inside a read transaction that stays open (the snapshot).
    private func start() throws {
        started = true
        let db = try pool.checkOut()
        self.db = db
        try db.execute("BEGIN")
        let bootRows = try db.prepare("SELECT id, boot_id, anchor FROM boots")
        while try bootRows.step() { boots[bootRows.int64(0)] = (BootID(bootRows.string(1)), bootRows.int64(2)) }
        index = try chunkIndex(db).sorted { ($0.minTime, $0.id) < ($1.minTime, $1.id) }
        try prepareReads(db)
    }

    /// The chunks of the range, unordered.
    private func chunkIndex(_ db: SQLiteDatabase) throws -> [ChunkRef] {
        let span = try db.prepare("SELECT max_chunk_span FROM streams WHERE id = ?")
        let chunks = try db.prepare(
            """
            SELECT id, boot, min_time, max_time, sample_count, min_receive, max_receive, tier FROM chunks
            WHERE stream = ? AND min_time >= ? AND min_time <= ? AND max_time > ? ORDER BY min_time, id
            """)
        var refs: [ChunkRef] = []
        for stream in streams.keys.sorted() {
            span.reset()
            try span.bind(1, stream.rawValue)
            guard try span.step() else { continue }
            let widest = span.int64(0)
            chunks.reset()
            try chunks.bind([stream.rawValue, after.subtractingSaturating(widest), through, after])
            while try chunks.step() {
                let receivesKnown = !chunks.isNull(5) && !chunks.isNull(6)
                refs.append(
                    ChunkRef(
                        id: chunks.int64(0), stream: stream, bootRow: chunks.int64(1), minTime: chunks.int64(2),
                        maxTime: chunks.int64(3), sampleCount: chunks.int(4),
                        checksReceives: !receivesKnown
                            || !admission.admitsReceives(lowest: chunks.int64(5), highest: chunks.int64(6)),
                        tier: chunks.int64(7)))
            }
        }
        return refs
    }

    private func prepareReads(_ db: SQLiteDatabase) throws {
        fetchBytes = try db.prepare("SELECT bytes FROM chunks WHERE id = ?")
        chunkBytes = SQLiteBlobReader(db, table: "chunks", column: "bytes")
    }

    /// Ends the snapshot (and gives its connection back) while the reader waits; the next `next`
    /// goes on where this one stopped. Chunks still in the index are found again by id. Pieces of
    /// a chunk still being written are decoded now: sealing replaces them under a new id, which
    /// the index would not know. Chunks deleted meanwhile (age limit, disk budget) are skipped;
    /// the writer left a deletion record for each.
    public func park() throws {
        guard started, !parked, let db else { return }
        var remaining: [ChunkRef] = []
        for ref in index[nextIndex...] {
            if ref.tier == 0 { try load(ref) } else { remaining.append(ref) }
        }
        index = remaining
        nextIndex = 0
        fetchBytes = nil
        chunkBytes?.close()  // before the snapshot ends
        chunkBytes = nil
        self.db = nil
        try? db.execute("COMMIT")
        pool.checkIn(db)
        parked = true
    }

    private func resume() throws {
        let db = try pool.checkOut()
        self.db = db
        try db.execute("BEGIN")
        let present = Set(try chunkIndex(db).map(\.id))
        index = index[nextIndex...].filter { present.contains($0.id) }
        nextIndex = 0
        try prepareReads(db)
        parked = false
    }

    /// Decodes one chunk; a chunk that fails its checksum or does not match its stream is
    /// reported (it becomes a `systemInitiated` deletion record) and skipped.
    private func load(_ ref: ChunkRef) throws {
        guard let fetch = fetchBytes, let stream = streams[ref.stream], let (boot, anchor) = boots[ref.bootRow] else { return }
        fetch.reset()
        try fetch.bind(1, ref.id)
        guard try fetch.step() else { return }
        var samples: ChunkSamples
        do {
            let decoded = try fetch.withBlob(0) { try ChunkCodec.decode($0) }
            guard decoded.header.columnCount == stream.descriptor.schema.columns.count,
                decoded.samples.count == ref.sampleCount
            else { throw ChunkCodecError.malformed("chunk does not match its stream") }
            samples = decoded.samples
            if !decoded.header.timesNonDecreasing { samples = samples.sortedByTime() }
            if ref.checksReceives {
                let admission = self.admission
                samples = samples.keeping(receiveTimes: { admission.admitsReceive($0) })
            }
        } catch is ChunkCodecError {
            fetch.reset()
            reportCorrupt(ref.id, ref.stream, ref.minTime, ref.maxTime)
            return
        }
        fetch.reset()
        let start = samples.times.partitioningIndex { $0 > after }
        let end = samples.times.partitioningIndex { $0 > through }
        guard start < end else { return }
        active.append(Run(ref: ref, stream: stream, boot: boot, anchor: anchor, samples: samples, position: start, end: end))
    }

    /// Ends the snapshot and returns the connection to the pool.
    private func finish() {
        active.removeAll()
        index.removeAll()
        fetchBytes = nil
        chunkBytes?.close()  // before the snapshot ends
        chunkBytes = nil
        guard let db else { return }
        self.db = nil
        try? db.execute("COMMIT")
        pool.checkIn(db)
    }
}

extension ChunkSamples {
    /// The samples stably sorted by time (equal times keep their arrival order).
    func sortedByTime() -> ChunkSamples {
        let order = times.indices.sorted { (times[$0], $0) < (times[$1], $1) }
        return ChunkSamples(
            times: order.map { times[$0] }, receiveTimes: order.map { receiveTimes[$0] },
            columns: columns.map { column in order.map { column[$0] } })
    }
}

extension ChunkSamples {
    /// The samples whose receive time satisfies `isKept`, in their order (self when all are).
    func keeping(receiveTimes isKept: (Int64) -> Bool) -> ChunkSamples {
        let kept = receiveTimes.indices.filter { isKept(receiveTimes[$0]) }
        guard kept.count < count else { return self }
        return ChunkSamples(
            times: kept.map { times[$0] }, receiveTimes: kept.map { receiveTimes[$0] },
            columns: columns.map { column in kept.map { column[$0] } })
    }
}

extension Collection {
    /// The first index whose element satisfies `predicate`, for a collection partitioned so that
    /// all non-satisfying elements come first (binary search).
    func partitioningIndex(where predicate: (Element) -> Bool) -> Index {
        var low = startIndex
        var length = count
        while length > 0 {
            let half = length / 2
            let middle = index(low, offsetBy: half)
            if predicate(self[middle]) {
                length = half
            } else {
                low = index(after: middle)
                length -= half + 1
            }
        }
        return low
    }
}
