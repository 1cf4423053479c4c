import SensorKitModel

/// The rows of one device's stream waiting to be committed, as binary COPY tuples, and the point up
/// to which they can be committed with a cursor that resumes exactly (docs/export.md, "Exactly
/// once"): a fetch resumes at `(cursor, …]`, so every row at or before the cursor's sensor time
/// must be in the same transaction. Rows sharing the last sensor time seen are therefore held
/// back until a later time arrives or the fetch ends.
public struct StreamRows: Sendable {
    public let family: ExportFamily
    public let device: Int32
    public let stream: String
    /// CF-epoch ns of the timeline's origin: wall-clock time = SR ns + origin (docs/export.md).
    public let origin: Int64

    public private(set) var copy = BinaryCopy()
    /// Sensor time of the last row appended.
    public private(set) var lastTime: Int64?
    /// Byte offset and row count where the run of rows at `lastTime` began.
    private var runStartOffset = 0
    private var runStartRows = 0
    /// Sensor time of the last row before that run (the cursor a cut there commits).
    private var timeBeforeRun: Int64?

    /// Seconds from the CF epoch (2001-01-01) to the Unix epoch.
    static let cfEpochUnixNanoseconds: Int64 = 978_307_200_000_000_000

    public init(family: ExportFamily, device: Int32, stream: String, origin: Int64) {
        self.family = family
        self.device = device
        self.stream = stream
        self.origin = origin
    }

    public var rows: Int { copy.rows }

    /// Appends a fetched batch (sensor times ascending, as the daemon sends them). A batch whose
    /// shape does not match the family (column count, lengths) is refused whole.
    public mutating func append(sensorTimes: [Int64], receiveTimes: [Int64], columns: [[Double]], ragged: [Double]) throws {
        let n = sensorTimes.count
        guard receiveTimes.count == n, columns.count == family.layout.columns.count, columns.allSatisfy({ $0.count == n }) else {
            throw ShapeError(stream: stream)
        }
        var raggedOffset = 0
        for i in 0..<n {
            let time = sensorTimes[i]
            if let last = lastTime, time < last { throw ShapeError(stream: stream) }
            if time != lastTime {
                timeBeforeRun = lastTime
                runStartOffset = copy.bytes.count
                runStartRows = copy.rows
                lastTime = time
            }
            copy.beginRow(fields: family.fieldCount)
            copy.int32(device)
            copy.text(stream)
            copy.int64(time)
            copy.int64(receiveTimes[i])
            copy.timestamp(unixMicroseconds: Self.unixMicroseconds(srNanoseconds: time, origin: origin))
            for (_, value) in family.values {
                switch value {
                case .real(let c): copy.float64(columns[c][i])
                case .small(let c):
                    if let v = Int16(exactly: columns[c][i]) { copy.int16(v) } else { copy.null() }
                case .integer(let c):
                    if let v = Int32(exactly: columns[c][i]) { copy.int32(v) } else { copy.null() }
                case .big(let c):
                    if let v = Int64(exactly: columns[c][i]) { copy.int64(v) } else { copy.null() }
                case .flag(let c):
                    let v = columns[c][i]
                    if v == 0 || v == 1 { copy.bool(v == 1) } else { copy.null() }
                case .desktopID(let c):
                    let words = (c..<(c + DesktopIDCode.words)).map { columns[$0][i] }
                    if let id = DesktopIDCode.decode(words) { copy.text(id) } else { copy.null() }
                case .ragged(let c):
                    // The count comes from the peer: a count that does not fit what is left ends the
                    // sample's list as NULL and the rest of the batch's lists with it.
                    if let count = Int(exactly: columns[c][i]), count >= 0, count <= ragged.count - raggedOffset {
                        copy.float64Array(ragged[raggedOffset..<(raggedOffset + count)])
                        raggedOffset += count
                    } else {
                        copy.null()
                        raggedOffset = ragged.count
                    }
                }
            }
        }
    }

    /// Rows that can be committed now with the cursor they commit: everything before the run at
    /// the last time (`final == false`), or everything (`final`, the fetch has ended).
    public func committable(final: Bool) -> (bytes: ArraySlice<UInt8>, rows: Int, cursor: Int64)? {
        if final {
            guard let lastTime, copy.rows > 0 else { return nil }
            return (copy.bytes[...], copy.rows, lastTime)
        }
        guard let cursor = timeBeforeRun, runStartRows > 0 else { return nil }
        return (copy.bytes[0..<runStartOffset], runStartRows, cursor)
    }

    /// Forgets the rows a commit took (`committable(final:)`'s).
    public mutating func committed(rows: Int) {
        if rows == copy.rows {
            copy.removeAll()
            runStartOffset = 0
            runStartRows = 0
            timeBeforeRun = nil
        } else {
            copy.dropPrefix(bytes: runStartOffset, rows: rows)
            runStartOffset = 0
            runStartRows = 0
            timeBeforeRun = nil
        }
    }

    /// Wall-clock Unix µs of an SR time: the timeline's origin plus SR ns (floor to µs).
    public static func unixMicroseconds(srNanoseconds: Int64, origin: Int64) -> Int64 {
        let unix = srNanoseconds.addingSaturating(origin).addingSaturating(cfEpochUnixNanoseconds)
        let (q, r) = unix.quotientAndRemainder(dividingBy: 1000)
        return r < 0 ? q - 1 : q
    }

    public struct ShapeError: Error, CustomStringConvertible {
        public let stream: String
        public var description: String { "a batch of \(stream) does not match its layout (column count, lengths or order)" }
    }
}
