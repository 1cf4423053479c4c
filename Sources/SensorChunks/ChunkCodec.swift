// The chunk format: a run of one stream's samples, columnar, compressed, checksummed. Pure
// functions over bytes; docs/store.md describes the format for readers in other languages.
//
//   byte 0       format version (2; 1 is read too: format 2 only added Predictor.receiveRuns)
//   byte 1       flags: bit 0 body is a zstd frame, bit 1 sensor times never decrease
//   varint       sample count n
//   varint       value column count c
//   varint       (only when bit 0) the body's uncompressed length
//   body         for each of the c + 2 columns (sensor time, receive offset, values…):
//                varint section length, then the section (see ColumnCoding)
//   4 bytes      CRC-32C (little endian) of everything before it
//
// Samples keep their arrival order; nothing is sorted on write, so duplicate and out-of-order
// timestamps round-trip exactly. Receive times are stored as offsets from the sensor time.

/// The samples of one chunk, column by column. Times are SR nanoseconds; float columns hold
/// `Double.bitPattern`s, so every payload (NaN included) round-trips bit for bit.
package struct ChunkSamples: Equatable, Sendable {
    package var times: [Int64]
    package var receiveTimes: [Int64]
    package var columns: [[Int64]]

    package init(times: [Int64] = [], receiveTimes: [Int64] = [], columns: [[Int64]]) {
        self.times = times
        self.receiveTimes = receiveTimes
        self.columns = columns
    }

    /// Empty, with `columnCount` value columns.
    package init(columnCount: Int) {
        self.init(columns: Array(repeating: [], count: columnCount))
    }

    package var count: Int { times.count }

    package mutating func append(contentsOf other: ChunkSamples) {
        precondition(other.columns.count == columns.count, "column count differs")
        times += other.times
        receiveTimes += other.receiveTimes
        for index in columns.indices { columns[index] += other.columns[index] }
    }

    package mutating func removeAll() {
        times.removeAll(keepingCapacity: true)
        receiveTimes.removeAll(keepingCapacity: true)
        for index in columns.indices { columns[index].removeAll(keepingCapacity: true) }
    }
}

/// Why a chunk could not be decoded. Any of these means the chunk is lost: the store reports it
/// as a `systemInitiated` deletion record and never returns its data.
package enum ChunkCodecError: Error, Equatable, Sendable {
    case checksumMismatch
    case unsupportedVersion(UInt8)
    case malformed(String)
}

