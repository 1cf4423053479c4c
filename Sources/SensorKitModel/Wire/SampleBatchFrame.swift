/// A binary batch of fetched samples (docs/protocol.md §5), the payload of a `batch` frame:
///
///     u32 request id · u8 layout · u8 0 · u16 column count k · u32 sample count n
///     i64[n] sensor time (SR ns) · i64[n] write time (SR ns)
///     f64[k][n] columns, column after column · u32 m · f64[m] ragged values
///
/// All little-endian. Values are in SensorKit's units (g, rad/s, kPa, °C, lux, µV, BPM); the
/// layout says which columns a sensor has. Columnar, so a client in any language unpacks each
/// column with one call (`numpy.frombuffer`, `struct.unpack`).
public struct SampleBatchFrame: Hashable, Sendable {
    public var requestID: UInt32
    public var layout: BatchLayout
    /// When the sensor measured each sample (SR ns): the fetch range selects on it, and the
    /// client's `SRFetchResult.timestamp` is it (docs/design-notes/0003-result-timestamps.md).
    public var sensorTimes: [Int64]
    /// When the daemon received and recorded each sample (SR ns).
    public var writeTimes: [Int64]
    /// `layout.columns.count` columns of `sensorTimes.count` values each.
    public var columns: [[Double]]
    /// Per-sample lists flattened (heart rate RR intervals), split by the layout's count column.
    public var ragged: [Double]

    public init(
        requestID: UInt32, layout: BatchLayout, sensorTimes: [Int64], writeTimes: [Int64],
        columns: [[Double]], ragged: [Double] = []
    ) {
        precondition(columns.count == layout.columns.count, "layout \(layout) has \(layout.columns.count) columns")
        precondition(writeTimes.count == sensorTimes.count && columns.allSatisfy { $0.count == sensorTimes.count })
        self.requestID = requestID
        self.layout = layout
        self.sensorTimes = sensorTimes
        self.writeTimes = writeTimes
        self.columns = columns
        self.ragged = ragged
    }

    public var count: Int { sensorTimes.count }

    public static let fixedHeaderSize = 12

    /// The payload's size in bytes.
    public var payloadSize: Int {
        Self.fixedHeaderSize + count * 16 + columns.count * count * 8 + 4 + ragged.count * 8
    }

    /// Appends a whole `batch` frame (header and payload) to `bytes`.
    public func appendFrame(to bytes: inout [UInt8]) {
        Frame.appendHeader(kind: .batch, payloadCount: payloadSize, to: &bytes)
        bytes.reserveCapacity(bytes.count + payloadSize)
        appendLittleEndian(requestID, to: &bytes)
        bytes.append(layout.rawValue)
        bytes.append(0)
        appendLittleEndian(UInt16(columns.count), to: &bytes)
        appendLittleEndian(UInt32(count), to: &bytes)
        appendArray(sensorTimes, to: &bytes)
        appendArray(writeTimes, to: &bytes)
        for column in columns { appendArray(column, to: &bytes) }
        appendLittleEndian(UInt32(ragged.count), to: &bytes)
        appendArray(ragged, to: &bytes)
    }

    public enum DecodeError: Error, Hashable, Sendable {
        case truncated(needed: Int, have: Int)
        case unknownLayout(UInt8)
        case columnCount(layout: BatchLayout, got: Int)
        case trailingBytes(Int)
        case malformed(String)
    }

    /// Decodes a `batch` frame's payload; rejects anything short, long or inconsistent.
    public static func decode(_ payload: [UInt8]) throws(DecodeError) -> SampleBatchFrame {
        let result = payload.withUnsafeBytes { raw in
            Result { () throws(DecodeError) in try decode(raw) }
        }
        return try result.get()
    }

    /// Decodes a payload in place (e.g. borrowed from `FrameDecoder.nextFrame`): each section is
    /// copied once, straight into its array.
    public static func decode(_ raw: UnsafeRawBufferPointer) throws(DecodeError) -> SampleBatchFrame {
        var reader = ByteReader(raw)
        let requestID: UInt32 = try reader.read()
        let layoutByte: UInt8 = try reader.read()
        _ = try reader.read() as UInt8
        let columnCount = Int(try reader.read() as UInt16)
        let count = Int(try reader.read() as UInt32)
        guard let layout = BatchLayout(rawValue: layoutByte) else { throw .unknownLayout(layoutByte) }
        guard columnCount == layout.columns.count else { throw .columnCount(layout: layout, got: columnCount) }
        let sensorTimes: [Int64] = try reader.readArray(count)
        let writeTimes: [Int64] = try reader.readArray(count)
        var columns: [[Double]] = []
        columns.reserveCapacity(columnCount)
        for _ in 0..<columnCount { columns.append(try reader.readArray(count)) }
        let raggedCount = Int(try reader.read() as UInt32)
        let ragged: [Double] = try reader.readArray(raggedCount)
        guard reader.isAtEnd else { throw .trailingBytes(reader.remainingCount) }
        return SampleBatchFrame(
            requestID: requestID, layout: layout, sensorTimes: sensorTimes,
            writeTimes: writeTimes, columns: columns, ragged: ragged)
    }
}

