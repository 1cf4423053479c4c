import SensorKitModel

/// What the catalog says a stream recorded in a range, without decoding a sample: what
/// `sensorkitctl status` and `report` show (docs/store.md, "Activity").
public struct StreamActivity: Hashable, Sendable {
    public var sensor: SRSensor
    /// `SRDevice.identifier`.
    public var device: String
    /// Samples in the range: whole chunks inside it, and a share of a chunk that straddles an
    /// end proportional to the overlap of its time bounds (samples assumed evenly spread).
    public var samples: Double
    /// The chunks' time bounds in the range (clipped), neighbours closer than the merge gap
    /// joined; oldest first. Time between two spans was not recorded (a deletion record says why,
    /// or nothing does).
    public var spans: [ClosedRange<Int64>]
    /// SR ns of the newest committed sample of the stream, in the range or not.
    public var newestSample: Int64?
    /// SR ns the stream was registered (its earliest, when a sensor has several descriptors on
    /// the device). For a stream registered before the catalog kept that (version 6), its
    /// oldest chunk still stored stands in; nil when neither is known.
    public var created: Int64?
}

/// Deletion records of one stream and reason overlapping a range, summed.
public struct DeletionSummary: Hashable, Sendable {
    public var sensor: SRSensor
    public var device: String
    public var reason: SRDeletionReason
    public var count: Int
    /// Nanoseconds of the records inside the range (records clipped to it, overlaps counted twice).
    public var nanoseconds: Int64
}

extension SensorStore {
    /// Every (sensor, device) with a registered stream, and what its chunks cover in `(from, to]`
    /// (SR ns). At most `maxSpans` spans per stream: when there are more, the merge gap doubles
    /// until they fit. Reads only the catalog (chunk time bounds and sample counts), never a chunk.
    /// No hold or window applies: this says what is stored, not what an app may fetch.
    /// `foldingFirst`: as for `samples`.
    public func activity(
        from: Int64, to: Int64, mergeGap: Int64 = 1_000_000_000, maxSpans: Int = 720, foldingFirst: Bool = true
    ) throws -> [StreamActivity] {
        guard to > from else { return [] }
        if foldingFirst { try foldJournal(reaching: to) }
        let db = try readers.checkOut()
        defer { readers.checkIn(db) }
        // The index is (stream, min_time): a chunk overlapping `from` starts at most its stream's
        // widest chunk span before it.
        let span = try db.prepare("SELECT max_chunk_span FROM streams WHERE id = ?")
        let chunks = try db.prepare(
            "SELECT min_time, max_time, sample_count FROM chunks WHERE stream = ? AND min_time >= ? AND min_time <= ? ORDER BY min_time"
        )
        let newest = try db.prepare(
            "SELECT max(max_time) FROM (SELECT max_time FROM chunks WHERE stream = ? ORDER BY min_time DESC LIMIT 16)")
        // Both answered from an index: the row by id, the oldest chunk from (stream, min_time).
        let created = try db.prepare(
            "SELECT coalesce(created, (SELECT min(min_time) FROM chunks WHERE stream = streams.id)) FROM streams WHERE id = ?")
        var bounds:
            [String: (
                sensor: SRSensor, device: String, samples: Double, chunks: [ClosedRange<Int64>], newest: Int64?, created: Int64?
            )] = [:]
        for stream in streams {
            let key = stream.descriptor.sensor.rawValue + "\u{0}" + stream.descriptor.device
            var entry = bounds[key] ?? (stream.descriptor.sensor, stream.descriptor.device, 0, [], nil, nil)
            created.reset()
            try created.bind(1, stream.id.rawValue)
            if try created.step(), !created.isNull(0) { entry.created = min(entry.created ?? .max, created.int64(0)) }
            span.reset()
            try span.bind(1, stream.id.rawValue)
            let widest = try span.step() ? max(0, span.int64(0)) : 0
            chunks.reset()
            try chunks.bind(1, stream.id.rawValue)
            try chunks.bind(2, from.subtractingSaturating(widest))
            try chunks.bind(3, to)
            while try chunks.step() {
                let low = chunks.int64(0), high = max(chunks.int64(0), chunks.int64(1)), count = Double(max(0, chunks.int64(2)))
                guard high > from else { continue }
                let clipped = max(low, from.addingSaturating(1))...min(high, to)
                let width = Double(high.subtractingSaturating(low))
                entry.samples +=
                    width > 0 ? count * Double(clipped.upperBound.subtractingSaturating(clipped.lowerBound)) / width : count
                entry.chunks.append(clipped)
            }
            newest.reset()
            try newest.bind(1, stream.id.rawValue)
            if try newest.step(), !newest.isNull(0) { entry.newest = max(entry.newest ?? .min, newest.int64(0)) }
            bounds[key] = entry
        }
        return bounds.values.map { entry in
            StreamActivity(
                sensor: entry.sensor, device: entry.device, samples: entry.samples,
                spans: Self.merge(entry.chunks, gap: mergeGap, maxSpans: maxSpans), newestSample: entry.newest,
                created: entry.created)
        }.sorted { ($0.sensor.rawValue, $0.device) < ($1.sensor.rawValue, $1.device) }
    }

