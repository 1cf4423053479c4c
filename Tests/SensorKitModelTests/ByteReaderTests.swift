import SensorKitModel
import Testing

/// The one byte reader behind the wire frames, the BLE parsers and the sysfs grammars.
@Suite struct ByteReaderTests {
    static let bytes: [UInt8] = [0xFF, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x80]

    @Test func readsLittleEndianFromAnySliceOrBorrowedBuffer() throws {
        // An array slice that does not start at 0 (a BLE PDU after its opcode) and a raw buffer
        // (a frame borrowed from the decoder) read the same.
        var slice = ByteReader(Self.bytes[1...])
        #expect(try slice.uint16() == 0x0201)
        #expect(try slice.integer(UInt32.self) == 0x0605_0403)
        #expect(try slice.signed(width: 3) == 0x80_0807 - 0x100_0000)
        #expect(slice.isAtEnd)
        let borrowed = Self.bytes.withUnsafeBytes { raw in
            var reader = ByteReader(raw)
            return (
                try? reader.uint8(), try? reader.array(2, of: UInt16.self), try? reader.bytes(3, spareZeros: 4),
                reader.remainingCount
            )
        }
        #expect(borrowed.0 == 0xFF && borrowed.1 == [0x0201, 0x0403] && borrowed.2 == [0x05, 0x06, 0x07])
        #expect(borrowed.3 == 2)
    }

    @Test func signedFieldsAreSignExtended() throws {
        var reader = ByteReader([0xFF, 0x00, 0x80, 0xFE, 0xFF, 0xFF, 0x7F])
        #expect(try reader.signed(width: 1) == -1)
        #expect(try reader.signed(width: 2) == -32768)
        #expect(try reader.signed(width: 4) == 0x7FFF_FFFE)
    }

    /// A read past the end says how short the input is and consumes nothing; the optional
    /// forms answer nil, fewer or false.
    @Test func aShortInputThrowsOrAnswersNothingAndConsumesNothing() throws {
        var reader = ByteReader([0x01, 0x02, 0x03])
        _ = try reader.uint8()
        #expect(throws: ByteTruncation(needed: 4, have: 2)) { try reader.integer(UInt32.self) }
        #expect(throws: ByteTruncation(needed: 8, have: 2)) { try reader.array(1, of: Int64.self) }
        #expect(throws: ByteTruncation(needed: -1, have: 2)) { try reader.take(-1) }
        #expect(throws: ByteTruncation.self) { try reader.array(Int.max, of: Double.self) }
        #expect(reader.offset == 1)
        #expect(!reader.skip([0x02, 0x03, 0x04]) && reader.skip([0x02]))
        #expect(Array(reader.take(upTo: 5)) == [0x03])
        #expect(reader.next() == nil && reader.peek() == nil && reader.isAtEnd)
        #expect(reader.rest().isEmpty)
    }
}
