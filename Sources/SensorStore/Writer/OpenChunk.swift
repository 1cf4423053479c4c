import SensorChunks

/// The samples of one stream not yet sealed into a chunk, in memory on the writer thread.
///
/// Its first `durableCount` samples are already committed as *pieces*: small tier-0 chunks
/// written at every commit so a crash loses at most one commit interval. Sealing encodes the
/// samples with the best codec into one tier-1 chunk and deletes the pieces in the same
/// transaction, so readers see each sample exactly once.
struct OpenChunk {
    let stream: StreamID
    let roles: [ColumnRole]
    /// The `.instant` columns: boot ns on the way in, shifted to SR ns with the times.
    let instants: [Int]
    /// Row id in `boots`; every sample of a chunk comes from one boot.
    var bootRow: Int64
    var samples: ChunkSamples
    var durableCount = 0
    /// Samples `0..<journaledCount` are crash-safe: in pieces, or appended to the hand-over
    /// journal and waiting for the next fold (never below `durableCount`).
    var journaledCount = 0
    /// Piece rows holding `samples[0..<durableCount]`.
    var pieceIDs: [Int64] = []
    var minTime = Int64.max
    var maxTime = Int64.min
    /// The newest sensor time ever appended to this chunk, kept across seals: where a loss of
    /// the stream's unwritten samples ends.
    private(set) var newest = Int64.min

    init(stream: StreamID, roles: [ColumnRole], instants: [Int] = [], bootRow: Int64) {
        self.stream = stream
        self.roles = roles
        self.instants = instants
        self.bootRow = bootRow
        self.samples = ChunkSamples(columnCount: roles.count)
    }

    var count: Int { samples.count }
    var isEmpty: Bool { samples.times.isEmpty }
    /// Samples neither in pieces nor in the hand-over journal: a crash would lose them.
    var hasUncommittedSamples: Bool { samples.count > max(durableCount, journaledCount) }
    /// Samples not yet in SQLite (some may be in the journal).
    var hasUnwrittenSamples: Bool { samples.count > durableCount }

    /// Appends samples whose times are `shift` ns behind SR time (their boot's anchor; 0 for
    /// samples already in SR ns), converting on the way in. Float columns are bit patterns.
    mutating func append(_ other: ChunkSamples, shift: Int64) {
        append(other, range: 0..<other.count, shift: shift)
    }

    /// Appends `other[range]` as `append(_:shift:)` does.
    mutating func append(_ other: ChunkSamples, range: Range<Int>, shift: Int64) {
        precondition(other.columns.count == samples.columns.count, "staged columns differ from the schema of stream \(stream)")
        precondition(other.receiveTimes.count == other.times.count)
        appendTimes(other.times[range], receiveTimes: other.receiveTimes[range], shift: shift)
        for index in other.columns.indices { samples.columns[index].append(contentsOf: other.columns[index][range]) }
        for index in instants {
            let start = samples.columns[index].count - range.count
            samples.columns[index].withUnsafeMutableBufferPointer { all in
                for i in start..<all.count { all[i] &+= shift }
            }
        }
    }

    private mutating func appendTimes(_ times: ArraySlice<Int64>, receiveTimes: ArraySlice<Int64>, shift: Int64) {
        let start = samples.times.count
        samples.times.append(contentsOf: times)
        samples.receiveTimes.append(contentsOf: receiveTimes)
        var low = minTime, high = maxTime
        samples.times.withUnsafeMutableBufferPointer { all in
            let count = all.count - start
            guard count > 0, let t = all.baseAddress.map({ $0 + start }) else { return }
            for index in 0..<count { t[index] &+= shift }
            // A sensor's times nearly always rise, and then the first and last are the bounds.
            // Whether any time is below its predecessor is one pass of subtractions, xors and ors
            // (the sign of a − b corrected for overflow, as a signed compare does), which
            // vectorises; a 64-bit min/max pass does not on baseline x86-64.
            var below: Int64 = 0
            for index in 1..<count {
                let a = t[index], b = t[index - 1]
                let difference = a &- b
                below |= difference ^ ((a ^ b) & (a ^ difference))
            }
            if below >= 0 {
                low = min(low, t[0])
                high = max(high, t[count - 1])
            } else {
                for index in 0..<count {
                    low = min(low, t[index])
                    high = max(high, t[index])
                }
            }
        }
        (minTime, maxTime) = (low, high)
        newest = max(newest, high)
        samples.receiveTimes.withUnsafeMutableBufferPointer { all in
            for index in start..<all.count { all[index] &+= shift }
        }
    }

    /// Forgets the samples not yet written as pieces (they could not be stored) and returns
    /// their time bounds, nil when there were none.
    mutating func dropUnwritten() -> (min: Int64, max: Int64)? {
        guard hasUncommittedSamples else { return nil }
        let dropped = samples.timeBounds(durableCount..<samples.count)
        let keep = durableCount
        samples.times.removeLast(samples.count - keep)
        samples.receiveTimes.removeLast(samples.receiveTimes.count - keep)
        for index in samples.columns.indices { samples.columns[index].removeLast(samples.columns[index].count - keep) }
        (minTime, maxTime) = samples.timeBounds(0..<samples.count)
        journaledCount = keep
        return dropped
    }

    /// Removes the first `count` samples (just sealed); the rest start a fresh chunk with no
    /// pieces. The arrays keep their memory for the next chunk (a chunk's arrays grow once per
    /// stream, not once per chunk).
    mutating func removeSealedPrefix(_ count: Int) {
        if count == samples.count {
            samples.removeAll()
        } else {
            samples.times.removeFirst(count)
            samples.receiveTimes.removeFirst(count)
            for index in samples.columns.indices { samples.columns[index].removeFirst(count) }
        }
        durableCount = 0
        journaledCount = max(journaledCount - count, 0)
        pieceIDs = []
        (minTime, maxTime) = samples.timeBounds(0..<samples.count)
    }
}

extension ChunkSamples {
    /// The smallest and largest sensor time in `range` (times may be out of order); (max, min)
    /// for an empty range.
    func timeBounds(_ range: Range<Int>) -> (min: Int64, max: Int64) { Self.bounds(of: times, range) }

    /// The smallest and largest receive time in `range`; (max, min) for an empty range.
    func receiveBounds(_ range: Range<Int>) -> (min: Int64, max: Int64) { Self.bounds(of: receiveTimes, range) }

    private static func bounds(of values: [Int64], _ range: Range<Int>) -> (min: Int64, max: Int64) {
        var low = Int64.max, high = Int64.min
        for index in range {
            let value = values[index]
            low = min(low, value)
            high = max(high, value)
        }
        return (low, high)
    }
}
