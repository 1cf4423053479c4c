import SystemBus

/// BlueZ's D-Bus names (bluez `doc/org.bluez.*.rst`): one place, so a misspelt interface cannot
/// hide in a call.
public enum BlueZName {
    public static let service = "org.bluez"
    public static let adapter = "org.bluez.Adapter1"
    public static let device = "org.bluez.Device1"
    public static let gattService = "org.bluez.GattService1"
    public static let gattCharacteristic = "org.bluez.GattCharacteristic1"
    public static let battery = "org.bluez.Battery1"
    public static let agentManager = "org.bluez.AgentManager1"
}

/// An adapter as bluetoothd exports it (`/org/bluez/hciN`, `Adapter1`).
public struct BlueZAdapter: Equatable, Sendable {
    public var path: DBusObjectPath
    public var address: String?
    public var powered: Bool
    public var discovering: Bool
}

/// A remote device (`Device1`): what a scan reports and what a connect needs.
public struct BlueZDevice: Equatable, Sendable {
    public var path: DBusObjectPath
    public var adapter: DBusObjectPath?
    /// Upper-case `AA:BB:CC:DD:EE:FF`.
    public var address: String
    public var addressType: BLEScanReport.AddressType
    public var name: String?
    public var rssi: Int8?
    public var serviceUUIDs: [BluetoothUUID]
    /// Company identifier → data, as `ManufacturerData` holds it.
    public var manufacturerData: [UInt16: [UInt8]]
    public var serviceData: [BluetoothUUID: [UInt8]]
    public var paired: Bool
    public var connected: Bool
    public var servicesResolved: Bool
    /// `Battery1.Percentage` when bluetoothd exports it (0…100).
    public var batteryPercent: UInt8?
}

public struct BlueZGATTService: Equatable, Sendable {
    public var path: DBusObjectPath
    public var device: DBusObjectPath
    public var uuid: BluetoothUUID
}

public struct BlueZGATTCharacteristic: Equatable, Sendable {
    public var path: DBusObjectPath
    public var service: DBusObjectPath
    public var uuid: BluetoothUUID
    public var properties: GATTClient.Properties
    /// The link's ATT MTU as bluetoothd reports it on the characteristic (BlueZ ≥ 5.62); nil when absent.
    public var mtu: Int?
}

/// bluetoothd's object tree (`GetManagedObjects`, kept current by `InterfacesAdded`/`Removed` and
/// `PropertiesChanged`) read into typed values. Pure: every value from the bus is hostile input,
/// so a property of the wrong type, a malformed address or UUID, an oversized list or an absurd
/// MTU is left out and reported in `problems` (bounded, escaped), never trusted and never a trap.
public struct BlueZObjectTree: Equatable, Sendable {
    public var adapters: [BlueZAdapter] = []
    public var devices: [BlueZDevice] = []
    public var services: [BlueZGATTService] = []
    public var characteristics: [BlueZGATTCharacteristic] = []
    /// What was refused, one line each (at most `maximumProblems`).
    public var problems: [String] = []

    public static let maximumObjects = 4096
    public static let maximumUUIDs = 64
    public static let maximumDataEntries = 16
    public static let maximumDataBytes = 512
    public static let maximumNameBytes = 248
    public static let maximumProblems = 32
    /// The ATT MTU's range (Core Vol 3 Part F §3.2.8: 23 … 517 for LE as BlueZ negotiates it).
    public static let mtuRange = 23...517

    public init() {}

    public init(_ objects: DBusManagedObjects) {
        var count = 0
        for path in objects.keys.sorted() {
            count += 1
            guard count <= Self.maximumObjects else {
                refuse("\(objects.count) objects; only the first \(Self.maximumObjects) are read")
                break
            }
            guard let interfaces = objects[path] else { continue }
            if let properties = interfaces[BlueZName.adapter] { readAdapter(path, properties) }
            if let properties = interfaces[BlueZName.device] {
                readDevice(path, properties, battery: interfaces[BlueZName.battery])
            }
            if let properties = interfaces[BlueZName.gattService] { readService(path, properties) }
            if let properties = interfaces[BlueZName.gattCharacteristic] { readCharacteristic(path, properties) }
        }
    }

