import SystemBus
import Testing

@testable import BLEBridge

/// bluetoothd's object tree read into typed values: what a real bluetoothd sends, and what a
/// hostile or broken one could.
struct BlueZObjectTreeTests {
    static func path(_ text: String) -> DBusObjectPath { try! DBusObjectPath(text) }
    static func strings(_ list: [String]) -> DBusValue { .array(.string, list.map { .string($0) }) }
    static func bytes(_ list: [UInt8]) -> DBusValue { .array(.byte, list.map { .byte($0) }) }

    static let adapter = path("/org/bluez/hci0")
    static let h10 = path("/org/bluez/hci0/dev_A0_9E_1A_00_00_10")
    static let hrService = path("/org/bluez/hci0/dev_A0_9E_1A_00_00_10/service000c")
    static let hrMeasurement = path("/org/bluez/hci0/dev_A0_9E_1A_00_00_10/service000c/char000d")

    static let objects: DBusManagedObjects = [
        adapter: [
            "org.bluez.Adapter1": [
                "Address": .string("00:1A:7D:DA:71:13"), "Powered": .boolean(true), "Discovering": .boolean(false),
            ]
        ],
        h10: [
            "org.bluez.Device1": [
                "Address": .string("a0:9e:1a:00:00:10"), "AddressType": .string("random"), "Name": .string("Polar H10 0A0B0C0D"),
                "Adapter": .objectPath(adapter), "RSSI": .int16(-61),
                "UUIDs": strings(["0000180d-0000-1000-8000-00805f9b34fb", "fb005c80-02e7-f387-1cad-8acd2d8df0c8"]),
                "ManufacturerData": .dictionary(
                    key: .uint16, value: .variant, [DBusDictionaryEntry(.uint16(0x006B), .variant(bytes([0x33, 0x1E])))]),
                "ServiceData": .dictionary(
                    key: .string, value: .variant,
                    [DBusDictionaryEntry(.string("0000180d-0000-1000-8000-00805f9b34fb"), .variant(bytes([0x01])))]),
                "Paired": .boolean(true), "Connected": .boolean(true), "ServicesResolved": .boolean(true),
            ],
            "org.bluez.Battery1": ["Percentage": .byte(64)],
        ],
        hrService: [
            "org.bluez.GattService1": [
                "UUID": .string("0000180d-0000-1000-8000-00805f9b34fb"), "Device": .objectPath(h10), "Primary": .boolean(true),
            ]
        ],
        hrMeasurement: [
            "org.bluez.GattCharacteristic1": [
                "UUID": .string("00002a37-0000-1000-8000-00805f9b34fb"), "Service": .objectPath(hrService),
                "Flags": strings(["notify", "authenticated-signed-writes"]), "MTU": .uint16(247),
            ]
        ],
    ]

