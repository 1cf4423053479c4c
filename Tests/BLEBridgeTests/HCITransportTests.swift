import Glibc
import SensorSystem
import Testing

@testable import BLEBridge

/// HCI LE Advertising Report events written byte by byte from the Core Specification's layout
/// (Vol 4 Part E §7.7.65.2; AD structures from the Core Supplement), and the radio transport's
/// argument building and error paths. Nothing here needs a radio.
struct HCIAdvertisingReportTests {
    /// `04 3E len 02 count` + reports.
    static func event(_ reports: [[UInt8]], count: Int? = nil) -> [UInt8] {
        let parameters: [UInt8] = [0x02, UInt8(count ?? reports.count)] + reports.joined()
        return [0x04, 0x3E, UInt8(parameters.count)] + parameters
    }

    /// One report: event type, address type, address (wire order), data length, data, RSSI.
    static func report(_ type: UInt8, _ addressType: UInt8, _ address: [UInt8], _ data: [UInt8], rssi: Int8) -> [UInt8] {
        [type, addressType] + address + [UInt8(data.count)] + data + [UInt8(bitPattern: rssi)]
    }

    static let strapAddress: [UInt8] = [0x55, 0x44, 0x33, 0x22, 0x11, 0xC0]  // C0:11:22:33:44:55
    static let watchAddress: [UInt8] = [0x01, 0x00, 0xEE, 0xFF, 0xC0, 0xD2]  // D2:C0:FF:EE:00:01 (random static)
    /// Flags LE General Discoverable + BR/EDR not supported; complete list of 16-bit UUIDs: Heart Rate.
    static let strapAdvertising: [UInt8] = [0x02, 0x01, 0x06, 0x03, 0x03, 0x0D, 0x18]
    /// Complete Local Name "H10".
    static let strapScanResponse: [UInt8] = [0x04, 0x09, 0x48, 0x31, 0x30]

