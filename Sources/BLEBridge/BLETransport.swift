import Dispatch

/// How the BLE driver finds wearables and connects them: over the radio (our own host on an HCI
/// user channel), through bluetoothd, or over the emulated transport's directory (docs/ble.md, "The
/// emulated transport"), both with our own ATT client (`ATTGATTLink`). Everything above the
/// `GATTLink` is the same for every transport.
public protocol BLETransport: AnyObject, Sendable {
    /// What one scan pass saw: every peripheral in range, advertising and scan-response data merged.
    /// Called at least once a second by the driver; must not block for long (≤ one scan window).
    func scan() throws(BLETransportError) -> [BLEScanReport]
    /// Connects a peripheral the last scan reported; never called while a scan pass runs (a
    /// controller must not scan while it connects). Called on `queue`; the link's methods are
    /// called on it and `onEvent` runs on it, never inside this call: `.ready` once services are
    /// resolved, then one answer per request, or `.linkLost`. `.busy` means another client holds
    /// the peripheral's link; anything else (out of range included) is `.failed` or `.unavailable`.
    func connect(
        _ report: BLEScanReport, queue: DispatchQueue, onEvent: @escaping @Sendable (GATTLinkEvent) -> Void
    ) throws(BLETransportError) -> any GATTLink
    /// What the transport itself knows of a peripheral for `sensorkitctl devices` (bluez: that the
    /// daemon paired it); empty for most.
    func status(of address: String) -> [String: String]
}

extension BLETransport {
    public func status(of address: String) -> [String: String] { [:] }
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

    /// The ATT bearer alone: the `.att` socket of the report.
    public func connect(_ report: BLEScanReport) throws(ATTBearerError) -> any ATTBearer {
        try SeqPacketATTBearer(connectingTo: report.endpoint)
    }

    public func connect(
        _ report: BLEScanReport, queue: DispatchQueue, onEvent: @escaping @Sendable (GATTLinkEvent) -> Void
    ) throws(BLETransportError) -> any GATTLink {
        do {
            return ATTGATTLink.open(bearer: try connect(report), queue: queue, onEvent: onEvent)
        } catch {
            throw ATTGATTLink.transportError(error)
        }
    }
}