package enum ChunkCodec {
    /// Written by this build. 2 added `Predictor.receiveRuns`; everything else is as in 1.
    package static let formatVersion: UInt8 = 2
    /// Read by this build.
    package static let readableVersions: ClosedRange<UInt8> = 1...2
    static let compressedFlag: UInt8 = 1
    static let nonDecreasingFlag: UInt8 = 2

    /// How hard the encoder tries. `.fast` is for the short-lived pieces written every commit;
    /// `.best` for sealed chunks that live for the whole window.
    package enum Effort: Sendable {
        case fast
        case best
    }

    /// Encodes samples; `roles` gives `.integer` or `.float` for each value column.
    package static func encode(_ samples: ChunkSamples, roles: [ColumnRole], effort: Effort) -> [UInt8] {
        encode(samples, range: 0..<samples.count, roles: roles, effort: effort)
    }

    /// Encodes the samples in `range` (no copy of the columns is made).
    package static func encode(_ samples: ChunkSamples, range: Range<Int>, roles: [ColumnRole], effort: Effort) -> [UInt8] {
        var encoder = ChunkEncoder()
        return encoder.encode(samples, range: range, roles: roles, effort: effort)
    }

    /// zstd's level for sealed chunks. The body is already entropy coded, so zstd only finds
    /// repeats (an ECG's beats); level 1 finds as much of that as 3 does on our streams.
    static let zstdLevel: Int32 = 1

    /// Whether zstd might save the 1/32 that pays for decompressing: a probe of four 4 KiB
    /// slices spread over the body is compressed first, and the whole body only when the probe
    /// shrinks by at least that much. Most sensor bodies are incompressible (noise), and a
    /// failed attempt on the whole body costs more than the rest of sealing a column.
    static func worthCompressing(_ body: [UInt8]) -> Bool {
        let slice = 4_096, slices = 4
        guard body.count > 4 * slice * slices else { return true }
        var probe: [UInt8] = []
        probe.reserveCapacity(slice * slices)
        let step = (body.count - slice) / (slices - 1)
        for index in 0..<slices { probe += body[index * step..<index * step + slice] }
        guard let packed = probe.withUnsafeBytes({ Zstd.compress($0, level: zstdLevel) }) else { return false }
        return packed.count < probe.count - probe.count / 32
    }

    /// True when the trailing CRC-32C matches the bytes before it.
    static func checksumMatches(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= 6 else { return false }
        let stored = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: bytes.count - 4, as: UInt32.self))
        return CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<bytes.count - 4])) == stored
    }

    /// What a chunk says about itself without decoding the columns.
    package struct Header: Equatable {
        package var count: Int
        package var columnCount: Int
        package var timesNonDecreasing: Bool
    }

    /// Verifies the checksum and decodes every column.
    package static func decode(_ bytes: [UInt8]) throws(ChunkCodecError) -> (header: Header, samples: ChunkSamples) {
        let result: Result<(Header, ChunkSamples), ChunkCodecError> = bytes.withUnsafeBytes { raw in
            do throws(ChunkCodecError) {
                return .success(try decode(raw))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Bytes past a chunk's end that, when the caller guarantees them readable, let `decode`
    /// read an uncompressed body where it lies: the bit reader reads up to `BitReader.padding`
    /// bytes past its data, and the body is followed by the 4-byte checksum.
    package static let inPlacePadding = BitReader.padding - 4

    /// Verifies the checksum and decodes every column. With `readablePastEnd` ≥ `inPlacePadding`
    /// (bytes after `raw` the caller guarantees readable), an uncompressed body is decoded in
    /// place; otherwise it is first copied into a padded buffer.
    package static func decode(
        _ raw: UnsafeRawBufferPointer, readablePastEnd: Int = 0
    ) throws(ChunkCodecError) -> (header: Header, samples: ChunkSamples) {
        guard checksumMatches(raw) else { throw .checksumMismatch }
        guard readableVersions.contains(raw[0]) else { throw .unsupportedVersion(raw[0]) }
        let flags = raw[1]
        let end = raw.count - 4
        var offset = 2
        guard let count = ByteVarint.read(raw, at: &offset), count <= 1 << 24,
            let columnCount = ByteVarint.read(raw, at: &offset), columnCount <= 4096
        else { throw .malformed("header") }
        let header = Header(count: Int(count), columnCount: Int(columnCount), timesNonDecreasing: flags & nonDecreasingFlag != 0)
        if flags & compressedFlag != 0 {
            guard let size = ByteVarint.read(raw, at: &offset), size <= 1 << 34, offset <= end else {
                throw .malformed("compressed body length")
            }
            let body = try Zstd.decompress(
                UnsafeRawBufferPointer(rebasing: raw[offset..<end]), size: Int(size), padding: BitReader.padding)
            return (header, try decodeBody(body, length: body.count - BitReader.padding, header: header))
        }
        guard offset <= end else { throw .malformed("header runs past the end") }
        if readablePastEnd >= inPlacePadding {
            return (
                header, try decodeBody(UnsafeRawBufferPointer(rebasing: raw[offset...]), length: end - offset, header: header)
            )
        }
        var body = [UInt8](repeating: 0, count: end - offset + BitReader.padding)
        body.withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[offset..<end])) }
        return (header, try decodeBody(body, length: end - offset, header: header))
    }

    private static func decodeBody(_ body: [UInt8], length: Int, header: Header) throws(ChunkCodecError) -> ChunkSamples {
        try typedCodecError {
            try body.withUnsafeBytes { (raw) throws(ChunkCodecError) in try decodeBody(raw, length: length, header: header) }
        }
    }

    /// The columns from `body`'s first `length` bytes; at least `BitReader.padding` bytes from
    /// there on must be readable.
    private static func decodeBody(_ body: UnsafeRawBufferPointer, length bodyLength: Int, header: Header) throws(ChunkCodecError)
        -> ChunkSamples
    {
        let n = header.count
        // Every 256 values of a column take at least 16 bits, every column at least a length byte:
        // a header claiming more is damaged (and must not make us allocate for it).
        guard n <= 128 * bodyLength + 256, header.columnCount + 2 <= bodyLength else {
            throw .malformed("header claims more than the body holds")
        }
        var cursor = 0
        func nextSection() throws(ChunkCodecError) -> UnsafeRawBufferPointer {
            let limited = UnsafeRawBufferPointer(rebasing: body[0..<bodyLength])
            guard let length = ByteVarint.read(limited, at: &cursor), length <= bodyLength - cursor else {
                throw .malformed("section length")
            }
            defer { cursor += Int(length) }
            return UnsafeRawBufferPointer(rebasing: body[cursor..<cursor + Int(length)])
        }
        let times = try decodeColumn(try nextSection(), count: n, times: nil)
        let offsetSection = try nextSection()
        var receiveTimes = try typedCodecError {
            try times.withUnsafeBufferPointer { (t) throws(ChunkCodecError) in
                try decodeColumn(offsetSection, count: n, times: t.baseAddress)
            }
        }
        // The offsets become receive times in place (no second array).
        receiveTimes.withUnsafeMutableBufferPointer { receive in
            times.withUnsafeBufferPointer { t in
                for index in 0..<n { receive[index] &+= t[index] }
            }
        }
        var columns: [[Int64]] = []
        columns.reserveCapacity(header.columnCount)
        for _ in 0..<header.columnCount { columns.append(try decodeColumn(try nextSection(), count: n, times: nil)) }
        return ChunkSamples(times: times, receiveTimes: receiveTimes, columns: columns)
    }

    /// Runs a closure whose typed throws got erased by a standard-library `rethrows` call.
    private static func typedCodecError<T>(_ body: () throws -> T) throws(ChunkCodecError) -> T {
        do {
            return try body()
        } catch let error as ChunkCodecError {
            throw error
        } catch {
            throw .malformed("\(error)")
        }
    }

    private static func decodeColumn(
        _ section: UnsafeRawBufferPointer, count: Int, times: UnsafePointer<Int64>?
    ) throws(ChunkCodecError) -> [Int64] {
        var failure: ChunkCodecError?
        let values = [Int64](unsafeUninitializedCapacity: count) { buffer, initialized in
            do throws(ChunkCodecError) {
                if let base = buffer.baseAddress {
                    try ColumnCoding.decode(section: section, count: count, times: times, into: base)
                }
            } catch {
                failure = error
                buffer.initialize(repeating: 0)
            }
            initialized = count
        }
        if let failure { throw failure }
        return values
    }
}
