@testable import IIOBridge

/// Writes scans the way a driver fills them, independently of `ScanDecoder`: each value masked to
/// its real bits, shifted left, stored in its endianness at the layout's offset; padding bytes
/// are filled with `padding` so a decoder that reads them is caught.
enum ScanEncoder {
    static func encode(_ layout: ScanLayout, values: [Int64], timestamp: Int64? = nil, padding: UInt8 = 0xA5) -> [UInt8] {
        var bytes = [UInt8](repeating: padding, count: layout.scanBytes)
        var next = 0
        for slot in layout.slots {
            let type = slot.type
            for repetition in 0..<type.repeatCount {
                let value: Int64
                if slot.firstValue == nil { value = timestamp ?? 0 } else { value = values[next]; next += 1 }
                let mask: UInt64 = type.realBits == 64 ? ~0 : (UInt64(1) << UInt64(type.realBits)) - 1
                let word = (UInt64(bitPattern: value) & mask) << UInt64(type.shift)
                let offset = slot.offset + repetition * type.storageBytes
                for byte in 0..<type.storageBytes {
                    let shift = type.endianness == .little ? byte * 8 : (type.storageBytes - 1 - byte) * 8
                    bytes[offset + byte] = UInt8(truncatingIfNeeded: word >> UInt64(shift))
                }
            }
        }
        precondition(next == values.count, "wrong number of values for the layout")
        return bytes
    }
}