    public func device(at path: DBusObjectPath) -> BlueZDevice? { devices.first { $0.path == path } }

    /// The devices of `adapter` a connect can reach: connected (bluetoothd's own link, a user's
    /// pairing), or heard in this discovery (bluetoothd sets `RSSI` when it hears a device and
    /// drops it when discovery ends). Devices it only remembers (cached, paired but away) are left
    /// out: a connect to one would hold the driver's one connect slot until bluetoothd gives up.
    public func reachable(on adapter: DBusObjectPath) -> [BlueZDevice] {
        devices.filter { $0.adapter == adapter && ($0.connected || $0.rssi != nil) }
    }

    public func device(address: String) -> BlueZDevice? { devices.first { $0.address == address } }

    /// A device's characteristics by (service UUID, characteristic UUID). A UUID pair that occurs
    /// twice keeps its first object (in path order) so the link's choice is stable.
    public func characteristics(of device: DBusObjectPath) -> [GATTCharacteristicID: BlueZGATTCharacteristic] {
        let serviceUUIDs = Dictionary(
            services.filter { $0.device == device }.map { ($0.path, $0.uuid) }, uniquingKeysWith: { first, _ in first })
        var result: [GATTCharacteristicID: BlueZGATTCharacteristic] = [:]
        for characteristic in characteristics {
            guard let service = serviceUUIDs[characteristic.service] else { continue }
            let id = GATTCharacteristicID(service: service, characteristic: characteristic.uuid)
            if result[id] == nil { result[id] = characteristic }
        }
        return result
    }

    private mutating func refuse(_ problem: String) {
        guard problems.count < Self.maximumProblems else { return }
        problems.append(DBusText.escaped(problem))
    }

    private mutating func readAdapter(_ path: DBusObjectPath, _ properties: DBusProperties) {
        var reader = PropertyReader(path: path, interface: "Adapter1", properties: properties)
        let adapter = BlueZAdapter(
            path: path, address: reader.address("Address"), powered: reader.optional("Powered", Bool.self) ?? false,
            discovering: reader.optional("Discovering", Bool.self) ?? false)
        problems.append(contentsOf: reader.problems.prefix(Self.maximumProblems - problems.count))
        adapters.append(adapter)
    }

    private mutating func readDevice(_ path: DBusObjectPath, _ properties: DBusProperties, battery: DBusProperties?) {
        var reader = PropertyReader(path: path, interface: "Device1", properties: properties)
        defer { problems.append(contentsOf: reader.problems.prefix(Self.maximumProblems - problems.count)) }
        guard let address = reader.address("Address") else {
            reader.problems.append("\(path): Device1 without a valid Address, left out")
            return
        }
        var device = BlueZDevice(
            path: path, adapter: reader.optional("Adapter", DBusObjectPath.self), address: address,
            addressType: reader.optional("AddressType", String.self) == "random" ? .random : .public,
            name: reader.name("Name"), rssi: reader.rssi("RSSI"), serviceUUIDs: reader.uuids("UUIDs"),
            manufacturerData: reader.manufacturerData("ManufacturerData"), serviceData: reader.serviceData("ServiceData"),
            paired: reader.optional("Paired", Bool.self) ?? false, connected: reader.optional("Connected", Bool.self) ?? false,
            servicesResolved: reader.optional("ServicesResolved", Bool.self) ?? false, batteryPercent: nil)
        if let battery {
            var batteryReader = PropertyReader(path: path, interface: "Battery1", properties: battery)
            if let percent = batteryReader.optional("Percentage", UInt8.self) {
                if percent <= 100 {
                    device.batteryPercent = percent
                } else {
                    batteryReader.problems.append("\(path): Battery1.Percentage \(percent) above 100, left out")
                }
            }
            reader.problems += batteryReader.problems
        }
        devices.append(device)
    }