#if _endian(big)
    #error("the wire format is little-endian; add byte swapping for big-endian hosts")
#endif

@inline(__always)
func appendLittleEndian<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
    withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
}

@inline(__always)
func appendArray<T: BitwiseCopyable>(_ values: [T], to bytes: inout [UInt8]) {
    values.withUnsafeBytes { bytes.append(contentsOf: $0) }
}

/// A frame's fields, read with the one byte reader (`ByteReader`); a short payload is
/// `DecodeError.truncated` saying how many bytes the field needed and how many were left.
extension ByteReader {
    mutating func read<T: FixedWidthInteger>() throws(SampleBatchFrame.DecodeError) -> T {
        do throws(ByteTruncation) { return try integer() } catch { throw .truncated(needed: error.needed, have: error.have) }
    }

    mutating func readArray<T: BitwiseCopyable>(_ count: Int) throws(SampleBatchFrame.DecodeError) -> [T] {
        do throws(ByteTruncation) { return try array(count) } catch { throw .truncated(needed: error.needed, have: error.have) }
    }

    mutating func readBytes(_ count: Int, spareZeros: Int) throws(SampleBatchFrame.DecodeError) -> [UInt8] {
        do throws(ByteTruncation) {
            return try bytes(count, spareZeros: spareZeros)
        } catch {
            throw .truncated(needed: error.needed, have: error.have)
        }
    }
}

/// Which columns a batch carries, one layout per sensor family (docs/protocol.md §5.2); the wire
/// numbers are the protocol's, the columns are the family's.
public enum BatchLayout: UInt8, Hashable, Sendable, CaseIterable {
    /// accelerometer (g) and rotationRate (rad/s): x, y, z.
    case motion = 1
    /// ambientPressure: pressure (kPa), temperature (°C; NaN when the chip has none).
    case pressure = 2
    /// ambientLightSensor: lux, chromaticity x, chromaticity y, placement.
    case ambientLight = 3
    /// pedometerData: end time (SR ns as Double), steps; the sensor time is the interval's start.
    case pedometer = 4
    /// heartRate: BPM, confidence, RR-interval count; the RR intervals (s) are the ragged values.
    case heartRate = 5
    /// onWristState: on wrist (0/1), wrist location, crown orientation.
    case wrist = 6
    /// electrocardiogram: µV, lead, flags, frequency (Hz), session start (SR ns as Double).
    case electrocardiogram = 7
    /// photoplethysmogram: twenty optical channels, ambient and the status word (raw counts; NaN
    /// where a stream's PMD frame type has no such column). Number 8 was the five-column layout
    /// of builds before the wide frame types; it is retired, never sent again, so a client that
    /// knows only 8 skips these batches rather than misreading them (docs/protocol.md §5.2, §8).
    case photoplethysmogram = 15
    /// Deletion records: end time (SR ns as Double), reason; the sensor time is the start.
    case deletionRecords = 9
    /// keyboardMetrics: duration (s), taps, deletes, words, typing episodes, pauses, typing
    /// duration (s), typing speed (characters/s); the sensor time is the interval's end.
    case keyboardMetrics = 10
    /// deviceUsageReport: rows of one report share its end time (docs/device-usage.md): entry
    /// kind, the report's totals, an app's category, coded desktop id and usage, or a notification
    /// event count.
    case deviceUsage = 11
    /// phoneUsageReport: duration (s), incoming and outgoing calls, call duration (s), unique
    /// contacts; the sensor time is the interval's end.
    case phoneUsage = 12
    /// messagesUsageReport: duration (s), incoming and outgoing messages, unique contacts; the
    /// sensor time is the interval's end.
    case messagesUsage = 13
    /// visits: distance from home (m), the arrival's and departure's bounds (s before the sensor
    /// time), category, the place's UUID as four 32-bit words; the sensor time is when the daemon
    /// took the visit from the session agent.
    case visits = 14
    // 8: retired (the five-column photoplethysmogram of earlier builds); never reused.

    /// The batch's column names in wire order, as the layout's family declares them
    /// (`SensorFamilies`, one file per family in `Families/`).
    public var columns: [String] { SensorFamilies.wireColumns[self]! }

    /// The layout of a sensor's fetch results; nil for sensors with no Linux source.
    public static func of(_ sensor: SRSensor) -> BatchLayout? { SensorFamilies.layout(of: sensor) }
}
