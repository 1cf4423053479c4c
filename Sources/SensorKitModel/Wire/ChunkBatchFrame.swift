/// A `chunk` frame's payload (docs/protocol.md §5.3): a whole stored chunk, handed to a client that
/// asked for it (`chunkFormats` on `fetch`), with the mapping that turns its stored columns into
/// the layout's columns. The client decodes the chunk itself, which spares the daemon the decode
/// and the socket 90% of the bytes. All little-endian:
///
///     u32 request id · u8 layout · u8 chunk format version · u16 layout column count k
///     u32 sample count n · u16 stored column count c
///     c × (u8 kind: 0 integer, 1 float · f64 scale · f64 offset)
///     k × (u8 term count t · t × (u16 stored column · f64 coefficient) · f64 divisor)
///     u32 chunk length L · L bytes: the chunk (docs/store.md), whose times are SR ns
///
/// Every sample in the chunk belongs to the fetch, in time order.
public struct ChunkBatchFrame: Hashable, Sendable {
    public var requestID: UInt32
    public var layout: BatchLayout
    public var formatVersion: UInt8
    public var count: Int
    public var mapping: ColumnMapping
    public var chunk: [UInt8]

    public init(requestID: UInt32, layout: BatchLayout, formatVersion: UInt8, count: Int, mapping: ColumnMapping, chunk: [UInt8])
    {
        precondition(mapping.outputs.count == layout.columns.count, "one output per layout column")
        self.requestID = requestID
        self.layout = layout
        self.formatVersion = formatVersion
        self.count = count
        self.mapping = mapping
        self.chunk = chunk
    }

    /// The payload's size in bytes.
    public static func payloadSize(mapping: ColumnMapping, chunkBytes: Int) -> Int {
        14 + mapping.sources.count * 17 + mapping.outputs.reduce(0) { $0 + 9 + $1.terms.count * 10 } + 4 + chunkBytes
    }

    /// Appends a whole `chunk` frame (header and payload) to `bytes`.
    public func appendFrame(to bytes: inout [UInt8]) {
        Self.appendFrameUpToChunk(
            requestID: requestID, layout: layout, formatVersion: formatVersion, count: count,
            mapping: mapping, chunkBytes: chunk.count, to: &bytes)
        bytes.append(contentsOf: chunk)
    }

    /// Appends a `chunk` frame up to its chunk bytes, announcing `chunkBytes` of them: the frame
    /// is whole once exactly those bytes follow it on the wire (the daemon sends them from the
    /// chunk's own array, without copying them after the header).
    public static func appendFrameUpToChunk(
        requestID: UInt32, layout: BatchLayout, formatVersion: UInt8, count: Int, mapping: ColumnMapping,
        chunkBytes: Int, to bytes: inout [UInt8]
    ) {
        precondition(count <= UInt32.max && mapping.sources.count <= UInt16.max && layout.columns.count == mapping.outputs.count)
        precondition(chunkBytes >= 0 && chunkBytes <= UInt32.max)
        var body: [UInt8] = []
        swap(&body, &bytes)
        let start = body.count
        Frame.appendHeader(kind: .chunk, payloadCount: 0, to: &body)  // length patched below
        appendLittleEndian(requestID, to: &body)
        body.append(layout.rawValue)
        body.append(formatVersion)
        appendLittleEndian(UInt16(mapping.outputs.count), to: &body)
        appendLittleEndian(UInt32(count), to: &body)
        appendLittleEndian(UInt16(mapping.sources.count), to: &body)
        for source in mapping.sources {
            body.append(source.isFloat ? 1 : 0)
            appendLittleEndian(source.scale.bitPattern, to: &body)
            appendLittleEndian(source.offset.bitPattern, to: &body)
        }
        for output in mapping.outputs {
            body.append(UInt8(output.terms.count))
            for term in output.terms {
                appendLittleEndian(UInt16(term.source), to: &body)
                appendLittleEndian(term.coefficient.bitPattern, to: &body)
            }
            appendLittleEndian(output.divisor.bitPattern, to: &body)
        }
        appendLittleEndian(UInt32(chunkBytes), to: &body)
        let frameLength = UInt32(body.count - start - 4 + chunkBytes)
        body.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: frameLength.littleEndian, toByteOffset: start, as: UInt32.self)
        }
        swap(&body, &bytes)
    }

    /// Decodes a `chunk` frame's payload (the chunk itself is left for the chunk decoder);
    /// rejects anything short, long or inconsistent. The `chunk` array gets at least
    /// `chunkPadding` zero bytes of spare capacity after its end, so a decoder that reads a
    /// little past its data can read the chunk where it lies (`ChunkDecoding`).
    public static func decode(
        _ raw: UnsafeRawBufferPointer, chunkPadding: Int = 0
    ) throws(SampleBatchFrame.DecodeError) -> ChunkBatchFrame {
        var reader = ByteReader(raw)
        let requestID: UInt32 = try reader.read()
        let layoutByte: UInt8 = try reader.read()
        let version: UInt8 = try reader.read()
        let outputCount = Int(try reader.read() as UInt16)
        let count = Int(try reader.read() as UInt32)
        let sourceCount = Int(try reader.read() as UInt16)
        guard let layout = BatchLayout(rawValue: layoutByte) else { throw .unknownLayout(layoutByte) }
        guard outputCount == layout.columns.count else { throw .columnCount(layout: layout, got: outputCount) }
        var sources: [ColumnMapping.Source] = []
        for _ in 0..<sourceCount {
            let kind: UInt8 = try reader.read()
            let scale = Double(bitPattern: try reader.read())
            let offset = Double(bitPattern: try reader.read())
            guard kind <= 1 else { throw .malformed("stored column kind \(kind)") }
            sources.append(ColumnMapping.Source(isFloat: kind == 1, scale: scale, offset: offset))
        }
        var outputs: [ColumnMapping.Output] = []
        for _ in 0..<outputCount {
            let termCount = Int(try reader.read() as UInt8)
            var terms: [ColumnMapping.Term] = []
            for _ in 0..<termCount {
                let source = Int(try reader.read() as UInt16)
                let coefficient = Double(bitPattern: try reader.read())
                guard source < sourceCount else { throw .malformed("term names stored column \(source) of \(sourceCount)") }
                terms.append(ColumnMapping.Term(source: source, coefficient: coefficient))
            }
            outputs.append(ColumnMapping.Output(terms: terms, divisor: Double(bitPattern: try reader.read())))
        }
        let length = Int(try reader.read() as UInt32)
        let chunk = try reader.readBytes(length, spareZeros: chunkPadding)
        guard reader.isAtEnd else { throw .trailingBytes(reader.remainingCount) }
        return ChunkBatchFrame(
            requestID: requestID, layout: layout, formatVersion: version, count: count,
            mapping: ColumnMapping(sources: sources, outputs: outputs), chunk: chunk)
    }
}
