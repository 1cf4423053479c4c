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

    /// Appends already converted samples (SR ns; floats as bit patterns).
    mutating func append(times: [Int64], receiveTimes: [Int64], columns: [[Int64]]) {
        samples.times += times
        samples.receiveTimes += receiveTimes
        for index in columns.indices { samples.columns[index] += columns[index] }
        for time in times {
            minTime = min(minTime, time)
            maxTime = max(maxTime, time)
        }
    }

    /// Removes the first `count` samples (just sealed); the rest start a fresh chunk with no
    /// pieces.
    mutating func removeSealedPrefix(_ count: Int) {
        if count == samples.count {
            samples.removeAll()
        } else {
            samples = samples.slice(count..<samples.count)
        }
        durableCount = 0
        pieceIDs = []
        minTime = samples.times.min() ?? .max
        maxTime = samples.times.max() ?? .min
    }
}

extension ChunkSamples {
    /// The smallest and largest sensor time (times may be out of order).
    var timeBounds: (min: Int64, max: Int64) {
        var low = Int64.max, high = Int64.min
        for time in times {
            low = min(low, time)
            high = max(high, time)
        }
        return (low, high)
    }
}
