/// The Attribute Protocol PDUs the GATT client sends and understands, with their byte layouts
/// (Core Specification Vol 3 Part F §3.4; docs/ble.md lists them). Decoding is a pure function
/// over one PDU's bytes; anything short, overlong or inconsistent is a typed error, never a trap.
public enum ATTPDU: Equatable, Sendable {
    case errorResponse(requestOpcode: UInt8, handle: UInt16, error: ATTErrorCode)
    case exchangeMTURequest(clientReceiveMTU: UInt16)
    case exchangeMTUResponse(serverReceiveMTU: UInt16)
    case findInformationRequest(start: UInt16, end: UInt16)
    case findInformationResponse([HandleUUID])
    case readByTypeRequest(start: UInt16, end: UInt16, type: BluetoothUUID)
    case readByTypeResponse([HandleValue])
    case readRequest(handle: UInt16)
    case readResponse(value: [UInt8])
    case readBlobRequest(handle: UInt16, offset: UInt16)
    case readBlobResponse(value: [UInt8])
    case readByGroupTypeRequest(start: UInt16, end: UInt16, type: BluetoothUUID)
    case readByGroupTypeResponse([GroupValue])
    case writeRequest(handle: UInt16, value: [UInt8])
    case writeResponse
    case writeCommand(handle: UInt16, value: [UInt8])
    case handleValueNotification(handle: UInt16, value: [UInt8])
    case handleValueIndication(handle: UInt16, value: [UInt8])
    case handleValueConfirmation

    public struct HandleUUID: Equatable, Sendable {
        public var handle: UInt16
        public var uuid: BluetoothUUID
        public init(handle: UInt16, uuid: BluetoothUUID) {
            self.handle = handle
            self.uuid = uuid
        }
    }

    public struct HandleValue: Equatable, Sendable {
        public var handle: UInt16
        public var value: [UInt8]
        public init(handle: UInt16, value: [UInt8]) {
            self.handle = handle
            self.value = value
        }
    }

    public struct GroupValue: Equatable, Sendable {
        public var start: UInt16
        public var end: UInt16
        public var value: [UInt8]
        public init(start: UInt16, end: UInt16, value: [UInt8]) {
            self.start = start
            self.end = end
            self.value = value
        }
    }

    public enum Opcode: UInt8, Sendable {
        case errorResponse = 0x01
        case exchangeMTURequest = 0x02, exchangeMTUResponse = 0x03
        case findInformationRequest = 0x04, findInformationResponse = 0x05
        case readByTypeRequest = 0x08, readByTypeResponse = 0x09
        case readRequest = 0x0A, readResponse = 0x0B
        case readBlobRequest = 0x0C, readBlobResponse = 0x0D
        case readByGroupTypeRequest = 0x10, readByGroupTypeResponse = 0x11
        case writeRequest = 0x12, writeResponse = 0x13
        case writeCommand = 0x52
        case handleValueNotification = 0x1B
        case handleValueIndication = 0x1D, handleValueConfirmation = 0x1E
    }

    public enum DecodeError: Error, Equatable, Sendable {
        case empty
        /// An opcode this client does not implement (the bearer answers requests among them with
        /// Request Not Supported).
        case unsupportedOpcode(UInt8)
        case truncated(Opcode)
        case malformed(Opcode)
    }

    /// The lowest MTU of an LE ATT bearer (Core Vol 3 Part F §3.2.8); every link starts there.
    public static let defaultMTU = 23
    /// The largest ATT MTU on LE.
    public static let maximumMTU = 517

    public var opcode: Opcode {
        switch self {
        case .errorResponse: .errorResponse
        case .exchangeMTURequest: .exchangeMTURequest
        case .exchangeMTUResponse: .exchangeMTUResponse
        case .findInformationRequest: .findInformationRequest
        case .findInformationResponse: .findInformationResponse
        case .readByTypeRequest: .readByTypeRequest
        case .readByTypeResponse: .readByTypeResponse
        case .readRequest: .readRequest
        case .readResponse: .readResponse
        case .readBlobRequest: .readBlobRequest
        case .readBlobResponse: .readBlobResponse
        case .readByGroupTypeRequest: .readByGroupTypeRequest
        case .readByGroupTypeResponse: .readByGroupTypeResponse
        case .writeRequest: .writeRequest
        case .writeResponse: .writeResponse
        case .writeCommand: .writeCommand
        case .handleValueNotification: .handleValueNotification
        case .handleValueIndication: .handleValueIndication
        case .handleValueConfirmation: .handleValueConfirmation
        }
    }

