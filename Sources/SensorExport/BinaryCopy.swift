import SensorKitModel

/// PostgreSQL's binary COPY format (`COPY … FROM STDIN (FORMAT binary)`), as a pure writer of
/// bytes: a header, one tuple per row (field count, then each field as a length and its bytes in
/// network order), a trailer. The exporter sends the tuples of one transaction between one header
/// and one trailer (docs/export.md, "How rows travel").
public struct BinaryCopy: Sendable {
    /// `PGCOPY\n\377\r\n\0`, flags 0 (no OIDs), no header extension.
    public static let header: [UInt8] = Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00] + [0, 0, 0, 0] + [0, 0, 0, 0]
    /// A field count of −1 ends the data.
    public static let trailer: [UInt8] = [0xFF, 0xFF]

    /// Microseconds from the Unix epoch to PostgreSQL's epoch (2000-01-01 00:00:00 UTC).
    public static let postgresEpochUnixMicroseconds: Int64 = 946_684_800_000_000
    /// The element type of `float8[]` (`pg_type.oid` of `float8`).
    static let float8OID: UInt32 = 701

    /// The tuples written so far (no header, no trailer).
    public private(set) var bytes: [UInt8] = []
    /// Tuples begun so far.
    public private(set) var rows = 0

    public init(reservingCapacity capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    /// Starts a tuple of `fields` fields; exactly that many field writes must follow.
    public mutating func beginRow(fields: Int16) {
        append16(UInt16(bitPattern: fields))
        rows += 1
    }

    public mutating func null() { append32(UInt32.max) }

    public mutating func int16(_ value: Int16) {
        append32(2)
        append16(UInt16(bitPattern: value))
    }

    public mutating func int32(_ value: Int32) {
        append32(4)
        append32(UInt32(bitPattern: value))
    }

    public mutating func int64(_ value: Int64) {
        append32(8)
        append64(UInt64(bitPattern: value))
    }

    public mutating func float64(_ value: Double) {
        append32(8)
        append64(value.bitPattern)
    }

    public mutating func bool(_ value: Bool) {
        append32(1)
        bytes.append(value ? 1 : 0)
    }

    /// `text`: UTF-8 bytes, no terminator.
    public mutating func text(_ value: String) {
        let utf8 = Array(value.utf8)
        append32(UInt32(utf8.count))
        bytes += utf8
    }

    /// `timestamptz` from Unix microseconds (PostgreSQL keeps microseconds since its own epoch).
    public mutating func timestamp(unixMicroseconds: Int64) {
        int64(unixMicroseconds.subtractingSaturating(Self.postgresEpochUnixMicroseconds))
    }

    /// A one-dimensional `float8[]` (an empty list is the zero-dimensional empty array).
    public mutating func float64Array<C: Collection>(_ values: C) where C.Element == Double {
        let count = values.count
        let length = count == 0 ? 12 : 20 + 12 * count
        append32(UInt32(length))
        append32(count == 0 ? 0 : 1)  // dimensions
        append32(0)  // no NULL elements
        append32(Self.float8OID)
        guard count > 0 else { return }
        append32(UInt32(count))
        append32(1)  // lower bound
        for value in values {
            append32(8)
            append64(value.bitPattern)
        }
    }

    /// Forgets every tuple before byte `offset` (`rows` of them), keeping the rest.
    public mutating func dropPrefix(bytes offset: Int, rows dropped: Int) {
        bytes.removeSubrange(0..<offset)
        rows -= dropped
    }

    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        rows = 0
    }

    @inline(__always) private mutating func append16(_ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    @inline(__always) private mutating func append32(_ value: UInt32) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    @inline(__always) private mutating func append64(_ value: UInt64) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }
}
