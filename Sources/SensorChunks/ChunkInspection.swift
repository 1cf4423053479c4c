// Reading a chunk without decoding its columns, and decoding one outside the store: what a fetch
// needs to hand stored chunks to a client as they are (docs/protocol.md §5.3), and what the
// client library needs to decode them. The bytes are `ChunkCodec`'s format (docs/store.md).

extension ChunkCodec {
    /// A verified chunk's header: checksum, version and counts checked, columns not decoded.
    package struct Inspection: Equatable {
        package var version: UInt8
        package var header: Header
    }

    /// Checks the checksum and reads the header; the body is not touched beyond the CRC.
    package static func inspect(_ raw: UnsafeRawBufferPointer) throws(ChunkCodecError) -> Inspection {
        guard checksumMatches(raw) else { throw .checksumMismatch }
        let version = raw[0]
        guard readableVersions.contains(version) else { throw .unsupportedVersion(version) }
        var offset = 2
        guard let count = ByteVarint.read(raw, at: &offset), count <= 1 << 24,
            let columnCount = ByteVarint.read(raw, at: &offset), columnCount <= 4096
        else { throw .malformed("header") }
        let header = Header(count: Int(count), columnCount: Int(columnCount), timesNonDecreasing: raw[1] & nonDecreasingFlag != 0)
        return Inspection(version: version, header: header)
    }
}

/// The chunk decoder for code outside the store in this package (the SensorKit client decodes
/// chunks a fetch delivers as they were stored). Same checks as the store's own reads.
package enum StoredChunk {
    /// Chunk format versions this build decodes.
    package static var readableVersions: ClosedRange<UInt8> { ChunkCodec.readableVersions }

    /// The columns of a chunk: sensor and receive times (SR ns) and the stored value columns
    /// (integer counts, or `Double.bitPattern`s for float columns), in the order stored.
    package struct Columns: Sendable {
        package var sensorTimes: [Int64]
        package var receiveTimes: [Int64]
        package var values: [[Int64]]
        package var timesNonDecreasing: Bool
    }

    package struct DecodeError: Error, CustomStringConvertible {
        package let description: String
    }

    /// Bytes past the end of a chunk that, when readable, spare `decode` a copy of the body.
    package static var inPlacePadding: Int { ChunkCodec.inPlacePadding }

    /// Verifies and decodes a whole chunk; `readablePastEnd` bytes after `bytes` are readable.
    package static func decode(_ bytes: UnsafeRawBufferPointer, readablePastEnd: Int = 0) throws(DecodeError) -> Columns {
        do {
            let (header, samples) = try ChunkCodec.decode(bytes, readablePastEnd: readablePastEnd)
            return Columns(
                sensorTimes: samples.times, receiveTimes: samples.receiveTimes, values: samples.columns,
                timesNonDecreasing: header.timesNonDecreasing)
        } catch {
            throw DecodeError(description: "stored chunk: \(error)")
        }
    }
}
