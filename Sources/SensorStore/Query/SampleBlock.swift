import SensorChunks
import SensorKitModel

/// A run of query results from one stream and one boot, in time order, column by column.
/// Indexes are 0-based (`0..<count`). Times are SR nanoseconds; the boot's anchor turns them back
/// into the exact `CLOCK_BOOTTIME` the pipeline appended.
public struct SampleBlock: Sendable {
    /// The stream the samples come from (a sensor may have several streams on one device).
    public let stream: StreamID
    /// That stream's columns.
    public let schema: SampleSchema
    /// The boot the samples were recorded in.
    public let boot: BootID
    /// The SR nanosecond at which `boot`'s `CLOCK_BOOTTIME` read zero.
    public let bootAnchor: Int64
    let samples: ChunkSamples
    let range: Range<Int>

    init(stream: StreamID, schema: SampleSchema, boot: BootID, bootAnchor: Int64, samples: ChunkSamples, range: Range<Int>) {
        self.stream = stream
        self.schema = schema
        self.boot = boot
        self.bootAnchor = bootAnchor
        self.samples = samples
        self.range = range
    }

    /// Samples in the block.
    public var count: Int { range.count }

    /// Sensor times (SR ns) of the block; the slice's indices start at `startIndex`, not 0.
    public var sensorTimes: ArraySlice<Int64> { samples.times[range] }
    /// Receive times (SR ns); indices as `sensorTimes`.
    public var receiveTimes: ArraySlice<Int64> { samples.receiveTimes[range] }
    /// Column `column` as stored: integer counts, or `Double.bitPattern`s for float columns.
    public func rawColumn(_ column: Int) -> ArraySlice<Int64> { samples.columns[column][range] }

    /// Every stored column over `range` (0-based within the block), as buffers valid only
    /// inside `body`: the mapping's fast path reads them without slicing per value.
    public func withRawColumns<Result>(_ range: Range<Int>, _ body: ([UnsafeBufferPointer<Int64>]) throws -> Result) rethrows
        -> Result
    {
        precondition(range.lowerBound >= 0 && range.upperBound <= count)
        let absolute = (self.range.lowerBound + range.lowerBound)..<(self.range.lowerBound + range.upperBound)
        return try ColumnMapping.withBuffers(samples.columns, absolute, body)
    }

    /// Sample `index`'s sensor time (SR ns).
    public func sensorTime(at index: Int) -> Int64 { samples.times[range.lowerBound + index] }
    /// Sample `index`'s receive time (SR ns).
    public func receiveTime(at index: Int) -> Int64 { samples.receiveTimes[range.lowerBound + index] }

    /// The sensor time as the kernel named it: `CLOCK_BOOTTIME` of `boot`.
    public func bootInstant(at index: Int) -> BootInstant {
        BootInstant(boot: boot, nanoseconds: sensorTime(at: index) &- bootAnchor)
    }

    /// The receive time as `CLOCK_BOOTTIME` of `boot`.
    public func receiveBootInstant(at index: Int) -> BootInstant {
        BootInstant(boot: boot, nanoseconds: receiveTime(at: index) &- bootAnchor)
    }

    /// One value, typed by the schema.
    public func value(column: Int, at index: Int) -> SampleValue {
        let raw = samples.columns[column][range.lowerBound + index]
        return schema.columns[column].isFloat ? .float(Double(bitPattern: UInt64(bitPattern: raw))) : .integer(raw)
    }

    /// All values of one sample, in schema order.
    public func values(at index: Int) -> [SampleValue] {
        schema.columns.indices.map { value(column: $0, at: index) }
    }

    /// A column as typed values.
    public func column(_ column: Int) -> ColumnValues {
        let raw = rawColumn(column)
        return schema.columns[column].isFloat
            ? .floats(raw.map { Double(bitPattern: UInt64(bitPattern: $0)) }) : .integers(Array(raw))
    }
}

/// A deletion record as stored: an interval of SR nanoseconds without data, and why.
public struct StoredDeletionRecord: Hashable, Sendable {
    public let sensor: SRSensor
    /// `SRDevice.identifier`.
    public let device: String
    /// First SR nanosecond without data.
    public let start: Int64
    /// Last SR nanosecond without data.
    public let end: Int64
    public let reason: SRDeletionReason

    /// As SensorKit's `SRDeletionRecord`.
    public var record: SRDeletionRecord {
        SRDeletionRecord(startTime: SRAbsoluteTime(nanoseconds: start), endTime: SRAbsoluteTime(nanoseconds: end), reason: reason)
    }
}

/// A stored chunk handed over undecoded (`SampleCursor.next(handingOver:)`): every sample in it
/// belongs to the query, in time order. Its bytes are the chunk format of docs/store.md; times
/// in it are SR nanoseconds.
public struct EncodedChunk: Sendable {
    /// The stream the chunk belongs to.
    public let stream: StreamID
    /// That stream's columns (the chunk's value columns, in order).
    public let schema: SampleSchema
    /// The boot the samples were recorded in, and its anchor (SR ns at `CLOCK_BOOTTIME` zero).
    public let boot: BootID
    public let bootAnchor: Int64
    /// Samples in the chunk.
    public let count: Int
    /// The chunk's format version (its first byte).
    public let formatVersion: UInt8
    /// The chunk exactly as stored, checksum included (verified).
    public let bytes: [UInt8]
}
