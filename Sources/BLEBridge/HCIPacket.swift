/// HCI packets as an HCI user channel (and BlueZ's `btproxy`, and our socket-backed controller)
/// carries them: one packet per read or write, its first byte the H4 packet type (Core Vol 4
/// Part A §2). Commands go to the controller; events and ACL data come back. Pure codecs over
/// hostile bytes: every length is checked, nothing traps (docs/ble.md §5).
public enum HCIPacketType: UInt8, Sendable {
    case command = 0x01, acl = 0x02, event = 0x04
}

/// One HCI command (Core Vol 4 Part E §5.4.1): opcode (OCF in the low 10 bits, OGF in the high 6),
/// little-endian, then the parameter length and the parameters.
public struct HCICommand: Equatable, Sendable {
    public var opcode: UInt16
    public var parameters: [UInt8]

    public init(opcode: UInt16, parameters: [UInt8] = []) {
        self.opcode = opcode
        self.parameters = parameters
    }

    /// `01 opcode(2) length parameters`. Parameters over 255 bytes cannot be said and are cut
    /// (no command built here comes near it).
    public var bytes: [UInt8] {
        let body = parameters.prefix(255)
        return [HCIPacketType.command.rawValue, UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(body.count)] + body
    }

    public static func opcode(ogf: UInt16, ocf: UInt16) -> UInt16 { ogf << 10 | (ocf & 0x03FF) }

    // The commands this host sends, by their opcodes (Core Vol 4 Part E §7).
    public static let disconnect = opcode(ogf: 0x01, ocf: 0x0006)
    public static let setEventMask = opcode(ogf: 0x03, ocf: 0x0001)
    public static let reset = opcode(ogf: 0x03, ocf: 0x0003)
    public static let readBufferSize = opcode(ogf: 0x04, ocf: 0x0005)
    public static let readBDAddress = opcode(ogf: 0x04, ocf: 0x0009)
    public static let leSetEventMask = opcode(ogf: 0x08, ocf: 0x0001)
    public static let leReadBufferSize = opcode(ogf: 0x08, ocf: 0x0002)
    public static let leSetScanParameters = opcode(ogf: 0x08, ocf: 0x000B)
    public static let leSetScanEnable = opcode(ogf: 0x08, ocf: 0x000C)
    public static let leCreateConnection = opcode(ogf: 0x08, ocf: 0x000D)
    public static let leCreateConnectionCancel = opcode(ogf: 0x08, ocf: 0x000E)
    public static let leConnectionUpdate = opcode(ogf: 0x08, ocf: 0x0013)
}

/// An LE connection's timing in controller units (interval 1.25 ms, timeout 10 ms).
public struct HCIConnectionParameters: Equatable, Sendable {
    public var intervalMinimum: UInt16
    public var intervalMaximum: UInt16
    public var latency: UInt16
    public var supervisionTimeout: UInt16

    public init(intervalMinimum: UInt16, intervalMaximum: UInt16, latency: UInt16, supervisionTimeout: UInt16) {
        self.intervalMinimum = intervalMinimum
        self.intervalMaximum = intervalMaximum
        self.latency = latency
        self.supervisionTimeout = supervisionTimeout
    }

    /// The ranges of Core Vol 4 Part E §7.8.12 (interval 6…3200, latency ≤ 499, timeout 10…3200)
    /// and the rule that the supervision timeout outlasts `(1 + latency)` maximum intervals twice.
    public var isValid: Bool {
        guard (6...3200).contains(intervalMinimum), (6...3200).contains(intervalMaximum), intervalMinimum <= intervalMaximum,
            latency <= 499, (10...3200).contains(supervisionTimeout)
        else { return false }
        // timeout (10 ms units) × 10 ms > (1 + latency) × interval (1.25 ms units) × 1.25 ms × 2
        return Int(supervisionTimeout) * 4 > (1 + Int(latency)) * Int(intervalMaximum)
    }
}

