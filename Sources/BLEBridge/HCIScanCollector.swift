/// What one scan pass heard, per device: the latest advertising data and scan response of each
/// address, merged into one `BLEScanReport` (advertising data first). The controller may report a
/// device many times in a pass (duplicate filtering off, see docs/ble.md); later reports replace
/// earlier ones of the same kind, so duplicates collapse here. Bounded: devices beyond `capacity`
/// are counted, not kept.
public struct HCIScanCollector: Sendable {
    public let capacity: Int
    public private(set) var malformedEvents = 0
    public private(set) var droppedDevices = 0

    private struct Device {
        var addressType: BLEScanReport.AddressType
        var advertising: [UInt8]?
        var scanResponse: [UInt8]?
        var rssi: Int8?
    }

    private var devices: [String: Device] = [:]
    private var order: [String] = []

    public init(capacity: Int = 128) {
        self.capacity = max(0, capacity)
    }

    /// Adds one HCI event packet; one that is not an advertising report, or is malformed, is counted.
    public mutating func add(event bytes: [UInt8]) {
        do {
            for report in try HCIAdvertisingReport.parse(event: bytes) { add(report) }
        } catch .otherSubevent {
            // Another LE Meta event (a connection, extended reports): not this pass's business.
        } catch {
            malformedEvents += 1
        }
    }

    public mutating func add(_ report: HCIAdvertisingReport) {
        var device: Device
        if let known = devices[report.address] {
            device = known
        } else {
            guard order.count < capacity else {
                droppedDevices += 1
                return
            }
            order.append(report.address)
            device = Device(addressType: report.addressType)
        }
        device.addressType = report.addressType
        if report.eventType == .scanResponse { device.scanResponse = report.data } else { device.advertising = report.data }
        if let rssi = report.rssi { device.rssi = rssi }
        devices[report.address] = device
    }

    /// One report per device, in the order first heard.
    public var reports: [BLEScanReport] {
        order.compactMap { address in
            guard let device = devices[address] else { return nil }
            let data = AdvertisingData(parsing: device.advertising ?? []).merged(
                with: AdvertisingData(parsing: device.scanResponse ?? []))
            return BLEScanReport(address: address, addressType: device.addressType, data: data, rssi: device.rssi)
        }
    }
}