    private mutating func readService(_ path: DBusObjectPath, _ properties: DBusProperties) {
        var reader = PropertyReader(path: path, interface: "GattService1", properties: properties)
        defer { problems.append(contentsOf: reader.problems.prefix(Self.maximumProblems - problems.count)) }
        guard let uuid = reader.uuid("UUID"), let device = reader.required("Device", DBusObjectPath.self) else { return }
        services.append(BlueZGATTService(path: path, device: device, uuid: uuid))
    }

    private mutating func readCharacteristic(_ path: DBusObjectPath, _ properties: DBusProperties) {
        var reader = PropertyReader(path: path, interface: "GattCharacteristic1", properties: properties)
        defer { problems.append(contentsOf: reader.problems.prefix(Self.maximumProblems - problems.count)) }
        guard let uuid = reader.uuid("UUID"), let service = reader.required("Service", DBusObjectPath.self) else { return }
        let flags = reader.strings("Flags")
        var mtu: Int?
        if let value = reader.optional("MTU", UInt16.self) {
            if Self.mtuRange.contains(Int(value)) {
                mtu = Int(value)
            } else {
                reader.problems.append("\(path): GattCharacteristic1.MTU \(value) outside \(Self.mtuRange), left out")
            }
        }
        characteristics.append(
            BlueZGATTCharacteristic(path: path, service: service, uuid: uuid, properties: Self.properties(flags: flags), mtu: mtu)
        )
    }

    /// `Flags` → the characteristic properties the link understands; unknown flags are ignored.
    public static func properties(flags: [String]) -> GATTClient.Properties {
        var properties: GATTClient.Properties = []
        for flag in flags {
            switch flag {
            case "read": properties.insert(.read)
            case "write": properties.insert(.write)
            case "write-without-response": properties.insert(.writeWithoutResponse)
            case "notify": properties.insert(.notify)
            case "indicate": properties.insert(.indicate)
            default: break
            }
        }
        return properties
    }
}

/// Reads one object's properties, collecting what it refuses.
struct PropertyReader {
    let path: DBusObjectPath
    let interface: String
    let properties: DBusProperties
    var problems: [String] = []

    mutating func optional<T: DBusDecodable>(_ name: String, _: T.Type) -> T? {
        guard let value = properties[name] else { return nil }
        do throws(DBusError) {
            return try value.as(T.self)
        } catch {
            problems.append("\(path): \(interface).\(name): \(error)")
            return nil
        }
    }

    mutating func required<T: DBusDecodable>(_ name: String, _ type: T.Type) -> T? {
        guard properties[name] != nil else {
            problems.append("\(path): \(interface) without \(name), left out")
            return nil
        }
        guard let value = optional(name, type) else {
            problems.append("\(path): \(interface) left out")
            return nil
        }
        return value
    }

    mutating func address(_ name: String) -> String? {
        guard let text = optional(name, String.self) else { return nil }
        guard let bytes = BluetoothAddress.wireOrder(text) else {
            problems.append("\(path): \(interface).\(name) is not an address: \(DBusText.escaped(text, limit: 40))")
            return nil
        }
        return BluetoothAddress.text(wireOrder: bytes[...])
    }

    mutating func uuid(_ name: String) -> BluetoothUUID? {
        guard let text = required(name, String.self) else { return nil }
        guard let uuid = BlueZUUID.parse(text) else {
            problems.append("\(path): \(interface).\(name) is not a UUID: \(DBusText.escaped(text, limit: 40)), left out")
            return nil
        }
        return uuid
    }

    mutating func strings(_ name: String) -> [String] {
        guard let list = optional(name, [String].self) else { return [] }
        if list.count > BlueZObjectTree.maximumUUIDs {
            problems.append(
                "\(path): \(interface).\(name) holds \(list.count) entries; the first \(BlueZObjectTree.maximumUUIDs) are read")
        }
        return Array(list.prefix(BlueZObjectTree.maximumUUIDs))
    }

    mutating func uuids(_ name: String) -> [BluetoothUUID] {
        var uuids: [BluetoothUUID] = []
        var refused: [String] = []
        for text in strings(name) {
            if let uuid = BlueZUUID.parse(text) { uuids.append(uuid) } else { refused.append(text) }
        }
        // One line for all of them: a list of bad entries must not crowd out other problems.
        if let first = refused.first {
            problems.append(
                "\(path): \(interface).\(name) holds \(refused.count) non-UUID(s) such as \(DBusText.escaped(first, limit: 40)), left out"
            )
        }
        return uuids
    }

