/// A GATT attribute type: a 16-bit SIG-assigned UUID or a full 128-bit one. 16-bit UUIDs stand
/// for `0000xxxx-0000-1000-8000-00805F9B34FB`; both forms compare equal when they name the same UUID.
public struct BluetoothUUID: Hashable, Sendable, CustomStringConvertible {
    /// The 16 bytes in the order they are written on air (little-endian, least significant first).
    public let littleEndianBytes: [UInt8]

    private static let baseLittleEndian: [UInt8] = [
        0xFB, 0x34, 0x9B, 0x5F, 0x80, 0x00, 0x00, 0x80, 0x00, 0x10, 0x00, 0x00,
    ]

    public init(_ short: UInt16) {
        self.littleEndianBytes = Self.baseLittleEndian + [UInt8(short & 0xFF), UInt8(short >> 8), 0, 0]
    }

    /// From on-air bytes: 2 (16-bit) or 16 (128-bit); nil for any other length.
    public init?(littleEndian bytes: ArraySlice<UInt8>) {
        switch bytes.count {
        case 2: self.init(UInt16(bytes[bytes.startIndex]) | UInt16(bytes[bytes.startIndex + 1]) << 8)
        case 16: self.init(raw: Array(bytes))
        default: return nil
        }
    }

    /// From the canonical text form `XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX`.
    public init?(string: String) {
        let hex = string.filter { $0 != "-" }
        guard hex.count == 32 else { return nil }
        var bigEndian: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bigEndian.append(byte)
            index = next
        }
        self.init(raw: bigEndian.reversed())
    }

    private init(raw: [UInt8]) { littleEndianBytes = raw }

    /// The 16-bit alias when this UUID lies on the SIG base.
    public var short: UInt16? {
        guard Array(littleEndianBytes[0..<12]) == Self.baseLittleEndian, littleEndianBytes[14] == 0,
            littleEndianBytes[15] == 0
        else { return nil }
        return UInt16(littleEndianBytes[12]) | UInt16(littleEndianBytes[13]) << 8
    }

    /// The shortest on-air form: 2 bytes for SIG UUIDs, else 16.
    public var onAirBytes: [UInt8] {
        if let short { return [UInt8(short & 0xFF), UInt8(short >> 8)] }
        return littleEndianBytes
    }

    public var description: String {
        if let short { return "0x" + String(short, radix: 16, uppercase: true).leftPadded(to: 4) }
        let hex = littleEndianBytes.reversed().map { String($0, radix: 16, uppercase: true).leftPadded(to: 2) }.joined()
        let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { range in
            String(hex.dropFirst(range.lowerBound).prefix(range.count))
        }
        return parts.joined(separator: "-")
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// The assigned numbers and Polar UUIDs the bridge uses (see docs/ble.md).
extension BluetoothUUID {
    public static let primaryService = BluetoothUUID(0x2800)
    public static let characteristicDeclaration = BluetoothUUID(0x2803)
    public static let clientCharacteristicConfiguration = BluetoothUUID(0x2902)

    public static let heartRateService = BluetoothUUID(0x180D)
    public static let heartRateMeasurement = BluetoothUUID(0x2A37)
    public static let bodySensorLocation = BluetoothUUID(0x2A38)
    public static let deviceInformationService = BluetoothUUID(0x180A)
    public static let manufacturerName = BluetoothUUID(0x2A29)
    public static let modelNumber = BluetoothUUID(0x2A24)
    public static let serialNumber = BluetoothUUID(0x2A25)
    public static let hardwareRevision = BluetoothUUID(0x2A27)
    public static let firmwareRevision = BluetoothUUID(0x2A26)
    public static let softwareRevision = BluetoothUUID(0x2A28)
    public static let batteryService = BluetoothUUID(0x180F)
    public static let batteryLevel = BluetoothUUID(0x2A19)

    public static let polarMeasurementDataService = BluetoothUUID(string: "FB005C80-02E7-F387-1CAD-8ACD2D8DF0C8")!
    public static let polarMeasurementControlPoint = BluetoothUUID(string: "FB005C81-02E7-F387-1CAD-8ACD2D8DF0C8")!
    public static let polarMeasurementData = BluetoothUUID(string: "FB005C82-02E7-F387-1CAD-8ACD2D8DF0C8")!
}
