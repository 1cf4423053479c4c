/// The one cursor over untrusted bytes: wire frames (`SampleBatchFrame`, `ChunkBatchFrame`), BLE
/// PDUs and frames, and the small ASCII grammars of sysfs (`ScanType`). Every read checks the
/// remaining length first, so a parser built on it never reads past its input, whatever the input
/// says: a read that needs more bytes than are left throws `ByteTruncation` (how many it needed,
/// how many were left) and consumes nothing; the optional forms (`next`, `take(upTo:)`, `skip`)
/// answer nil, fewer or false instead. Integers are little-endian.
///
/// Generic over the bytes' collection so that each caller reads what it holds without a copy: an
/// `UnsafeRawBufferPointer` borrowed from a frame decoder, an `ArraySlice` of a BLE PDU, an array.
public struct ByteReader<Bytes: RandomAccessCollection> where Bytes.Element == UInt8, Bytes.Index == Int {
    public typealias Truncated = ByteTruncation

    @usableFromInline let bytes: Bytes
    @usableFromInline var position: Int
    /// The index in `bytes` of the next byte to read.
    @inlinable public var offset: Int { position }

    @inlinable public init(_ bytes: Bytes) {
        self.bytes = bytes
        self.position = bytes.startIndex
    }

    @inlinable public var remainingCount: Int { bytes.endIndex - offset }
    @inlinable public var isAtEnd: Bool { offset >= bytes.endIndex }

    /// The next `count` bytes, consumed; throws when fewer are left (or `count` is negative).
    @inlinable public mutating func take(_ count: Int) throws(ByteTruncation) -> Bytes.SubSequence {
        guard count >= 0, remainingCount >= count else { throw ByteTruncation(needed: count, have: remainingCount) }
        defer { position += count }
        return bytes[offset..<offset + count]
    }

    /// The next `count` bytes, or what is left when fewer are, consumed.
    @inlinable public mutating func take(upTo count: Int) -> Bytes.SubSequence {
        let end = offset + min(max(0, count), remainingCount)
        defer { position = end }
        return bytes[offset..<end]
    }

    /// Everything left, consumed.
    @inlinable public mutating func rest() -> Bytes.SubSequence {
        defer { position = bytes.endIndex }
        return bytes[offset...]
    }

    /// The next byte without consuming it, or nil at the end.
    @inlinable public func peek() -> UInt8? { isAtEnd ? nil : bytes[offset] }

    /// The next byte, or nil at the end.
    @inlinable public mutating func next() -> UInt8? {
        guard !isAtEnd else { return nil }
        defer { position += 1 }
        return bytes[offset]
    }

    /// Consumes `literal` when it comes next; false (nothing consumed) otherwise.
    @inlinable public mutating func skip(_ literal: some Collection<UInt8>) -> Bool {
        guard remainingCount >= literal.count, bytes[offset..<offset + literal.count].elementsEqual(literal) else {
            return false
        }
        position += literal.count
        return true
    }

    /// A little-endian integer of `T`'s size.
    @inlinable public mutating func integer<T: FixedWidthInteger>(_: T.Type = T.self) throws(ByteTruncation) -> T {
        let raw = try take(MemoryLayout<T>.size)
        var value: T = 0
        for index in raw.indices.reversed() { value = value << 8 | T(truncatingIfNeeded: raw[index]) }
        return value
    }

    @inlinable public mutating func uint8() throws(ByteTruncation) -> UInt8 { try integer() }
    @inlinable public mutating func uint16() throws(ByteTruncation) -> UInt16 { try integer() }
    @inlinable public mutating func uint32() throws(ByteTruncation) -> UInt32 { try integer() }
    @inlinable public mutating func uint64() throws(ByteTruncation) -> UInt64 { try integer() }

    /// A signed little-endian integer of `width` bytes (1…4), sign-extended.
    @inlinable public mutating func signed(width: Int) throws(ByteTruncation) -> Int32 {
        precondition((1...4).contains(width), "a signed field is 1 to 4 bytes")
        let raw = try take(width)
        var value: UInt32 = 0
        for index in raw.indices.reversed() { value = value << 8 | UInt32(raw[index]) }
        let shift = UInt32(32 - width * 8)
        return Int32(bitPattern: value << shift) >> Int32(shift)
    }

    /// `count` values of `T` as they lie in memory on this (little-endian) host, copied once.
    @inlinable public mutating func array<T: BitwiseCopyable>(_ count: Int, of _: T.Type = T.self) throws(ByteTruncation) -> [T] {
        let (size, overflow) = count.multipliedReportingOverflow(by: MemoryLayout<T>.stride)
        guard count >= 0, !overflow, remainingCount >= size else {
            throw ByteTruncation(needed: overflow ? Int.max : size, have: remainingCount)
        }
        let start = offset - bytes.startIndex
        let values = [T](unsafeUninitializedCapacity: count) { buffer, initialized in
            copy(from: start, count: size, to: UnsafeMutableRawBufferPointer(buffer))
            initialized = count
        }
        position += size
        return values
    }

    /// The next `count` bytes as an array with at least `spareZeros` zero bytes of capacity
    /// after them (outside the array's count), for decoders that read a little past their data.
    @inlinable public mutating func bytes(_ count: Int, spareZeros: Int) throws(ByteTruncation) -> [UInt8] {
        guard count >= 0, remainingCount >= count else { throw ByteTruncation(needed: count, have: remainingCount) }
        let start = offset - bytes.startIndex
        let result = [UInt8](unsafeUninitializedCapacity: count + max(0, spareZeros)) { buffer, initialized in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            copy(from: start, count: count, to: raw)
            for index in count..<raw.count { raw[index] = 0 }
            initialized = count
        }
        position += count
        return result
    }

    /// Copies `count` bytes from position `start` (0-based) into the front of `destination`.
    @inlinable func copy(from start: Int, count: Int, to destination: UnsafeMutableRawBufferPointer) {
        guard count > 0 else { return }
        let copied: Void? = bytes.withContiguousStorageIfAvailable { source in
            destination.copyMemory(from: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: source[start..<start + count])))
        }
        if copied == nil {
            for index in 0..<count { destination[index] = bytes[bytes.startIndex + start + index] }
        }
    }
}

/// A read needed more bytes than were left.
public struct ByteTruncation: Error, Hashable, Sendable {
    public let needed: Int
    public let have: Int
    @inlinable public init(needed: Int, have: Int) {
        self.needed = needed
        self.have = have
    }
}