    /// Joins ranges closer than `gap`, doubling `gap` until at most `maxSpans` remain.
    static func merge(_ ranges: [ClosedRange<Int64>], gap: Int64, maxSpans: Int) -> [ClosedRange<Int64>] {
        let sorted = ranges.sorted { $0.lowerBound < $1.lowerBound }
        var gap = max(0, gap)
        while true {
            var merged: [ClosedRange<Int64>] = []
            for range in sorted {
                if let last = merged.last, range.lowerBound.subtractingSaturating(last.upperBound) <= gap {
                    merged[merged.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
                } else {
                    merged.append(range)
                }
            }
            if merged.count <= max(1, maxSpans) || gap >= Int64.max / 2 { return merged }
            gap = max(1, gap).multipliedReportingOverflow(by: 2).partialValue
        }
    }

    /// Deletion records of every sensor and device overlapping `(from, to]`, summed per stream and
    /// reason. No hold applies (the count and length of gaps, not data).
    public func deletionSummary(from: Int64, to: Int64) throws -> [DeletionSummary] {
        let db = try readers.checkOut()
        defer { readers.checkIn(db) }
        let query = try db.prepare(
            """
            SELECT sensor, device, reason, count(*), sum(min(end_time, ?2) - max(start_time, ?1)) FROM deletion_records
            WHERE end_time > ?1 AND start_time <= ?2 GROUP BY sensor, device, reason ORDER BY sensor, device, reason
            """)
        try query.bind(1, from)
        try query.bind(2, to)
        var summaries: [DeletionSummary] = []
        while try query.step() {
            summaries.append(
                DeletionSummary(
                    sensor: SRSensor(query.string(0)), device: query.string(1),
                    reason: SRDeletionReason(rawValue: query.int(2)) ?? .systemInitiated,
                    count: query.int(3), nanoseconds: max(0, query.int64(4))))
        }
        return summaries
    }

    /// Deletion records of every sensor and device overlapping `(from, to]`, oldest first, at most
    /// `limit` per (sensor, device) (the longest are kept when there are more). No hold applies.
    public func deletionRecords(from: Int64, to: Int64, limitPerStream limit: Int) throws -> [StoredDeletionRecord] {
        let db = try readers.checkOut()
        defer { readers.checkIn(db) }
        let query = try db.prepare(
            """
            SELECT sensor, device, start_time, end_time, reason FROM (
                SELECT *, row_number() OVER (PARTITION BY sensor, device ORDER BY end_time - start_time DESC, id) AS rank
                FROM deletion_records WHERE end_time > ?1 AND start_time <= ?2)
            WHERE rank <= ?3 ORDER BY sensor, device, start_time, id
            """)
        try query.bind(1, from)
        try query.bind(2, to)
        try query.bind(3, max(0, limit))
        var records: [StoredDeletionRecord] = []
        while try query.step() {
            records.append(
                StoredDeletionRecord(
                    sensor: SRSensor(query.string(0)), device: query.string(1), start: query.int64(2), end: query.int64(3),
                    reason: SRDeletionReason(rawValue: query.int(4)) ?? .systemInitiated))
        }
        return records
    }
}