    @Test func singleReport() throws {
        let bytes = Self.event([Self.report(0x00, 0x00, Self.strapAddress, Self.strapAdvertising, rssi: -56)])
        #expect(bytes.prefix(5) == [0x04, 0x3E, 0x13, 0x02, 0x01])
        let reports = try HCIAdvertisingReport.parse(event: bytes)
        #expect(
            reports == [
                HCIAdvertisingReport(
                    eventType: .connectableUndirected, addressType: .public, address: "C0:11:22:33:44:55",
                    data: Self.strapAdvertising, rssi: -56)
            ])
    }

    @Test func severalReportsInOneEvent() throws {
        let bytes = Self.event([
            Self.report(0x00, 0x00, Self.strapAddress, Self.strapAdvertising, rssi: -56),
            Self.report(0x04, 0x01, Self.watchAddress, [0x05, 0x08, 0x57, 0x61, 0x74, 0x63], rssi: -90),
            Self.report(0x03, 0x03, Self.strapAddress, [], rssi: 127),
        ])
        let reports = try HCIAdvertisingReport.parse(event: bytes)
        #expect(reports.map(\.address) == ["C0:11:22:33:44:55", "D2:C0:FF:EE:00:01", "C0:11:22:33:44:55"])
        #expect(reports.map(\.eventType) == [.connectableUndirected, .scanResponse, .nonConnectableUndirected])
        #expect(reports.map(\.addressType) == [.public, .random, .random])
        #expect(reports.map(\.rssi) == [-56, -90, nil])
        #expect(reports[1].data == [0x05, 0x08, 0x57, 0x61, 0x74, 0x63])
        #expect(reports[2].data.isEmpty)
    }

    @Test func reservedTypesAreSkippedNotParsedAsSomethingElse() throws {
        let bytes = Self.event([
            Self.report(0x05, 0x00, Self.strapAddress, [0x02, 0x01, 0x06], rssi: -40),
            Self.report(0x00, 0x04, Self.watchAddress, [], rssi: -40),
            Self.report(0x02, 0x02, Self.watchAddress, [], rssi: 21),
        ])
        let reports = try HCIAdvertisingReport.parse(event: bytes)
        #expect(
            reports == [
                HCIAdvertisingReport(
                    eventType: .scannableUndirected, addressType: .public, address: "D2:C0:FF:EE:00:01",
                    data: [], rssi: nil)
            ])
    }

    @Test func everyPrefixAndWrongLengthIsRejectedWithoutCrashing() {
        let bytes = Self.event([
            Self.report(0x00, 0x00, Self.strapAddress, Self.strapAdvertising, rssi: -56),
            Self.report(0x04, 0x00, Self.strapAddress, Self.strapScanResponse, rssi: -57),
        ])
        for length in 0..<bytes.count {
            #expect(throws: HCIAdvertisingReport.ParseError.self) {
                try HCIAdvertisingReport.parse(event: Array(bytes.prefix(length)))
            }
        }
        // The event length says one byte more than there is, and one byte less.
        var longer = bytes
        longer[2] += 1
        #expect(throws: HCIAdvertisingReport.ParseError.lengthMismatch(declared: bytes.count - 2, actual: bytes.count - 3)) {
            try HCIAdvertisingReport.parse(event: longer)
        }
        // Lengths consistent with the event, but the last report's data length runs past the end.
        var inner = bytes
        inner[5 + 17 + 8] += 1
        #expect(throws: HCIAdvertisingReport.ParseError.malformedReports) { try HCIAdvertisingReport.parse(event: inner) }
        // A report count that leaves bytes over.
        #expect(throws: HCIAdvertisingReport.ParseError.malformedReports) {
            try HCIAdvertisingReport.parse(event: Self.event([Self.report(0x00, 0x00, Self.strapAddress, [], rssi: -1), [0x00]]))
        }
    }

    @Test func malformedEventsAreNamed() {
        #expect(throws: HCIAdvertisingReport.ParseError.reportCount(0)) {
            try HCIAdvertisingReport.parse(event: Self.event([], count: 0))
        }
        #expect(throws: HCIAdvertisingReport.ParseError.reportCount(26)) {
            try HCIAdvertisingReport.parse(
                event: Self.event([Self.report(0x00, 0x00, Self.strapAddress, [], rssi: -1)], count: 26))
        }
        #expect(throws: HCIAdvertisingReport.ParseError.dataTooLong(32)) {
            try HCIAdvertisingReport.parse(
                event: Self.event([Self.report(0x00, 0x00, Self.strapAddress, [UInt8](repeating: 0, count: 32), rssi: -1)]))
        }
        // Command Complete (0x0E) and LE Connection Complete (LE Meta subevent 0x01) are not reports.
        #expect(throws: HCIAdvertisingReport.ParseError.notLEMetaEvent) {
            try HCIAdvertisingReport.parse(event: [0x04, 0x0E, 0x04, 0x01, 0x0B, 0x20, 0x00])
        }
        #expect(throws: HCIAdvertisingReport.ParseError.otherSubevent(0x01)) {
            try HCIAdvertisingReport.parse(event: [0x04, 0x3E, 0x13, 0x01] + [UInt8](repeating: 0, count: 18))
        }
    }

    @Test func randomBytesNeverTrap() {
        var collector = HCIScanCollector()
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt8 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
        for _ in 0..<5000 {
            let length = Int(next()) + 5
            var bytes = (0..<length).map { _ in next() }
            bytes[0] = 0x04
            bytes[1] = 0x3E
            bytes[2] = UInt8(truncatingIfNeeded: length - 3)
            bytes[3] = 0x02
            collector.add(event: bytes)
        }
        #expect(collector.malformedEvents > 4000)
        #expect(collector.reports.count <= collector.capacity)
    }
}

struct HCIScanCollectorTests {
    typealias Vectors = HCIAdvertisingReportTests