    /// The PDU's bytes, opcode first.
    public func encoded() -> [UInt8] {
        var bytes = [opcode.rawValue]
        func u16(_ value: UInt16) { LittleEndianInteger.append(value, to: &bytes) }
        switch self {
        case .errorResponse(let request, let handle, let error):
            bytes.append(request)
            u16(handle)
            bytes.append(error.rawValue)
        case .exchangeMTURequest(let mtu), .exchangeMTUResponse(let mtu):
            u16(mtu)
        case .findInformationRequest(let start, let end):
            u16(start)
            u16(end)
        case .findInformationResponse(let entries):
            let wide = entries.first.map { $0.uuid.short == nil } ?? false
            bytes.append(wide ? 2 : 1)
            for entry in entries {
                u16(entry.handle)
                bytes += wide ? entry.uuid.littleEndianBytes : entry.uuid.onAirBytes
            }
        case .readByTypeRequest(let start, let end, let type), .readByGroupTypeRequest(let start, let end, let type):
            u16(start)
            u16(end)
            bytes += type.onAirBytes
        case .readByTypeResponse(let entries):
            bytes.append(UInt8(truncatingIfNeeded: 2 + (entries.first?.value.count ?? 0)))
            for entry in entries {
                u16(entry.handle)
                bytes += entry.value
            }
        case .readByGroupTypeResponse(let entries):
            bytes.append(UInt8(truncatingIfNeeded: 4 + (entries.first?.value.count ?? 0)))
            for entry in entries {
                u16(entry.start)
                u16(entry.end)
                bytes += entry.value
            }
        case .readRequest(let handle):
            u16(handle)
        case .readBlobRequest(let handle, let offset):
            u16(handle)
            u16(offset)
        case .readResponse(let value), .readBlobResponse(let value):
            bytes += value
        case .writeRequest(let handle, let value), .writeCommand(let handle, let value),
            .handleValueNotification(let handle, let value), .handleValueIndication(let handle, let value):
            u16(handle)
            bytes += value
        case .writeResponse, .handleValueConfirmation:
            break
        }
        return bytes
    }

    /// Decodes one whole PDU (one SEQPACKET packet or one L2CAP SDU).
    public init(decoding pdu: [UInt8]) throws(DecodeError) {
        guard let first = pdu.first else { throw .empty }
        guard let opcode = Opcode(rawValue: first) else { throw .unsupportedOpcode(first) }
        var reader = ByteReader(pdu[1...])
        do {
            self = try Self.decode(opcode, &reader)
        } catch is ByteReader.Truncated {
            throw .truncated(opcode)
        } catch let error as DecodeError {
            throw error
        } catch {
            throw .malformed(opcode)
        }
    }

