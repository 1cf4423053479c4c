import SensorChunks

/// The samples of one stream not yet sealed into a chunk, in memory on the writer queue.
///
/// Its first `durableCount` samples are already committed as *pieces*: small tier-0 chunks
/// written at every commit so a crash loses at most one commit interval. Sealing encodes the
/// samples with the best codec into one tier-1 chunk and deletes the pieces in the same
/// transaction, so readers see each sample exactly once.
struct OpenChunk {
    let stream: StreamID
    let roles: [ColumnRole]
    /// Row id in `boots`; every sample of a chunk comes from one boot.
    var bootRow: Int64
    var samples: ChunkSamples
    var durableCount = 0
    /// Piece rows holding `samples[0..<durableCount]`.
    var pieceIDs: [Int64] = []
    var minTime = Int64.max
    var maxTime = Int64.min

    init(stream: StreamID, roles: [ColumnRole], bootRow: Int64) {
        self.stream = stream
        self.roles = roles
        self.bootRow = bootRow
        self.samples = ChunkSamples(columnCount: roles.count)
    }

    var count: Int { samples.count }
    var isEmpty: Bool { samples.times.isEmpty }
    var hasUncommittedSamples: Bool { samples.count > durableCount }

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
    }

    private mutating func appendTimes(_ times: ArraySlice<Int64>, receiveTimes: ArraySlice<Int64>, shift: Int64) {
        let start = samples.times.count
        samples.times.append(contentsOf: times)
        samples.receiveTimes.append(contentsOf: receiveTimes)
        var low = minTime, high = maxTime
        samples.times.withUnsafeMutableBufferPointer { all in
            for index in start..<all.count {
                let converted = all[index] &+ shift
                all[index] = converted
                low = min(low, converted)
                high = max(high, converted)
            }
        }
        (minTime, maxTime) = (low, high)
        samples.receiveTimes.withUnsafeMutableBufferPointer { all in
            for index in start..<all.count { all[index] &+= shift }
        }
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
        pieceIDs = []
        (minTime, maxTime) = samples.timeBounds(0..<samples.count)
    }
}

extension ChunkSamples {
    /// The smallest and largest sensor time in `range` (times may be out of order); (max, min)
    /// for an empty range.
    func timeBounds(_ range: Range<Int>) -> (min: Int64, max: Int64) {
        var low = Int64.max, high = Int64.min
        for index in range {
            let time = times[index]
            low = min(low, time)
            high = max(high, time)
        }
        return (low, high)
    }
}