    @Test func aRealTreeReadsIntoTypedValues() {
        let tree = BlueZObjectTree(Self.objects)
        #expect(tree.problems == [])
        #expect(
            tree.adapters == [BlueZAdapter(path: Self.adapter, address: "00:1A:7D:DA:71:13", powered: true, discovering: false)])
        let device = tree.devices.first
        #expect(device?.address == "A0:9E:1A:00:00:10")
        #expect(device?.addressType == .random)
        #expect(device?.rssi == -61)
        #expect(device?.batteryPercent == 64)
        #expect(device?.connected == true && device?.servicesResolved == true && device?.paired == true)
        #expect(device?.serviceUUIDs == [.heartRateService, .polarMeasurementDataService])
        let id = GATTCharacteristicID(service: .heartRateService, characteristic: .heartRateMeasurement)
        let characteristic = tree.characteristics(of: Self.h10)[id]
        #expect(characteristic?.path == Self.hrMeasurement)
        #expect(characteristic?.properties == [.notify])
        #expect(characteristic?.mtu == 247)
    }

    /// The advertising data written back from Device1 properties, byte for byte: Complete Local
    /// Name, 16-bit list, 128-bit list, service data, manufacturer data (Core Supplement Part A §1).
    @Test func advertisingDataFromDeviceProperties() throws {
        let device = try #require(BlueZObjectTree(Self.objects).devices.first)
        let name = Array("Polar H10 0A0B0C0D".utf8)
        let expected: [UInt8] =
            [UInt8(name.count + 1), 0x09] + name + [0x03, 0x03, 0x0D, 0x18]
            + [0x11, 0x07, 0xC8, 0xF0, 0x8D, 0x2D, 0xCD, 0x8A, 0xAD, 0x1C, 0x87, 0xF3, 0xE7, 0x02, 0x80, 0x5C, 0x00, 0xFB]
            + [0x04, 0x16, 0x0D, 0x18, 0x01] + [0x05, 0xFF, 0x6B, 0x00, 0x33, 0x1E]
        #expect(device.advertisingData.encoded() == expected)
        #expect(device.advertisingData.localName == "Polar H10 0A0B0C0D")
        #expect(device.advertisingData.serviceUUIDs16 == [0x180D])
        let report = device.scanReport
        #expect(report.address == "A0:9E:1A:00:00:10" && report.rssi == -61 && report.endpoint == Self.h10.rawValue)
    }

    /// A scan reports what is connected or heard now, not what bluetoothd merely remembers.
    @Test func onlyReachableDevicesAreScanReports() {
        var objects = Self.objects
        let remembered = Self.path("/org/bluez/hci0/dev_A0_9E_1A_00_00_11")
        let heard = Self.path("/org/bluez/hci0/dev_A0_9E_1A_00_00_12")
        let elsewhere = Self.path("/org/bluez/hci1/dev_A0_9E_1A_00_00_13")
        objects[remembered] = [
            "org.bluez.Device1": [
                "Address": .string("A0:9E:1A:00:00:11"), "Adapter": .objectPath(Self.adapter), "Paired": .boolean(true),
            ]
        ]
        objects[heard] = [
            "org.bluez.Device1": [
                "Address": .string("A0:9E:1A:00:00:12"), "Adapter": .objectPath(Self.adapter), "RSSI": .int16(-80),
            ]
        ]
        objects[elsewhere] = [
            "org.bluez.Device1": [
                "Address": .string("A0:9E:1A:00:00:13"), "Adapter": .objectPath(Self.path("/org/bluez/hci1")),
                "RSSI": .int16(-50),
            ]
        ]
        let reachable = BlueZObjectTree(objects).reachable(on: Self.adapter).map(\.address)
        #expect(reachable.sorted() == ["A0:9E:1A:00:00:10", "A0:9E:1A:00:00:12"])
    }

    @Test func flagsAndUUIDTexts() {
        #expect(
            BlueZObjectTree.properties(flags: ["read", "write", "indicate", "write-without-response", "notify", "x"]) == [
                .read, .write, .indicate, .writeWithoutResponse, .notify,
            ])
        #expect(BlueZUUID.parse("fb005c81-02e7-f387-1cad-8acd2d8df0c8") == .polarMeasurementControlPoint)
        #expect(BlueZUUID.text(.heartRateService) == "0000180d-0000-1000-8000-00805f9b34fb")
        #expect(BlueZUUID.text(.polarMeasurementData) == "fb005c82-02e7-f387-1cad-8acd2d8df0c8")
        for bad in [
            "", "180d", "0000180d00001000800000805f9b34fb", "0000180d-0000-1000-8000-00805f9b34fbXX",
            "0000180g-0000-1000-8000-00805f9b34fb", "0000180d+0000-1000-8000-00805f9b34fb",
        ] {
            #expect(BlueZUUID.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func hostileValuesAreLeftOutAndReported() {
        let bad = Self.path("/org/bluez/hci0/dev_66")
        var objects = Self.objects
        objects[Self.path("/org/bluez/hci0/dev_60")] = ["org.bluez.Device1": ["Address": .int32(7)]]
        objects[Self.path("/org/bluez/hci0/dev_61")] = ["org.bluez.Device1": ["Address": .string("66:66:66:66:66\n")]]
        objects[bad] = [
            "org.bluez.Device1": [
                "Address": .string("66:66:66:66:66:62"), "Adapter": .objectPath(Self.adapter),
                "Name": .string(String(repeating: "x", count: 5000)),
                "RSSI": .string("-40"),
                "UUIDs": Self.strings(["not-a-uuid"] + Array(repeating: "0000180d-0000-1000-8000-00805f9b34fb", count: 1000)),
                "ManufacturerData": .dictionary(
                    key: .uint16, value: .variant, [DBusDictionaryEntry(.uint16(1), .variant(.string("no bytes")))]),
                "Connected": .string("yes"),
            ],
            "org.bluez.Battery1": ["Percentage": .byte(250)],
        ]
        objects[Self.path("/org/bluez/hci0/dev_66/service0001")] = [
            "org.bluez.GattService1": ["UUID": .string("0000180d"), "Device": .objectPath(bad)]
        ]
        objects[Self.path("/org/bluez/hci0/dev_66/service0002")] = [
            "org.bluez.GattService1": ["UUID": .string("0000180d-0000-1000-8000-00805f9b34fb"), "Device": .objectPath(bad)]
        ]
        objects[Self.path("/org/bluez/hci0/dev_66/service0002/char0003")] = [
            "org.bluez.GattCharacteristic1": [
                "UUID": .string("00002a37-0000-1000-8000-00805f9b34fb"),
                "Service": .objectPath(Self.path("/org/bluez/hci0/dev_66/service0002")),
                "Flags": .int32(16), "MTU": .uint16(65535),
            ]
        ]
        let tree = BlueZObjectTree(objects)
        #expect(tree.devices.count == 2)
        let hostile = tree.device(address: "66:66:66:66:66:62")
        #expect(hostile?.name?.utf8.count == BlueZObjectTree.maximumNameBytes)
        #expect(hostile?.rssi == nil)
        #expect(hostile?.connected == false)
        #expect(hostile?.batteryPercent == nil)
        #expect(hostile?.manufacturerData == [:])
        #expect(hostile?.serviceUUIDs == Array(repeating: .heartRateService, count: BlueZObjectTree.maximumUUIDs - 1))
        #expect(tree.services.count == 2)
        let characteristic = tree.characteristics(of: bad).values.first
        #expect(characteristic?.mtu == nil && characteristic?.properties == [])
        let text = tree.problems.joined(separator: "\n")
        for expected in [
            "Device1 without a valid Address", "is not an address: 66:66:66:66:66\\x0a", "RSSI", "UUIDs holds 1001 entries",
            "not-a-uuid", "Battery1.Percentage 250", "MTU 65535", "is not a UUID: 0000180d", "Connected", "Flags",
            "ManufacturerData",
        ] {
            #expect(text.contains(expected), "\(expected) in \(text)")
        }
        #expect(!text.contains("\n\n"))
        #expect(tree.problems.count <= BlueZObjectTree.maximumProblems)
    }

    @Test func hciTakesOnlyAnAdapterBluetoothdLeavesAlone() {
        func refusal(_ presence: BluetoothdPresence, process: Bool, up: Bool?) -> String? {
            BluetoothdPresence.hciRefusal(adapter: "hci0", presence: presence, processRunning: process, adapterUp: up)
        }
        #expect(refusal(.managesAdapter, process: true, up: nil)?.hasPrefix("hci0 is managed by bluetoothd") == true)
        #expect(refusal(.managesAdapter, process: false, up: false) != nil)
        #expect(refusal(.runsWithoutAdapter, process: true, up: true) == nil)
        #expect(refusal(.absent, process: false, up: true) == nil)
        #expect(refusal(.absent, process: true, up: nil)?.contains("could not say") == true)
        #expect(refusal(.absent, process: true, up: true) != nil)
        // A powered-down adapter beside a bluetoothd the bus does not know: bluetoothd is not using it.
        #expect(refusal(.absent, process: true, up: false) == nil)
        #expect(BluetoothdPresence.classify(.success(.string("00:1A:7D:DA:71:13"))) == .managesAdapter)
        #expect(
            BluetoothdPresence.classify(.failure(.remote(name: "org.freedesktop.DBus.Error.ServiceUnknown", message: "")))
                == .absent)
        #expect(
            BluetoothdPresence.classify(.failure(.remote(name: "org.freedesktop.DBus.Error.UnknownObject", message: "")))
                == .runsWithoutAdapter)
        #expect(BluetoothdPresence.classify(.failure(.timedOut)) == .absent)
        #expect(BluetoothdPresence.classify(nil) == .absent)
    }

    /// The agent confirms only a device the daemon is pairing; anyone on the bus can call it.
    @Test func theAgentConfirmsOnlyWhatItPairs() throws {
        let device = Self.h10
        func call(_ member: String, _ arguments: [DBusValue]) -> DBusMethodCall {
            DBusMethodCall(
                sender: ":1.9", path: BlueZAgent.path, interface: BlueZAgent.interface, member: member, arguments: arguments)
        }
        let confirm = call("RequestConfirmation", [.objectPath(device), .uint32(0)])
        #expect(BlueZAgent.answer(confirm, pairing: [device]) == .values([]))
        #expect(BlueZAgent.answer(call("RequestAuthorization", [.objectPath(device)]), pairing: [device]) == .values([]))
        for refused in [
            BlueZAgent.answer(confirm, pairing: []),
            BlueZAgent.answer(call("RequestConfirmation", [.string("/org/bluez/hci0/dev_C0")]), pairing: [device]),
            BlueZAgent.answer(call("RequestPasskey", [.objectPath(device)]), pairing: [device]),
            BlueZAgent.answer(call("RequestPinCode", [.objectPath(device)]), pairing: [device]),
            BlueZAgent.answer(
                call("AuthorizeService", [.objectPath(device), .string("0000180d-0000-1000-8000-00805f9b34fb")]),
                pairing: [device]),
        ] {
            guard case .error(let name, _) = refused else {
                Issue.record("accepted: \(refused)")
                continue
            }
            #expect(name == "org.bluez.Error.Rejected")
        }
        #expect(BlueZAgent.answer(call("Cancel", []), pairing: []) == .values([]))
        #expect(BlueZAgent.answer(call("Release", []), pairing: []) == .values([]))
    }

    @Test func refusalsFromBluetoothd() {
        func remote(_ name: String, _ message: String = "") -> DBusError { .remote(name: name, message: message) }
        #expect(BlueZRefusal.classify(remote("org.bluez.Error.InProgress"), acquiringNotify: true) == .useStartNotify)
        #expect(BlueZRefusal.classify(remote("org.bluez.Error.NotPermitted"), acquiringNotify: true) == .useStartNotify)
        #expect(BlueZRefusal.classify(remote("org.bluez.Error.NotSupported"), acquiringNotify: true) == .useStartNotify)
        #expect(BlueZRefusal.classify(remote("org.bluez.Error.NotSupported")) == .operationFailed)
        #expect(BlueZRefusal.classify(remote("org.bluez.Error.NotPermitted", "Not paired")) == .needsPairing)
        #expect(
            BlueZRefusal.classify(remote("org.bluez.Error.NotPermitted", "Not paired"), acquiringNotify: true) == .needsPairing)
        #expect(BlueZRefusal.classify(remote("org.bluez.Error.NotPermitted", "Read not permitted")) == .operationFailed)
        #expect(BlueZRefusal.classify(remote("org.bluez.Error.AuthenticationFailed")) == .needsPairing)
        #expect(BlueZRefusal.classify(remote("org.bluez.Error.NotConnected")) == .linkLost)
        #expect(BlueZRefusal.classify(remote("org.bluez.Error.Failed", "Not connected")) == .linkLost)
        #expect(BlueZRefusal.classify(remote("org.bluez.Error.Failed", "Operation failed")) == .operationFailed)
        #expect(BlueZRefusal.classify(remote("org.freedesktop.DBus.Error.ServiceUnknown")) == .serviceGone)
        #expect(BlueZRefusal.classify(.disconnected) == .serviceGone)
        #expect(BlueZRefusal.classify(remote("org.freedesktop.DBus.Error.NoReply")) == .serviceGone)
        #expect(BlueZRefusal.classify(.timedOut) == .operationFailed)
    }
}
