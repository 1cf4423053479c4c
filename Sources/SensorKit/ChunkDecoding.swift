import SensorChunks
import SensorKitModel

/// Turns a `chunk` frame (docs/protocol.md §5.3) into the batch the daemon would otherwise have
/// sent: the stored chunk decoded by the store's own decoder, its columns mapped to the layout
/// by the frame's `ColumnMapping` (the same code the daemon maps with).
enum ChunkDecoding {
    /// What a fetch request advertises (`chunkFormats`): the chunk versions this build decodes.
    static var acceptedFormats: [Int] { StoredChunk.readableVersions.map(Int.init) }

    /// Zero bytes to leave after a received chunk (`ChunkBatchFrame.decode(_:chunkPadding:)`) so
    /// it decodes in place, without a copy of its body.
    static var chunkPadding: Int { StoredChunk.inPlacePadding }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func batch(_ frame: ChunkBatchFrame) throws(Failure) -> SampleBatchFrame {
        let decoded: StoredChunk.Columns
        do {
            // The read loop gave the chunk zeroed spare capacity (`chunkPadding`): an array's
            // capacity is its own allocated memory, so the decoder may read past the chunk's end.
            let spare = frame.chunk.capacity - frame.chunk.count
            decoded = try frame.chunk.withUnsafeBytes { (raw) throws(StoredChunk.DecodeError) in
                try StoredChunk.decode(raw, readablePastEnd: spare >= chunkPadding ? chunkPadding : 0)
            }
        } catch {
            throw Failure(description: "\(error)")
        }
        let count = decoded.sensorTimes.count
        guard count == frame.count, decoded.values.count == frame.mapping.sources.count, decoded.timesNonDecreasing else {
            throw Failure(
                description:
                    "chunk frame: \(count) samples of \(decoded.values.count) columns, announced \(frame.count) of \(frame.mapping.sources.count)"
            )
        }
        let columns = ColumnMapping.withBuffers(decoded.values, 0..<count) { stored in
            (0..<frame.mapping.outputs.count).map { frame.mapping.column($0, count: count, stored: stored) }
        }
        return SampleBatchFrame(
            requestID: frame.requestID, layout: frame.layout, sensorTimes: decoded.sensorTimes,
            writeTimes: decoded.receiveTimes, columns: columns)
    }
}
