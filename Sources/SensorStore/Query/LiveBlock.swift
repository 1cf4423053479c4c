import SensorChunks
import SensorKitModel

extension SensorStore {
    /// A batch the pipeline is appending, as the block a query would return once it is committed:
    /// times (and instant columns) shifted by its boot's anchor onto the SR timeline, floats as
    /// bit patterns. The live subscription maps it with the fetch's own mapper, so a subscriber
    /// gets exactly the values a later fetch of the same range returns. Nil for an unknown stream,
    /// a boot the timeline has no anchor for, or columns that differ from the stream's schema.
    /// Never waits for the writer.
    public func liveBlock(_ batch: SampleBatch, stream: StreamID) -> SampleBlock? {
        guard let anchor = timeline.withLock({ $0.anchors[batch.boot] }) else { return nil }
        guard
            let (schema, instants) = registry.withDescriptor(
                stream, { descriptor in (descriptor.schema, descriptor.instantColumns) }),
            schema.columns.count == batch.columns.count
        else { return nil }
        var columns = batch.columns.map { values -> [Int64] in
            switch values {
            case .integers(let integers): integers
            case .floats(let floats): floats.map { Int64(bitPattern: $0.bitPattern) }
            }
        }
        for index in instants { columns[index] = columns[index].map { $0 &+ anchor } }
        let samples = ChunkSamples(
            times: batch.sensorTimes.map { $0 &+ anchor }, receiveTimes: batch.receiveTimes.map { $0 &+ anchor },
            columns: columns)
        guard samples.columns.allSatisfy({ $0.count == samples.count }), samples.receiveTimes.count == samples.count
        else { return nil }
        return SampleBlock(
            stream: stream, schema: schema, boot: batch.boot, bootAnchor: anchor, samples: samples,
            range: 0..<samples.count)
    }

    /// A boot-clock instant on the SR timeline; nil for a boot the timeline has no anchor for.
    public func srNanoseconds(of instant: BootInstant) -> Int64? {
        timeline.withLock { $0.anchors[instant.boot].map { instant.nanoseconds &+ $0 } }
    }
}
