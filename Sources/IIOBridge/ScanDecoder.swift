/// Turns the bytes of one scan into raw channel values: per value, load `storagebits` with the
/// element's endianness, shift right by `shift`, keep `realbits`, sign-extend if signed (the
/// kernel's description of `_type`, docs/iio.md §12.5). Scale and offset are not applied here: raw
/// counts are what the store keeps losslessly (docs/store.md).
///
/// An unsigned 64-bit element with `realbits == 64` keeps its bit pattern in Int64. Pure; the
/// per-value plan is computed once so decoding a scan allocates nothing.
public struct ScanDecoder: Hashable, Sendable {
    /// One value to extract from the scan.
    struct Step: Hashable, Sendable {
        let offset: Int
        let bytes: Int
        let bigEndian: Bool
        let shift: UInt64
        /// 64 − realbits: the value's top bit moved to bit 63 and back keeps `realbits` bits,
        /// sign-extended by the arithmetic shift back when signed — no mask, no branch.
        let unusedBits: UInt64
        let isSigned: Bool
    }

    public let layout: ScanLayout
    private let steps: [Step]
    private let timestampStep: Step?

    public init(layout: ScanLayout) {
        self.layout = layout
        var steps: [Step] = []
        var timestampStep: Step?
        for slot in layout.slots {
            let type = slot.type
            for repetition in 0..<type.repeatCount {
                let step = Step(
                    offset: slot.offset + repetition * type.storageBytes, bytes: type.storageBytes,
                    bigEndian: type.endianness == .big, shift: UInt64(type.shift),
                    unusedBits: UInt64(64 - type.realBits), isSigned: type.isSigned)
                if slot.firstValue == nil {
                    if repetition == 0 { timestampStep = step }
                } else {
                    steps.append(step)
                }
            }
        }
        self.steps = steps
        self.timestampStep = timestampStep
    }

    /// One decoded scan: values in layout order (repeats consecutive) and the kernel timestamp.
    public struct Scan: Hashable, Sendable {
        public var values: [Int64]
        public var timestamp: Int64?
    }

    /// Decodes the scan at the start of `bytes`, which must hold at least `layout.scanBytes`
    /// bytes (handing fewer is a bug of the caller: scans come whole from `ScanAssembler`).
    public func decode(_ bytes: UnsafeRawBufferPointer) -> Scan {
        var values = [Int64](repeating: 0, count: steps.count)
        let timestamp = values.withUnsafeMutableBufferPointer { decode(bytes, into: $0) }
        return Scan(values: values, timestamp: timestamp)
    }

    /// Decodes into caller-owned storage of `layout.valueCount` values; returns the timestamp.
    /// The allocation-free path for the capture loop.
    @discardableResult
    public func decode(_ bytes: UnsafeRawBufferPointer, into values: UnsafeMutableBufferPointer<Int64>) -> Int64? {
        precondition(bytes.count >= layout.scanBytes, "a partial scan reached the decoder")
        precondition(values.count >= steps.count, "value storage too small")
        steps.withUnsafeBufferPointer { steps in
            for position in steps.indices { values[position] = Self.extract(steps[position], from: bytes) }
        }
        return timestampStep.map { Self.extract($0, from: bytes) }
    }

    /// Convenience for tests and vectors.
    public func decode(_ bytes: [UInt8]) -> Scan {
        bytes.withUnsafeBytes { decode($0) }
    }

    @inline(__always)
    static func extract(_ step: Step, from bytes: UnsafeRawBufferPointer) -> Int64 {
        var word: UInt64
        switch step.bytes {
        case 1:
            word = UInt64(bytes[step.offset])
        case 2:
            let raw = bytes.loadUnaligned(fromByteOffset: step.offset, as: UInt16.self)
            word = UInt64(step.bigEndian ? UInt16(bigEndian: raw) : UInt16(littleEndian: raw))
        case 4:
            let raw = bytes.loadUnaligned(fromByteOffset: step.offset, as: UInt32.self)
            word = UInt64(step.bigEndian ? UInt32(bigEndian: raw) : UInt32(littleEndian: raw))
        default:
            let raw = bytes.loadUnaligned(fromByteOffset: step.offset, as: UInt64.self)
            word = step.bigEndian ? UInt64(bigEndian: raw) : UInt64(littleEndian: raw)
        }
        // Both below 64 (`ScanType` keeps shift + realbits within the storage bits, realbits ≥ 1),
        // so the masking shifts are exact.
        word = (word &>> step.shift) &<< step.unusedBits
        return step.isSigned ? Int64(bitPattern: word) &>> step.unusedBits : Int64(bitPattern: word &>> step.unusedBits)
    }
}
