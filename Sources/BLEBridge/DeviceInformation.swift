import SensorKitModel

/// What the Device Information Service (0x180A) told about a wearable: UTF-8 strings, each
/// optional. Strings are not NUL-terminated on air; trailing NULs some devices add are dropped.
public struct DeviceInformation: Equatable, Sendable {
    public var manufacturerName: String?
    public var modelNumber: String?
    public var serialNumber: String?
    public var hardwareRevision: String?
    public var firmwareRevision: String?
    public var softwareRevision: String?

    public init() {}

    /// The characteristics read, in the order a client reads them.
    public static let characteristics: [BluetoothUUID] = [
        .manufacturerName, .modelNumber, .serialNumber, .hardwareRevision, .firmwareRevision, .softwareRevision,
    ]

    /// Keeps `value` as the string of characteristic `uuid` (ignored when not a DIS string).
    public mutating func set(_ uuid: BluetoothUUID, value: [UInt8]) {
        var bytes = value[...]
        while bytes.last == 0 { bytes = bytes.dropLast() }
        let text = String(decoding: bytes, as: UTF8.self)
        switch uuid {
        case .manufacturerName: manufacturerName = text
        case .modelNumber: modelNumber = text
        case .serialNumber: serialNumber = text
        case .hardwareRevision: hardwareRevision = text
        case .firmwareRevision: firmwareRevision = text
        case .softwareRevision: softwareRevision = text
        default: break
        }
    }

    /// The wearable as its own `SRDevice`: identifier `ble:` + upper-case address, name the
    /// advertised name, model the model number, systemName the manufacturer, systemVersion the
    /// firmware revision, productType the hardware revision (empty strings where the device said nothing).
    public func device(address: String, advertisedName: String?) -> SRDevice {
        SRDevice(
            identifier: "ble:" + address.uppercased(),
            name: advertisedName ?? modelNumber ?? address.uppercased(),
            model: modelNumber ?? "",
            systemName: manufacturerName ?? "",
            systemVersion: firmwareRevision ?? "",
            productType: hardwareRevision ?? "")
    }
}
