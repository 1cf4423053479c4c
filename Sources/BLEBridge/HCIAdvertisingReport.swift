/// One device in an HCI LE Advertising Report event (Core Vol 4 Part E §7.7.65.2): what a legacy
/// advertisement or scan response said, who sent it, how strong it arrived.
public struct HCIAdvertisingReport: Equatable, Sendable {
    /// The PDU the report came from. Only `scanResponse` carries scan-response data; the rest carry
    /// advertising data.
    public enum EventType: UInt8, Equatable, Sendable {
        case connectableUndirected = 0x00, connectableDirected = 0x01, scannableUndirected = 0x02,
            nonConnectableUndirected = 0x03, scanResponse = 0x04
    }

    public var eventType: EventType
    /// Identity addresses resolved by the controller (types 2 and 3) count as public and random.
    public var addressType: BLEScanReport.AddressType
    /// Upper-case `AA:BB:CC:DD:EE:FF`.
    public var address: String
    /// Raw AD structures, at most 31 bytes.
    public var data: [UInt8]
    /// dBm; nil when the controller had none (127) or sent a reserved value (21…126).
    public var rssi: Int8?

    public init(eventType: EventType, addressType: BLEScanReport.AddressType, address: String, data: [UInt8], rssi: Int8?) {
        self.eventType = eventType
        self.addressType = addressType
        self.address = address
        self.data = data
        self.rssi = rssi
    }

    public enum ParseError: Error, Equatable, Sendable {
        /// Not an HCI event packet (indicator 0x04) of LE Meta event 0x3E.
        case notLEMetaEvent
        /// An LE Meta event of another subevent (connection complete, extended reports, …).
        case otherSubevent(UInt8)
        /// The event's parameter length disagrees with the bytes read.
        case lengthMismatch(declared: Int, actual: Int)
        /// Num_Reports outside 1…25.
        case reportCount(Int)
        /// The reports run past the event's end, or leave bytes after it.
        case malformedReports
        /// A report's data longer than a legacy PDU's 31 bytes.
        case dataTooLong(Int)
    }

    public static let maximumDataLength = 31
    static let eventPacketIndicator: UInt8 = 0x04
    static let leMetaEvent: UInt8 = 0x3E
    static let advertisingReportSubevent: UInt8 = 0x02

    /// Parses one packet as a raw HCI socket delivers it: `04 3E length | 02 count | reports`,
    /// each report `event type, address type, address (6, least significant byte first), data
    /// length, data, RSSI` in turn, as controllers send them and the Linux kernel reads them.
    /// Reports of reserved event or address types are skipped; any structural fault rejects the
    /// whole event (its lengths cannot be trusted to find the next report).
    public static func parse(event bytes: [UInt8]) throws(ParseError) -> [HCIAdvertisingReport] {
        var reader = ByteReader(bytes)
        do {
            guard try reader.uint8() == eventPacketIndicator, try reader.uint8() == leMetaEvent else {
                throw ParseError.notLEMetaEvent
            }
            let declared = Int(try reader.uint8())
            guard declared == reader.remainingCount else {
                throw ParseError.lengthMismatch(declared: declared, actual: reader.remainingCount)
            }
            let subevent = try reader.uint8()
            guard subevent == advertisingReportSubevent else { throw ParseError.otherSubevent(subevent) }
            let count = Int(try reader.uint8())
            guard (1...25).contains(count) else { throw ParseError.reportCount(count) }
            var reports: [HCIAdvertisingReport] = []
            for _ in 0..<count {
                let eventType = try reader.uint8()
                let addressType = try reader.uint8()
                let address = try reader.take(6)
                let length = Int(try reader.uint8())
                guard length <= maximumDataLength else { throw ParseError.dataTooLong(length) }
                let data = try reader.take(length)
                let rssi = Int8(bitPattern: try reader.uint8())
                guard let type = EventType(rawValue: eventType), let kind = Self.addressType(addressType) else { continue }
                reports.append(
                    HCIAdvertisingReport(
                        eventType: type, addressType: kind, address: BluetoothAddress.text(wireOrder: address),
                        data: Array(data), rssi: rssi <= 20 ? rssi : nil))
            }
            guard reader.isAtEnd else { throw ParseError.malformedReports }
            return reports
        } catch is ByteReader.Truncated {
            throw .malformedReports
        } catch let error as ParseError {
            throw error
        } catch {
            throw .malformedReports
        }
    }

    private static func addressType(_ raw: UInt8) -> BLEScanReport.AddressType? {
        switch raw {
        case 0x00, 0x02: .public
        case 0x01, 0x03: .random
        default: nil
        }
    }
}