/// The events this host acts on (Core Vol 4 Part E §7.7); anything else is `.other`.
public enum HCIEvent: Equatable, Sendable {
    case commandComplete(commandPackets: UInt8, opcode: UInt16, returnParameters: [UInt8])
    case commandStatus(status: UInt8, commandPackets: UInt8, opcode: UInt16)
    case disconnectionComplete(status: UInt8, handle: UInt16, reason: UInt8)
    /// (connection handle, packets completed) pairs.
    case numberOfCompletedPackets([HCICompletedPackets])
    case leConnectionComplete(HCIConnectionComplete)
    case leAdvertisingReports([HCIAdvertisingReport])
    /// An event or LE subevent this host does not use (code, and subevent for LE Meta).
    case other(code: UInt8, subevent: UInt8?)

    public enum ParseError: Error, Equatable, Sendable {
        case notAnEvent
        case lengthMismatch(declared: Int, actual: Int)
        /// A known event whose parameters are short, long or inconsistent.
        case malformed(code: UInt8)
    }

    static let commandCompleteCode: UInt8 = 0x0E
    static let commandStatusCode: UInt8 = 0x0F
    static let disconnectionCompleteCode: UInt8 = 0x05
    static let numberOfCompletedPacketsCode: UInt8 = 0x13
    static let leMetaCode: UInt8 = 0x3E
    static let leConnectionCompleteSubevent: UInt8 = 0x01
    static let leAdvertisingReportSubevent: UInt8 = 0x02
    static let leEnhancedConnectionCompleteSubevent: UInt8 = 0x0A

    /// Parses one packet: `04 code length parameters`, the length exactly the bytes that follow.
    public static func parse(_ bytes: [UInt8]) throws(ParseError) -> HCIEvent {
        guard bytes.count >= 3, bytes[0] == HCIPacketType.event.rawValue else { throw .notAnEvent }
        let code = bytes[1]
        let declared = Int(bytes[2])
        guard declared == bytes.count - 3 else { throw .lengthMismatch(declared: declared, actual: bytes.count - 3) }
        var reader = ByteReader(bytes[3...])
        do {
            let event = try parameters(code: code, reader: &reader, packet: bytes)
            // Command Complete carries the rest as return parameters; every other event is exact.
            guard reader.isAtEnd else { throw ParseError.malformed(code: code) }
            return event
        } catch let error as ParseError {
            throw error
        } catch {
            throw .malformed(code: code)
        }
    }

    private static func parameters(code: UInt8, reader: inout ByteReader, packet: [UInt8]) throws -> HCIEvent {
        switch code {
        case commandCompleteCode:
            let packets = try reader.uint8()
            let opcode = try reader.uint16()
            return .commandComplete(commandPackets: packets, opcode: opcode, returnParameters: Array(reader.take(upTo: 255)))
        case commandStatusCode:
            return .commandStatus(status: try reader.uint8(), commandPackets: try reader.uint8(), opcode: try reader.uint16())
        case disconnectionCompleteCode:
            let status = try reader.uint8()
            let handle = try reader.uint16()
            guard handle <= 0x0EFF else { throw ParseError.malformed(code: code) }
            return .disconnectionComplete(status: status, handle: handle, reason: try reader.uint8())
        case numberOfCompletedPacketsCode:
            let count = Int(try reader.uint8())
            guard reader.remainingCount == count * 4 else { throw ParseError.malformed(code: code) }
            var pairs: [HCICompletedPackets] = []
            for _ in 0..<count {
                let handle = try reader.uint16() & 0x0FFF
                pairs.append(HCICompletedPackets(handle: handle, packets: try reader.uint16()))
            }
            return .numberOfCompletedPackets(pairs)
        case leMetaCode:
            let subevent = try reader.uint8()
            switch subevent {
            case leAdvertisingReportSubevent:
                _ = reader.take(upTo: reader.remainingCount)
                do {
                    return .leAdvertisingReports(try HCIAdvertisingReport.parse(event: packet))
                } catch {
                    throw ParseError.malformed(code: code)
                }
            case leConnectionCompleteSubevent, leEnhancedConnectionCompleteSubevent:
                return .leConnectionComplete(
                    try HCIConnectionComplete(reader: &reader, enhanced: subevent == leEnhancedConnectionCompleteSubevent))
            default:
                _ = reader.take(upTo: reader.remainingCount)
                return .other(code: code, subevent: subevent)
            }
        default:
            _ = reader.take(upTo: reader.remainingCount)
            return .other(code: code, subevent: nil)
        }
    }
}

