import SensorTestKit
import Testing

@testable import IIOBridge

@Suite struct ScanDecoderTests {
    static func decoder(_ types: [String], timestamp: Bool = false) throws -> ScanDecoder {
        let specs = try types.enumerated().map {
            ScanElementSpec(channel: "c\($0.offset)", index: $0.offset, type: try ScanType(parsing: $0.element))
        }
        let ts =
            timestamp
            ? ScanElementSpec(channel: "in_timestamp", index: types.count, type: try ScanType(parsing: "le:s64/64>>0")) : nil
        return ScanDecoder(layout: try ScanLayout(elements: specs, timestamp: ts))
    }

    @Test(arguments: [
        ("be:s12/16>>4", [0xFF, 0xF0] as [UInt8], -1 as Int64),
        ("be:s12/16>>4", [0x7F, 0xF0], 2047),
        ("be:s12/16>>4", [0x80, 0x0F], -2048),  // low 4 bits below the shift are ignored
        ("le:s12/16>>4", [0xF0, 0xFF], -1),
        ("le:s13/16>>0", [0x00, 0x10], -4096),
        ("le:s13/16>>0", [0xFF, 0x0F], 4095),
        ("le:s13/16>>0", [0x01, 0xE0], 1),  // bits above realbits are masked off
        ("le:u16/16>>0", [0xFF, 0xFF], 65535),
        ("be:s16/16>>0", [0x80, 0x00], -32768),
        ("le:s8/8>>0", [200], -56),
        ("le:u8/8>>0", [200], 200),
        ("le:s32/32>>0", [0x00, 0x00, 0x00, 0x80], -2_147_483_648),
        ("be:u32/32>>0", [0xDE, 0xAD, 0xBE, 0xEF], 0xDEAD_BEEF),
        ("le:u24/32>>8", [0xAA, 0x01, 0x02, 0x03], 0x030201),
        ("le:s48/64>>2", [0xFC, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x03, 0x00], -1),
        ("le:s48/64>>2", [0xFC, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00], 0x3FFF_FFFF_FFFF),
        ("le:u64/64>>0", [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], -1),  // bit pattern kept
    ])
    func decodesSingleValues(type: String, bytes: [UInt8], expected: Int64) throws {
        #expect(try Self.decoder([type]).decode(bytes).values == [expected])
    }

    @Test func decodesRepeatedValues() throws {
        let decoder = try Self.decoder(["le:u32/32X2>>0"])
        #expect(decoder.decode([1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]).values == [1, 4_294_967_295])
    }

    @Test func decodesTimestampSeparately() throws {
        let decoder = try Self.decoder(["le:s16/16>>0", "le:s16/16>>0", "le:s16/16>>0"], timestamp: true)
        let bytes: [UInt8] = [
            0x01, 0x00, 0xFE, 0xFF, 0x00, 0x40, 0xEE, 0xEE,
            0x15, 0xCD, 0x5B, 0x07, 0x00, 0x00, 0x00, 0x00,
        ]
        let scan = decoder.decode(bytes)
        #expect(scan.values == [1, -2, 16384])
        #expect(scan.timestamp == 123_456_789)
    }

    /// Every type the ABI allows round-trips through an independent encoder, with padding bytes
    /// set to garbage.
    @Test func randomValuesRoundTripForEveryTypeShape() throws {
        var random = SeededGenerator(seed: 42)
        for storage in [8, 16, 32, 64] {
            for real in Set([1, 2, storage / 2 + 1, storage - 1, storage]).sorted() {
                for shift in Set([0, 1, storage - real]).sorted() where shift + real <= storage {
                    for signed in [true, false] {
                        for endian in ["le", "be"] {
                            let text = "\(endian):\(signed ? "s" : "u")\(real)/\(storage)X2>>\(shift)"
                            let decoder = try Self.decoder(["le:u8/8>>0", text, "be:s16/16>>0"], timestamp: true)
                            for _ in 0..<20 {
                                let values: [Int64] = [
                                    Int64(random.next() % 256), Self.random(real, signed, &random),
                                    Self.random(real, signed, &random), Self.random(16, true, &random),
                                ]
                                let timestamp = Int64(bitPattern: random.next())
                                let bytes = ScanEncoder.encode(decoder.layout, values: values, timestamp: timestamp)
                                let scan = decoder.decode(bytes)
                                #expect(scan.values == values, "\(text)")
                                #expect(scan.timestamp == timestamp)
                            }
                        }
                    }
                }
            }
        }
    }

    @Test func decodesIntoCallerStorageWithoutAllocating() throws {
        let decoder = try Self.decoder(["le:s16/16>>0", "le:s16/16>>0"], timestamp: true)
        let bytes = ScanEncoder.encode(decoder.layout, values: [-5, 7], timestamp: 99)
        var values = [Int64](repeating: 0, count: 2)
        let timestamp = values.withUnsafeMutableBufferPointer { storage in
            bytes.withUnsafeBytes { decoder.decode($0, into: storage) }
        }
        #expect(values == [-5, 7])
        #expect(timestamp == 99)
    }

    /// A value representable in `bits` bits, signed or not (bit pattern for unsigned 64-bit).
    static func random(_ bits: Int, _ signed: Bool, _ random: inout SeededGenerator) -> Int64 {
        let word = random.next()
        if bits == 64 { return Int64(bitPattern: word) }
        let masked = word & ((UInt64(1) << UInt64(bits)) - 1)
        if signed, masked & (UInt64(1) << UInt64(bits - 1)) != 0 {
            return Int64(bitPattern: masked | ~((UInt64(1) << UInt64(bits)) - 1))
        }
        return Int64(masked)
    }
}