    mutating func name(_ name: String) -> String? {
        guard let text = optional(name, String.self) else { return nil }
        guard text.utf8.count <= BlueZObjectTree.maximumNameBytes else {
            problems.append(
                "\(path): \(interface).\(name) is \(text.utf8.count) bytes; cut to \(BlueZObjectTree.maximumNameBytes)")
            return String(decoding: text.utf8.prefix(BlueZObjectTree.maximumNameBytes), as: UTF8.self)
        }
        return text
    }

    /// `RSSI` is `n` (int16) in dBm; a value outside −127…20 is no measurement.
    mutating func rssi(_ name: String) -> Int8? {
        guard let value = optional(name, Int16.self) else { return nil }
        guard (-127...20).contains(value) else {
            problems.append("\(path): \(interface).\(name) \(value) dBm is implausible, left out")
            return nil
        }
        return Int8(value)
    }

    mutating func bytes(_ value: DBusValue, _ what: String) -> [UInt8]? {
        do throws(DBusError) {
            let bytes = try value.unwrappingVariant().as([UInt8].self)
            guard bytes.count <= BlueZObjectTree.maximumDataBytes else {
                problems.append("\(path): \(interface).\(what) holds \(bytes.count) bytes, left out")
                return nil
            }
            return bytes
        } catch {
            problems.append("\(path): \(interface).\(what): \(error)")
            return nil
        }
    }

    /// `ManufacturerData`: `a{qv}`, each variant an `ay`.
    mutating func manufacturerData(_ name: String) -> [UInt16: [UInt8]] {
        guard let value = properties[name] else { return [:] }
        guard case let .dictionary(.uint16, .variant, entries) = value else {
            problems.append("\(path): \(interface).\(name) is \(DBusText.escaped(value.type.description)), not a{qv}")
            return [:]
        }
        var result: [UInt16: [UInt8]] = [:]
        for entry in entries.prefix(BlueZObjectTree.maximumDataEntries) {
            guard case let .uint16(company) = entry.key, let data = bytes(entry.value, name) else { continue }
            result[company] = data
        }
        return result
    }

    /// `ServiceData`: `a{sv}`, UUID strings to `ay`.
    mutating func serviceData(_ name: String) -> [BluetoothUUID: [UInt8]] {
        guard let value = properties[name] else { return [:] }
        guard case let .dictionary(.string, .variant, entries) = value else {
            problems.append("\(path): \(interface).\(name) is \(DBusText.escaped(value.type.description)), not a{sv}")
            return [:]
        }
        var result: [BluetoothUUID: [UInt8]] = [:]
        for entry in entries.prefix(BlueZObjectTree.maximumDataEntries) {
            guard case let .string(text) = entry.key, let uuid = BlueZUUID.parse(text) else {
                problems.append("\(path): \(interface).\(name) has a key that is not a UUID")
                continue
            }
            if let data = bytes(entry.value, name) { result[uuid] = data }
        }
        return result
    }
}

/// UUIDs as BlueZ writes them: lower-case `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, exactly.
public enum BlueZUUID {
    public static func parse(_ text: String) -> BluetoothUUID? {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return nil }
        for (index, byte) in bytes.enumerated() {
            if [8, 13, 18, 23].contains(index) {
                guard byte == UInt8(ascii: "-") else { return nil }
            } else {
                let hex = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
                guard hex else { return nil }
            }
        }
        return BluetoothUUID(string: text)
    }

    /// The form BlueZ expects in `SetDiscoveryFilter`'s `UUIDs` (lower case, always 128-bit).
    public static func text(_ uuid: BluetoothUUID) -> String {
        let hex = uuid.littleEndianBytes.reversed().map { ($0 < 0x10 ? "0" : "") + String($0, radix: 16) }.joined()
        let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { range in
            String(hex.dropFirst(range.lowerBound).prefix(range.count))
        }
        return parts.joined(separator: "-")
    }
}