public struct HCICompletedPackets: Equatable, Sendable {
    public var handle: UInt16
    public var packets: UInt16
    public init(handle: UInt16, packets: UInt16) {
        self.handle = handle
        self.packets = packets
    }
}

/// LE Connection Complete (subevent 0x01) or LE Enhanced Connection Complete (0x0A, whose two
/// resolvable private addresses are read past): Core Vol 4 Part E §7.7.65.1 and §7.7.65.10.
public struct HCIConnectionComplete: Equatable, Sendable {
    public var status: UInt8
    public var handle: UInt16
    /// 0 central, 1 peripheral.
    public var role: UInt8
    public var peerAddressType: BLEScanReport.AddressType
    /// Upper-case `AA:BB:CC:DD:EE:FF`.
    public var peerAddress: String
    public var interval: UInt16
    public var latency: UInt16
    public var supervisionTimeout: UInt16

    public init(
        status: UInt8, handle: UInt16, role: UInt8 = 0, peerAddressType: BLEScanReport.AddressType, peerAddress: String,
        interval: UInt16 = 24, latency: UInt16 = 0, supervisionTimeout: UInt16 = 72
    ) {
        self.status = status
        self.handle = handle
        self.role = role
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.interval = interval
        self.latency = latency
        self.supervisionTimeout = supervisionTimeout
    }

    init(reader: inout ByteReader, enhanced: Bool) throws {
        status = try reader.uint8()
        handle = try reader.uint16()
        role = try reader.uint8()
        let type = try reader.uint8()
        peerAddressType = type & 0x01 == 0 ? .public : .random
        peerAddress = BluetoothAddress.text(wireOrder: try reader.take(6))
        if enhanced { _ = try reader.take(12) }
        interval = try reader.uint16()
        latency = try reader.uint16()
        supervisionTimeout = try reader.uint16()
        _ = try reader.uint8()  // the central's clock accuracy
        // A failed connection's other fields are not meaningful; a handle above 0x0EFF never is.
        guard status != 0 || handle <= 0x0EFF else { throw HCIEvent.ParseError.malformed(code: HCIEvent.leMetaCode) }
    }
}

/// One HCI ACL data packet (Core Vol 4 Part E §5.4.2): the connection handle in 12 bits, the
/// packet-boundary flag in the next two, the broadcast flag in the top two, then the data length.
public struct HCIACLPacket: Equatable, Sendable {
    /// Packet boundary: a first fragment of an L2CAP frame (0b00 non-flushable, as a host sends
    /// on LE; 0b10 flushable, as controllers send) or a continuation (0b01).
    public enum Boundary: UInt8, Sendable {
        case firstNonFlushable = 0b00, continuation = 0b01, firstFlushable = 0b10, complete = 0b11
    }

    public var handle: UInt16
    public var boundary: Boundary
    public var data: [UInt8]

    public init(handle: UInt16, boundary: Boundary, data: [UInt8]) {
        self.handle = handle & 0x0FFF
        self.boundary = boundary
        self.data = data
    }

    public enum ParseError: Error, Equatable, Sendable {
        case notACL
        case lengthMismatch(declared: Int, actual: Int)
    }

    /// `02 handle+flags(2) length(2) data`; the broadcast flag is ignored (LE has none to a host).
    public static func parse(_ bytes: [UInt8]) throws(ParseError) -> HCIACLPacket {
        guard bytes.count >= 5, bytes[0] == HCIPacketType.acl.rawValue else { throw .notACL }
        let field = UInt16(bytes[1]) | UInt16(bytes[2]) << 8
        let declared = Int(UInt16(bytes[3]) | UInt16(bytes[4]) << 8)
        guard declared == bytes.count - 5 else { throw .lengthMismatch(declared: declared, actual: bytes.count - 5) }
        let boundary = Boundary(rawValue: UInt8((field >> 12) & 0b11)) ?? .continuation
        return HCIACLPacket(handle: field & 0x0FFF, boundary: boundary, data: Array(bytes[5...]))
    }

    public var bytes: [UInt8] {
        let field = handle & 0x0FFF | UInt16(boundary.rawValue) << 12
        let length = UInt16(clamping: data.count)
        return [HCIPacketType.acl.rawValue, UInt8(field & 0xFF), UInt8(field >> 8), UInt8(length & 0xFF), UInt8(length >> 8)]
            + data.prefix(Int(length))
    }
}