    @Test func advertisingAndScanResponseMergePerAddress() {
        var collector = HCIScanCollector()
        collector.add(
            event: Vectors.event([Vectors.report(0x00, 0x00, Vectors.strapAddress, Vectors.strapAdvertising, rssi: -56)]))
        collector.add(event: Vectors.event([Vectors.report(0x00, 0x01, Vectors.watchAddress, [0x02, 0x01, 0x06], rssi: -80)]))
        // The scan response arrives later, beside a repeat of the watch's advertisement.
        collector.add(
            event: Vectors.event([
                Vectors.report(0x04, 0x00, Vectors.strapAddress, Vectors.strapScanResponse, rssi: 127),
                Vectors.report(0x00, 0x01, Vectors.watchAddress, [0x02, 0x01, 0x06], rssi: -78),
            ]))
        let reports = collector.reports
        #expect(reports.map(\.address) == ["C0:11:22:33:44:55", "D2:C0:FF:EE:00:01"])
        #expect(reports[0].data.localName == "H10")
        #expect(reports[0].data.serviceUUIDs16 == [0x180D])
        #expect(reports[0].data == AdvertisingData(parsing: Vectors.strapAdvertising + Vectors.strapScanResponse))
        #expect(reports[0].rssi == -56, "a scan response without RSSI keeps the last one heard")
        #expect(reports[0].endpoint.isEmpty)
        #expect(reports[1].addressType == .random)
        #expect(reports[1].rssi == -78)
        #expect(reports[1].data.structures.count == 1, "a repeated advertisement replaces, not appends")
        #expect(collector.malformedEvents == 0)
    }

    @Test func scanResponseAloneStillReportsTheDevice() {
        var collector = HCIScanCollector()
        collector.add(
            event: Vectors.event([Vectors.report(0x04, 0x00, Vectors.strapAddress, Vectors.strapScanResponse, rssi: -60)]))
        #expect(collector.reports.map(\.data.localName) == ["H10"])
    }

    @Test func devicesBeyondCapacityAreCountedNotKept() {
        var collector = HCIScanCollector(capacity: 2)
        for last in UInt8(1)...5 {
            collector.add(event: Vectors.event([Vectors.report(0x00, 0x00, [last, 0, 0, 0, 0, 0xC0], [], rssi: -50)]))
        }
        collector.add(
            event: Vectors.event([Vectors.report(0x04, 0x00, [1, 0, 0, 0, 0, 0xC0], Vectors.strapScanResponse, rssi: -50)]))
        #expect(collector.reports.map(\.address) == ["C0:00:00:00:00:01", "C0:00:00:00:00:02"])
        #expect(collector.reports.first?.data.localName == "H10")
        #expect(collector.droppedDevices == 3)
    }

    @Test func otherLEMetaEventsAreNotCountedAsMalformed() {
        var collector = HCIScanCollector()
        collector.add(event: [0x04, 0x3E, 0x13, 0x01] + [UInt8](repeating: 0, count: 18))
        collector.add(event: [0x04, 0x3E, 0x05, 0x02, 0x01, 0x00])
        #expect(collector.malformedEvents == 1)
        #expect(collector.reports.isEmpty)
    }
}

struct HCITransportArgumentTests {
    @Test func addressesRoundTripInWireOrder() {
        #expect(BluetoothAddress.wireOrder("C0:11:22:33:44:5a") == [0x5A, 0x44, 0x33, 0x22, 0x11, 0xC0])
        #expect(BluetoothAddress.text(wireOrder: [0x5A, 0x44, 0x33, 0x22, 0x11, 0x00]) == "00:11:22:33:44:5A")
        for junk in [
            "", "C0:11:22:33:44", "C0:11:22:33:44:55:66", "C0:11:22:33:44:5", "C0:11:22:33:44:GG", "C0-11-22-33-44-55",
            "+1:11:22:33:44:55",
        ] {
            #expect(BluetoothAddress.wireOrder(junk) == nil, "\(junk)")
        }
    }

    /// The emulated scan takes the same addresses as the radio: a sign is not a hex digit.
    @Test func emulatedScanTakesOnlyAddresses() {
        #expect(EmulatedScan.isAddress("c0:ff:ee:00:00:01"))
        for junk in ["+1:FF:EE:00:00:01", "C0:FF:EE:00:00:-1", "C0:FF:EE:00:00", "C0:FF:EE:00:00:01:02", "C0FFEE000001"] {
            #expect(!EmulatedScan.isAddress(junk), "\(junk)")
        }
    }

