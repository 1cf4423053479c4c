import SensorKitModel
import SensorStore

/// Turns one stream's batches, as they are recorded, into `batch` frames for live subscribers
/// (docs/live.md), with the fetch's own mapping: a subscriber gets the values a later fetch of the
/// same range returns, bit for bit.
public protocol LiveEncoding: Sendable {
    /// The encoder of a stream's batches for `layout`; nil when the stream cannot be mapped.
    func liveEncoder(stream: Int64, layout: BatchLayout) -> LiveEncoder?
    /// A boot-clock instant on the SR timeline (nil for a boot without an anchor).
    func srTime(of instant: BootInstant) -> Int64?
}

/// One stream's encoder: a batch becomes frames of request id 0 (one, unless it holds more than a
/// frame may; the feed writes each subscriber's id into its copy, `LiveFrame`).
public struct LiveEncoder: Sendable {
    let encode: @Sendable (SourceBatch) -> [LiveFrame]
}

/// A `batch` frame for live subscribers, with its first and last sensor time (SR ns).
public struct LiveFrame: Sendable {
    var bytes: [UInt8]
    var count: Int
    var first: Int64
    var last: Int64

    /// The frame addressed to one subscription: its request id at the payload's start (docs/protocol.md §5.1).
    func addressed(to requestID: UInt32) -> [UInt8] {
        var copy = bytes
        withUnsafeBytes(of: requestID.littleEndian) { id in
            for (offset, byte) in id.enumerated() { copy[Frame.headerSize + offset] = byte }
        }
        return copy
    }
}

extension StoreBackend: LiveEncoding {
    public func liveEncoder(stream: Int64, layout: BatchLayout) -> LiveEncoder? {
        let id = StreamID(rawValue: stream)
        guard let descriptor = store.descriptor(of: id), let mapper = try? SampleMapper(descriptor: descriptor, layout: layout)
        else { return nil }
        let perSample = layout.columns.count + SensorFamilies.family(of: layout).maxRaggedValuesPerSample
        let maxSamples = min(WireLimits.samplesPerBatch, BatchFrameWriter.maxSamples(columns: perSample))
        return LiveEncoder { [self] batch in
            guard let block = store.liveBlock(sampleBatch(batch, of: id), stream: id) else { return [] }
            return stride(from: 0, to: block.count, by: maxSamples).map { start in
                let range = start..<min(block.count, start + maxSamples)
                var storage: [UInt8] = []
                let size = BatchFrameWriter.write(
                    into: &storage, requestID: 0, layout: layout, count: range.count,
                    raggedCount: mapper.raggedCount(block, range)
                ) { sections in
                    mapper.write(block, range, into: sections)
                }
                storage.removeLast(storage.count - size)
                let times = range.map { block.sensorTime(at: $0) }
                return LiveFrame(bytes: storage, count: range.count, first: times.min() ?? 0, last: times.max() ?? 0)
            }
        }
    }

    public func srTime(of instant: BootInstant) -> Int64? { store.srNanoseconds(of: instant) }
}
