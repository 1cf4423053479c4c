import Testing

@testable import BLEBridge

/// Byte vectors written from the layouts in the Core Specification (Vol 3 Part F §3.4) and the
/// GATT discovery procedures (Part G §4), as docs/ble.md lists them.
@Suite struct ATTPDUTests {
    static let vectors: [([UInt8], ATTPDU)] = [
        ([0x02, 0xF7, 0x00], .exchangeMTURequest(clientReceiveMTU: 247)),
        ([0x03, 0x00, 0x02], .exchangeMTUResponse(serverReceiveMTU: 512)),
        ([0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28], .readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .primaryService)),
        (
            [0x11, 0x06, 0x01, 0x00, 0x04, 0x00, 0x0D, 0x18, 0x05, 0x00, 0x08, 0x00, 0x0F, 0x18],
            .readByGroupTypeResponse([
                .init(start: 1, end: 4, value: [0x0D, 0x18]), .init(start: 5, end: 8, value: [0x0F, 0x18]),
            ])
        ),
        ([0x01, 0x10, 0x09, 0x00, 0x0A], .errorResponse(requestOpcode: 0x10, handle: 9, error: .attributeNotFound)),
        ([0x08, 0x01, 0x00, 0x04, 0x00, 0x03, 0x28], .readByTypeRequest(start: 1, end: 4, type: .characteristicDeclaration)),
        (
            [0x09, 0x07, 0x02, 0x00, 0x10, 0x03, 0x00, 0x37, 0x2A],
            .readByTypeResponse([.init(handle: 2, value: [0x10, 0x03, 0x00, 0x37, 0x2A])])
        ),
        ([0x04, 0x04, 0x00, 0x04, 0x00], .findInformationRequest(start: 4, end: 4)),
        (
            [0x05, 0x01, 0x04, 0x00, 0x02, 0x29],
            .findInformationResponse([.init(handle: 4, uuid: .clientCharacteristicConfiguration)])
        ),
        ([0x0A, 0x03, 0x00], .readRequest(handle: 3)),
        ([0x0B, 0x48, 0x31, 0x30], .readResponse(value: Array("H10".utf8))),
        ([0x0C, 0x03, 0x00, 0x16, 0x00], .readBlobRequest(handle: 3, offset: 22)),
        ([0x12, 0x04, 0x00, 0x01, 0x00], .writeRequest(handle: 4, value: [0x01, 0x00])),
        ([0x13], .writeResponse),
        ([0x52, 0x04, 0x00, 0x01], .writeCommand(handle: 4, value: [0x01])),
        ([0x1B, 0x03, 0x00, 0x10, 0x58], .handleValueNotification(handle: 3, value: [0x10, 0x58])),
        (
            [0x1D, 0x0E, 0x00, 0xF0, 0x02, 0x00, 0x00, 0x00],
            .handleValueIndication(handle: 14, value: [0xF0, 0x02, 0x00, 0x00, 0x00])
        ),
        ([0x1E], .handleValueConfirmation),
    ]

    @Test func decodesAndEncodesSpecificationVectors() throws {
        for (bytes, pdu) in Self.vectors {
            #expect(try ATTPDU(decoding: bytes) == pdu, "\(bytes)")
            #expect(pdu.encoded() == bytes, "\(pdu)")
        }
    }

    @Test func polarControlPointUUIDIsLittleEndianOnAir() throws {
        let bytes: [UInt8] = [
            0x05, 0x02, 0x0E, 0x00, 0xC8, 0xF0, 0x8D, 0x2D, 0xCD, 0x8A, 0xAD, 0x1C, 0x87, 0xF3, 0xE7, 0x02, 0x81, 0x5C, 0x00,
            0xFB,
        ]
        #expect(try ATTPDU(decoding: bytes) == .findInformationResponse([.init(handle: 14, uuid: .polarMeasurementControlPoint)]))
        #expect(BluetoothUUID.polarMeasurementControlPoint.description == "FB005C81-02E7-F387-1CAD-8ACD2D8DF0C8")
        #expect(BluetoothUUID(littleEndian: BluetoothUUID(0x2A37).littleEndianBytes[...]) == BluetoothUUID(0x2A37))
    }

    /// Every prefix of every vector (bytes drip-fed one at a time) decodes to a value or a typed
    /// error, never a trap; the prefixes that cut into a fixed field are `truncated`.
    @Test func everyPrefixIsAnErrorOrAValue() {
        for (bytes, _) in Self.vectors {
            for length in 0..<bytes.count {
                _ = try? ATTPDU(decoding: Array(bytes.prefix(length)))
            }
        }
        #expect(throws: ATTPDU.DecodeError.empty) { try ATTPDU(decoding: []) }
        #expect(throws: ATTPDU.DecodeError.truncated(.exchangeMTUResponse)) { try ATTPDU(decoding: [0x03, 0x00]) }
        #expect(throws: ATTPDU.DecodeError.truncated(.errorResponse)) { try ATTPDU(decoding: [0x01, 0x10, 0x09, 0x00]) }
        #expect(throws: ATTPDU.DecodeError.truncated(.readByGroupTypeResponse)) { try ATTPDU(decoding: [0x11, 0x06]) }
    }

    @Test func rejectsInconsistentLists() {
        // 7 bytes of entries with length 6: a list that does not divide.
        #expect(throws: ATTPDU.DecodeError.malformed(.readByGroupTypeResponse)) {
            try ATTPDU(decoding: [0x11, 0x06, 0x01, 0x00, 0x04, 0x00, 0x0D, 0x18, 0x05])
        }
        #expect(throws: ATTPDU.DecodeError.malformed(.readByTypeResponse)) { try ATTPDU(decoding: [0x09, 0x01, 0x02]) }
        #expect(throws: ATTPDU.DecodeError.malformed(.findInformationResponse)) {
            try ATTPDU(decoding: [0x05, 0x03, 0x04, 0x00, 0x02, 0x29])
        }
        #expect(throws: ATTPDU.DecodeError.malformed(.exchangeMTURequest)) { try ATTPDU(decoding: [0x02, 0xF7, 0x00, 0x00]) }
        #expect(throws: ATTPDU.DecodeError.unsupportedOpcode(0x06)) { try ATTPDU(decoding: [0x06, 0x01]) }
    }
}
