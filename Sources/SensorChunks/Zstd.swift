import CZstd

/// libzstd, wrapped in this one place. Both calls are pure CPU work on memory (no I/O, never
/// block on anything but the processor).
enum Zstd {
    /// `ZSTD_compress` at `level`; nil when libzstd reports an error (it does not for valid input).
    static func compress(_ input: UnsafeRawBufferPointer, level: Int32) -> [UInt8]? {
        let capacity = ZSTD_compressBound(input.count)
        var output = [UInt8](repeating: 0, count: capacity)
        let written = output.withUnsafeMutableBytes { out in
            ZSTD_compress(out.baseAddress, capacity, input.baseAddress, input.count, level)
        }
        guard ZSTD_isError(written) == 0 else { return nil }
        output.removeLast(capacity - written)
        return output
    }

    /// `ZSTD_decompress` of a frame that must expand to exactly `size` bytes; the result has
    /// `padding` zero bytes appended (the bit reader reads a little past the end).
    static func decompress(
        _ input: UnsafeRawBufferPointer, size: Int, padding: Int
    ) throws(ChunkCodecError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: size + padding)
        let produced = output.withUnsafeMutableBytes { out in
            ZSTD_decompress(out.baseAddress, size, input.baseAddress, input.count)
        }
        guard ZSTD_isError(produced) == 0 else {
            throw .malformed("zstd: " + String(cString: ZSTD_getErrorName(produced)))
        }
        guard produced == size else { throw .malformed("zstd frame expands to \(produced) bytes, not \(size)") }
        return output
    }
}
