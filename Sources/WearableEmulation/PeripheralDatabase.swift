/// The emulated peripheral's GATT database: a flat attribute table, built by hand from the
/// Bluetooth and Polar layouts, sharing nothing with the client under test.
struct PeripheralAttribute {
    var handle: UInt16
    /// The attribute type as on air: 2 bytes (16-bit UUID) or 16 (128-bit), little-endian.
    var type: [UInt8]
    var value: [UInt8]
    var readable: Bool
    var writable: Bool
    /// The 16-bit or 128-bit UUID of the characteristic this attribute belongs to (for values and CCCDs).
    var characteristic: [UInt8]
}

enum WireUUID {
    static func short(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    /// `FB005C8x-02E7-F387-1CAD-8ACD2D8DF0C8`, little-endian.
    static func polar(_ last: UInt8) -> [UInt8] {
        [0xC8, 0xF0, 0x8D, 0x2D, 0xCD, 0x8A, 0xAD, 0x1C, 0x87, 0xF3, 0xE7, 0x02, last, 0x5C, 0x00, 0xFB]
    }
    static let primaryService = short(0x2800)
    static let characteristic = short(0x2803)
    static let cccd = short(0x2902)
}

struct PeripheralDatabaseBuilder {
    private(set) var attributes: [PeripheralAttribute] = []
    private var current: [UInt8] = []

    private var nextHandle: UInt16 { UInt16(attributes.count + 1) }

    mutating func service(_ uuid: [UInt8]) {
        current = []
        attributes.append(
            PeripheralAttribute(
                handle: nextHandle, type: WireUUID.primaryService, value: uuid, readable: true, writable: false,
                characteristic: []))
    }

    /// A characteristic: declaration, value, and a CCCD when it notifies or indicates.
    mutating func characteristic(_ uuid: [UInt8], properties: UInt8, value: [UInt8] = []) {
        current = uuid
        let valueHandle = nextHandle + 1
        attributes.append(
            PeripheralAttribute(
                handle: nextHandle, type: WireUUID.characteristic,
                value: [properties, UInt8(valueHandle & 0xFF), UInt8(valueHandle >> 8)] + uuid, readable: true, writable: false,
                characteristic: uuid))
        attributes.append(
            PeripheralAttribute(
                handle: valueHandle, type: uuid, value: value, readable: properties & 0x02 != 0, writable: properties & 0x08 != 0,
                characteristic: uuid))
        if properties & 0x30 != 0 {
            attributes.append(
                PeripheralAttribute(
                    handle: nextHandle, type: WireUUID.cccd, value: [0, 0], readable: true, writable: true, characteristic: uuid))
        }
    }
}
