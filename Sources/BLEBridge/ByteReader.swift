/// A little-endian cursor over untrusted bytes: every read checks the remaining length and throws
/// `Truncated` instead of trapping, so parsers built on it never read past their input.
struct ByteReader {
    struct Truncated: Error, Equatable {}

    private let bytes: ArraySlice<UInt8>
    private(set) var offset: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.offset = bytes.startIndex
    }

    init(_ bytes: [UInt8]) { self.init(bytes[...]) }

    var remainingCount: Int { bytes.endIndex - offset }
    var isAtEnd: Bool { offset >= bytes.endIndex }

    mutating func uint8() throws(Truncated) -> UInt8 {
        guard remainingCount >= 1 else { throw Truncated() }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint16() throws(Truncated) -> UInt16 {
        let raw = try take(2)
        return UInt16(raw[raw.startIndex]) | UInt16(raw[raw.startIndex + 1]) << 8
    }

    mutating func uint64() throws(Truncated) -> UInt64 {
        let raw = try take(8)
        var value: UInt64 = 0
        for index in raw.indices.reversed() { value = value << 8 | UInt64(raw[index]) }
        return value
    }

    /// A signed little-endian integer of `width` bytes (1…4), sign-extended.
    mutating func signed(width: Int) throws(Truncated) -> Int32 {
        let raw = try take(width)
        return LittleEndianInteger.signed(raw, bits: width * 8)
    }

    mutating func take(_ count: Int) throws(Truncated) -> ArraySlice<UInt8> {
        guard count >= 0, remainingCount >= count else { throw Truncated() }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    mutating func rest() -> ArraySlice<UInt8> {
        defer { offset = bytes.endIndex }
        return bytes[offset...]
    }
}

enum LittleEndianInteger {
    /// Sign-extends the low `bits` bits of the little-endian `raw` (at most 4 bytes).
    static func signed(_ raw: ArraySlice<UInt8>, bits: Int) -> Int32 {
        var value: UInt32 = 0
        for index in raw.indices.reversed() { value = value << 8 | UInt32(raw[index]) }
        return signExtend(value, bits: bits)
    }

    static func signExtend(_ value: UInt32, bits: Int) -> Int32 {
        guard bits > 0, bits < 32 else { return Int32(bitPattern: value) }
        let shift = UInt32(32 - bits)
        return Int32(bitPattern: value << shift) >> Int32(shift)
    }

    static func append(_ value: UInt16, to bytes: inout [UInt8]) {
        bytes.append(UInt8(truncatingIfNeeded: value))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
    }
}
