/// How the BLE driver finds wearables and opens their ATT bearer: over the radio (HCI LE scan and
/// an L2CAP LE socket on the ATT channel) or over the emulated transport's directory
/// (docs/ble.md, "The emulated transport"). Everything above the bearer is the same for both.
public protocol BLETransport: AnyObject, Sendable {
    /// What one scan pass saw: every peripheral in range, advertising and scan-response data merged.
    /// Called at least once a second by the driver; must not block for long (≤ one scan window).
    func scan() throws(BLETransportError) -> [BLEScanReport]
    /// Opens the ATT bearer to a peripheral the last scan reported. Never called while a scan
    /// pass runs (a controller must not scan while it connects).
    func connect(_ report: BLEScanReport) throws(ATTBearerError) -> any ATTBearer
}

/// One peripheral as a scan saw it.
public struct BLEScanReport: Equatable, Sendable {
    public enum AddressType: UInt8, Equatable, Sendable {
        case `public` = 0, random = 1
    }

    /// Upper-case `AA:BB:CC:DD:EE:FF`.
    public var address: String
    public var addressType: AddressType
    /// Advertising data merged with the scan response.
    public var data: AdvertisingData
    /// Received signal strength at discovery in dBm; nil where the transport has none (emulated).
    public var rssi: Int8?
    /// Where the transport connects: the emulated `.att` socket's path; empty over the radio.
    public var endpoint: String

    public init(
        address: String, addressType: AddressType = .public, data: AdvertisingData, rssi: Int8? = nil,
        endpoint: String = ""
    ) {
        self.address = address
        self.addressType = addressType
        self.data = data
        self.rssi = rssi
        self.endpoint = endpoint
    }
}

public enum BLETransportError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No Bluetooth here: the kernel lacks it (EAFNOSUPPORT) or there is no adapter.
    case unavailable(String)
    /// Another stack holds the adapter or the link (EBUSY), with what to do about it.
    case busy(String)
    case failed(String)

    public var description: String {
        switch self {
        case .unavailable(let why): "Bluetooth unavailable: \(why)"
        case .busy(let why): "Bluetooth busy: \(why)"
        case .failed(let why): why
        }
    }
}

/// The emulated transport: a directory of `ADDR.adv` files and `ADDR.att` SEQPACKET sockets.
public final class EmulatedBLETransport: BLETransport {
    public let directory: String

    public init(directory: String) { self.directory = directory }

    public func scan() throws(BLETransportError) -> [BLEScanReport] {
        EmulatedScan.scan(directory: directory).map { BLEScanReport(address: $0.address, data: $0.data, endpoint: $0.attPath) }
    }

    public func connect(_ report: BLEScanReport) throws(ATTBearerError) -> any ATTBearer {
        try SeqPacketATTBearer(connectingTo: report.endpoint)
    }
}