    @Test func userChannelAddressIsTheAdapterOnChannelOne() {
        let bytes = HCILibrary.userChannelAddressBytes(2)
        // sockaddr_hci: family AF_BLUETOOTH (31), hci_dev 2, hci_channel HCI_CHANNEL_USER (1), each 16 bits.
        #expect(bytes == [31, 0, 2, 0, 1, 0])
    }

    @Test func scanParametersInControllerUnits() {
        let defaults = HCIScanParameters()
        #expect(defaults.active && !defaults.filterDuplicates)
        #expect(defaults.intervalUnits == 0x0010 && defaults.windowUnits == 0x0010)
        let duty = HCIScanParameters(intervalMilliseconds: 100, windowMilliseconds: 50)
        #expect(duty.intervalUnits == 160 && duty.windowUnits == 80)
        let inverted = HCIScanParameters(intervalMilliseconds: 20, windowMilliseconds: 60)
        #expect(inverted.windowUnits == inverted.intervalUnits)
        #expect(HCIScanParameters(intervalMilliseconds: 0, windowMilliseconds: -5).intervalUnits == 0x0004)
        #expect(HCIScanParameters(intervalMilliseconds: 1e9).intervalUnits == 0x4000)
        #expect(HCIScanParameters(intervalMilliseconds: .nan, windowMilliseconds: .infinity).windowUnits == 0x4000)
    }

    @Test func adapterNames() {
        #expect(HCITransport.adapterIndex("hci0") == 0)
        #expect(HCITransport.adapterIndex("hci12") == 12)
        for junk in ["", "hci", "hci-1", "hci+1", "hci65535", "hci99999999999", "eth0", "hci٣", "HCI0", "hci0 "] {
            #expect(HCITransport.adapterIndex(junk) == nil, "\(junk)")
        }
        #expect(throws: BLETransportError.self) { try HCITransport.open(adapter: "wlan0") }
    }

    @Test func errnoBecomesWhatToDo() {
        func error(_ errno: Int32) -> BLETransportError {
            HCITransport.transportError(SystemError("bind(hci1, HCI_CHANNEL_USER)", errno: errno), adapter: "hci1")
        }
        guard case .unavailable(let noKernel) = error(EAFNOSUPPORT), case .unavailable(let noAdapter) = error(ENODEV),
            case .busy(let busy) = error(EBUSY), case .failed(let permission) = error(EPERM),
            case .failed(let access) = error(EACCES)
        else {
            Issue.record("wrong kinds")
            return
        }
        #expect(noKernel.contains("no Bluetooth support") && noKernel.contains("EAFNOSUPPORT"))
        #expect(noAdapter.contains("no Bluetooth adapter hci1"))
        #expect(busy.contains("hci1 is up or in use") && busy.contains("btmgmt --index 1 power off"))
        #expect(permission.contains("CAP_NET_ADMIN") && access.contains("CAP_NET_ADMIN"))
        for sentence in [noKernel, noAdapter, busy, permission] { #expect(!sentence.contains("\n")) }
    }
}

/// The radio path on this machine: without Bluetooth in the kernel, opening the transport says so
/// in one sentence. Where a real adapter exists the test stands aside (it needs a radio to mean anything).
struct HCITransportOnThisMachineTests {
    @Test func openWithoutBluetoothIsUnavailable() throws {
        let transport: HCITransport
        do {
            transport = try HCITransport.open(adapter: "hci0")
        } catch {
            guard case .unavailable(let why) = error else {
                Issue.record("expected .unavailable, got \(error)")
                return
            }
            #expect(!why.isEmpty && !why.contains("\n"))
            let probe = socket(AF_BLUETOOTH, Int32(SOCK_SEQPACKET.rawValue), 0)
            let kernelLacksBluetooth = probe < 0 && errno == EAFNOSUPPORT
            if probe >= 0 { close(probe) }
            if kernelLacksBluetooth {
                #expect(
                    why
                        == "this kernel has no Bluetooth support (socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI) failed with EAFNOSUPPORT), so no BLE wearable can be recorded here"
                )
            }
            #expect(error.description.hasPrefix("Bluetooth unavailable: "))
            return
        }
        try Test.cancel(
            "a real adapter hci0 (\(transport.controllerAddress)) is present: this test checks the machine without Bluetooth")
    }
}
