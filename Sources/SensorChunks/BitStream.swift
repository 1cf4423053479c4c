// Bit-level writing and reading for the chunk codec. Pure: bytes in, bytes out.
//
// Bit order is least-significant bit first (as Deflate): the first field written occupies the
// lowest bits of the first byte. That lets the reader fetch a field with one unaligned 64-bit
// little-endian load and a shift, and lets unary codes be read with `trailingZeroBitCount`.

/// Appends bit fields of 0…64 bits, least-significant bit first.
struct BitWriter {
    /// Whole words written are `storage[0..<wordCount]`; the rest is room, kept across
    /// `removeAll()` so one writer serves every column of a chunk.
    private var storage: [UInt64] = []
    private var wordCount = 0
    private var accumulator: UInt64 = 0
    /// Bits used in `accumulator`, always < 64.
    private var fill = 0

    init(reservingBits bits: Int = 0) {
        // Room only: every word is stored before it is read, so it need not be zeroed first.
        storage = [UInt64](unsafeUninitializedCapacity: bits / 64 + 2) { _, initialized in initialized = bits / 64 + 2 }
    }

    /// Bits written so far.
    var bitCount: Int { wordCount &* 64 &+ fill }

    /// Writes the low `count` bits of `value`; the bits above `count` must be zero.
    @inline(__always)
    mutating func write(_ value: UInt64, bits count: Int) {
        assert(count >= 0 && count <= 64 && (count == 64 || value >> UInt64(count) == 0))
        guard count > 0 else { return }
        let shift = UInt64(truncatingIfNeeded: fill)
        accumulator |= value &<< shift
        let total = fill &+ count
        if total >= 64 {
            if wordCount == storage.count { grow(toWords: wordCount + 1) }
            storage[wordCount] = accumulator
            wordCount &+= 1
            // The bits that did not fit: value >> (64 − fill), which is 0 for fill = 0.
            accumulator = (value &>> 1) &>> (63 &- shift)
            fill = total &- 64
        } else {
            fill = total
        }
    }

    /// A number of unknown size: its bit length in 7 bits (0…64), then the bits themselves.
    mutating func writeVarBits(_ value: UInt64) {
        let length = 64 - value.leadingZeroBitCount
        write(UInt64(length), bits: 7)
        write(value, bits: length)
    }

    /// Runs `body` with a cursor that may write at most `bits` bits: the room is reserved first,
    /// so the cursor's writes are plain stores through a pointer, with the bit buffer in
    /// registers (the block coder's inner loops).
    @inline(__always)
    mutating func withReservedBits<Result>(_ bits: Int, _ body: (inout BitCursor) -> Result) -> Result {
        let needed = wordCount + bits / 64 + 2
        if needed > storage.count { grow(toWords: needed) }
        let (start, accumulator, fill) = (wordCount, self.accumulator, self.fill)
        let (result, cursor) = storage.withUnsafeMutableBufferPointer { words in
            var cursor = BitCursor(words: words.baseAddress! + start, accumulator: accumulator, fill: fill)
            let result = body(&cursor)
            return (result, cursor)
        }
        assert(cursor.written * 64 + cursor.fill - fill <= bits, "wrote more than reserved")
        wordCount = start + cursor.written
        self.accumulator = cursor.accumulator
        self.fill = cursor.fill
        return result
    }

    private mutating func grow(toWords words: Int) {
        let count = max(words, storage.count * 2)
        var larger = [UInt64](unsafeUninitializedCapacity: count) { _, initialized in initialized = count }
        larger.withUnsafeMutableBufferPointer { larger in
            storage.withUnsafeBufferPointer { old in
                _ = larger.initialize(from: UnsafeBufferPointer(rebasing: old[0..<wordCount]))
            }
        }
        storage = larger
    }

    /// Forgets what was written, keeping the memory for the next column.
    mutating func removeAll() {
        wordCount = 0
        accumulator = 0
        fill = 0
    }

    /// Appends the bits written, as little-endian bytes, the last byte padded with zero bits.
    func append(to bytes: inout [UInt8]) {
        #if _endian(little)
            storage.withUnsafeBytes { bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[0..<wordCount * 8])) }
        #else
            for index in 0..<wordCount {
                withUnsafeBytes(of: storage[index].littleEndian) { bytes.append(contentsOf: $0) }
            }
        #endif
        let tailBytes = (fill + 7) / 8
        withUnsafeBytes(of: accumulator.littleEndian) { tail in
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: tail[0..<tailBytes]))
        }
    }

    /// The bits written, as little-endian bytes, the last byte padded with zero bits.
    func bytes() -> [UInt8] {
        var out: [UInt8] = []
        append(to: &out)
        return out
    }

    /// Bits needed for `writeVarBits(value)`.
    static func varBitsCost(_ value: UInt64) -> Int { 7 + 64 - value.leadingZeroBitCount }
}