    private static func decode(_ opcode: Opcode, _ reader: inout ByteReader) throws -> ATTPDU {
        func exactEnd() throws { if !reader.isAtEnd { throw DecodeError.malformed(opcode) } }
        switch opcode {
        case .errorResponse:
            let request = try reader.uint8(), handle = try reader.uint16(), code = try reader.uint8()
            try exactEnd()
            return .errorResponse(requestOpcode: request, handle: handle, error: ATTErrorCode(rawValue: code))
        case .exchangeMTURequest, .exchangeMTUResponse:
            let mtu = try reader.uint16()
            try exactEnd()
            return opcode == .exchangeMTURequest
                ? .exchangeMTURequest(clientReceiveMTU: mtu) : .exchangeMTUResponse(serverReceiveMTU: mtu)
        case .findInformationRequest:
            let start = try reader.uint16(), end = try reader.uint16()
            try exactEnd()
            return .findInformationRequest(start: start, end: end)
        case .findInformationResponse:
            let format = try reader.uint8()
            let uuidLength: Int
            switch format {
            case 1: uuidLength = 2
            case 2: uuidLength = 16
            default: throw DecodeError.malformed(opcode)
            }
            let entries = try entries(of: 2 + uuidLength, in: &reader, opcode) { entry in
                HandleUUID(handle: handle(entry), uuid: BluetoothUUID(littleEndian: entry.dropFirst(2))!)
            }
            return .findInformationResponse(entries)
        case .readByTypeRequest, .readByGroupTypeRequest:
            let start = try reader.uint16(), end = try reader.uint16()
            guard let type = BluetoothUUID(littleEndian: reader.rest()) else { throw DecodeError.malformed(opcode) }
            return opcode == .readByTypeRequest
                ? .readByTypeRequest(start: start, end: end, type: type)
                : .readByGroupTypeRequest(start: start, end: end, type: type)
        case .readByTypeResponse:
            let length = Int(try reader.uint8())
            guard length >= 2 else { throw DecodeError.malformed(opcode) }
            return .readByTypeResponse(
                try entries(of: length, in: &reader, opcode) { entry in
                    HandleValue(handle: handle(entry), value: Array(entry.dropFirst(2)))
                })
        case .readByGroupTypeResponse:
            let length = Int(try reader.uint8())
            guard length >= 4 else { throw DecodeError.malformed(opcode) }
            return .readByGroupTypeResponse(
                try entries(of: length, in: &reader, opcode) { entry in
                    GroupValue(start: handle(entry), end: handle(entry.dropFirst(2)), value: Array(entry.dropFirst(4)))
                })
        case .readRequest:
            let handle = try reader.uint16()
            try exactEnd()
            return .readRequest(handle: handle)
        case .readBlobRequest:
            let handle = try reader.uint16(), offset = try reader.uint16()
            try exactEnd()
            return .readBlobRequest(handle: handle, offset: offset)
        case .readResponse: return .readResponse(value: Array(reader.rest()))
        case .readBlobResponse: return .readBlobResponse(value: Array(reader.rest()))
        case .writeRequest, .writeCommand, .handleValueNotification, .handleValueIndication:
            let handle = try reader.uint16()
            let value = Array(reader.rest())
            switch opcode {
            case .writeRequest: return .writeRequest(handle: handle, value: value)
            case .writeCommand: return .writeCommand(handle: handle, value: value)
            case .handleValueNotification: return .handleValueNotification(handle: handle, value: value)
            default: return .handleValueIndication(handle: handle, value: value)
            }
        case .writeResponse, .handleValueConfirmation:
            try exactEnd()
            return opcode == .writeResponse ? .writeResponse : .handleValueConfirmation
        }
    }

    private static func handle(_ bytes: ArraySlice<UInt8>) -> UInt16 {
        UInt16(bytes[bytes.startIndex]) | UInt16(bytes[bytes.startIndex + 1]) << 8
    }

    /// A list of equal-length entries filling the rest of the PDU: at least one, and no remainder.
    private static func entries<T>(
        of length: Int, in reader: inout ByteReader, _ opcode: Opcode, _ make: (ArraySlice<UInt8>) -> T
    ) throws -> [T] {
        let rest = reader.rest()
        guard !rest.isEmpty else { throw DecodeError.truncated(opcode) }
        guard rest.count % length == 0 else { throw DecodeError.malformed(opcode) }
        return stride(from: rest.startIndex, to: rest.endIndex, by: length).map { make(rest[$0..<$0 + length]) }
    }
}

/// An ATT error code (Core Vol 3 Part F §3.4.1.1); application codes (0x80–0x9F) and common
/// profile codes (0xE0–0xFF) are kept as their raw value.
public struct ATTErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let invalidHandle = ATTErrorCode(rawValue: 0x01)
    public static let readNotPermitted = ATTErrorCode(rawValue: 0x02)
    public static let writeNotPermitted = ATTErrorCode(rawValue: 0x03)
    public static let invalidPDU = ATTErrorCode(rawValue: 0x04)
    public static let insufficientAuthentication = ATTErrorCode(rawValue: 0x05)
    public static let requestNotSupported = ATTErrorCode(rawValue: 0x06)
    public static let invalidOffset = ATTErrorCode(rawValue: 0x07)
    public static let attributeNotFound = ATTErrorCode(rawValue: 0x0A)
    public static let attributeNotLong = ATTErrorCode(rawValue: 0x0B)
    public static let insufficientEncryption = ATTErrorCode(rawValue: 0x0F)
    public static let unlikelyError = ATTErrorCode(rawValue: 0x0E)

    public var description: String { "ATT error 0x" + String(rawValue, radix: 16) }
}
