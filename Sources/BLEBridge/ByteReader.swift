import SensorKitModel

/// BLE's parsers read PDUs and frames as array slices with the one byte reader
/// (`SensorKitModel.ByteReader`): a read past the end throws `ByteReader.Truncated`.
typealias ByteReader = SensorKitModel.ByteReader<ArraySlice<UInt8>>

extension ByteReader {
    init(_ bytes: [UInt8]) { self.init(bytes[...]) }
}

enum LittleEndianInteger {
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