/// Writes bit fields into room a `BitWriter` reserved (`withReservedBits`); same bit order.
struct BitCursor {
    private let words: UnsafeMutablePointer<UInt64>
    /// Whole words stored so far.
    private(set) var written = 0
    private(set) var accumulator: UInt64
    private(set) var fill: Int

    fileprivate init(words: UnsafeMutablePointer<UInt64>, accumulator: UInt64, fill: Int) {
        self.words = words
        self.accumulator = accumulator
        self.fill = fill
    }

    /// Writes the low `count` bits of `value` (0…64 bits); the bits above `count` must be zero.
    /// Branch-free but for the word boundary, with no conversion that could trap.
    @inline(__always)
    mutating func write(_ value: UInt64, bits count: Int) {
        let shift = UInt64(truncatingIfNeeded: fill)
        accumulator |= value &<< shift
        let total = fill &+ count
        if total >= 64 {
            words[written] = accumulator
            written &+= 1
            // The bits that did not fit: value >> (64 − fill), which is 0 for fill = 0
            // (`&>>` masks its shift to 6 bits, so 64 − 0 would not shift at all).
            accumulator = (value &>> 1) &>> (63 &- shift)
            fill = total &- 64
        } else {
            fill = total
        }
    }

    /// `BitWriter.writeVarBits` through the cursor.
    @inline(__always)
    mutating func writeVarBits(_ value: UInt64) {
        let length = 64 - value.leadingZeroBitCount
        write(UInt64(length), bits: 7)
        write(value, bits: length)
    }
}

/// Reads bit fields written by `BitWriter` from memory that stays valid and readable for at least
/// `BitReader.padding` bytes past `limit` (the decoder copies chunks into padded buffers), so
/// reads never check bounds per field; callers check `overran` at coarse steps instead.
struct BitReader {
    /// Bytes that must be readable past the end of the data: the widest single read (an escaped
    /// Rice value: 32 + 64 bits) can start anywhere before the limit.
    static let padding = 24

    private let base: UnsafeRawPointer
    /// The next bit to read.
    private(set) var position: Int
    /// One past the last valid bit.
    let limit: Int

    init(base: UnsafeRawPointer, bitOffset: Int = 0, limit: Int) {
        self.base = base
        self.position = bitOffset
        self.limit = limit
    }

    /// True once a read went past the data: the input was malformed.
    var overran: Bool { position > limit }

    /// At least 57 valid bits starting at `position`.
    @inline(__always)
    func peek() -> UInt64 {
        let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: position &>> 3, as: UInt64.self))
        return word &>> UInt64(position & 7)
    }

    @inline(__always)
    mutating func skip(_ bits: Int) { position &+= bits }

    /// Reads 0…56 bits.
    @inline(__always)
    mutating func read(bits count: Int) -> UInt64 {
        let value = peek() & BitReader.mask(count)
        position &+= count
        return value
    }

    /// Reads 0…64 bits.
    mutating func readWide(bits count: Int) -> UInt64 {
        if count <= 56 { return read(bits: count) }
        let low = read(bits: 32)
        let high = read(bits: count - 32)
        return low | high &<< 32
    }

    mutating func readVarBits() -> UInt64 {
        let length = Int(read(bits: 7))
        return readWide(bits: min(length, 64))
    }

    /// Moves to the next byte boundary.
    mutating func alignToByte() { position = (position + 7) & ~7 }

    @inline(__always)
    static func mask(_ bits: Int) -> UInt64 {
        bits >= 64 ? UInt64.max : (1 &<< UInt64(bits)) &- 1
    }
}

/// Zigzag mapping of signed to unsigned integers (0, −1, 1, −2, … → 0, 1, 2, 3, …), so small
/// magnitudes of either sign get short codes. Bijective on all 64-bit values.
@inline(__always)
func zigzag(_ value: Int64) -> UInt64 {
    UInt64(bitPattern: (value &<< 1) ^ (value &>> 63))
}

@inline(__always)
func unzigzag(_ value: UInt64) -> Int64 {
    Int64(bitPattern: (value &>> 1) ^ (0 &- (value & 1)))
}

/// LEB128-style variable-length unsigned integers for byte-aligned headers.
enum ByteVarint {
    static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    /// Reads a varint at `offset` (advanced past it); nil if truncated or longer than 10 bytes.
    static func read(_ bytes: UnsafeRawBufferPointer, at offset: inout Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count, shift < 70 {
            let byte = bytes[offset]
            offset += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }
}
