/// A characteristic as a wearable's link names it: by its service's and its own UUID, never by
/// ATT handle, so that the same link logic runs over our own ATT client (emulated and `hci`
/// transports) and over bluetoothd's GATT objects (`bluez` transport), which hide the handles.
public struct GATTCharacteristicID: Hashable, Sendable, CustomStringConvertible {
    public var service: BluetoothUUID
    public var characteristic: BluetoothUUID

    public init(service: BluetoothUUID, characteristic: BluetoothUUID) {
        self.service = service
        self.characteristic = characteristic
    }

    public var description: String { "\(characteristic) in \(service)" }
}

/// What a link is asked to do to a characteristic.
public enum GATTOperationKind: String, Hashable, Sendable {
    case read, write, subscribe
}

/// A read, write or subscription the peripheral (or bluetoothd) refused.
public struct GATTFailure: Error, Hashable, Sendable, CustomStringConvertible {
    public var operation: GATTOperationKind
    public var characteristic: GATTCharacteristicID
    /// The ATT error the peripheral answered, where the link speaks ATT itself; nil when the
    /// refusal came from elsewhere (a D-Bus error from bluetoothd, a missing property).
    public var attError: ATTErrorCode?
    /// One line for the journal and `sensorkitctl devices`.
    public var why: String

    public init(operation: GATTOperationKind, characteristic: GATTCharacteristicID, attError: ATTErrorCode? = nil, why: String) {
        self.operation = operation
        self.characteristic = characteristic
        self.attError = attError
        self.why = why
    }

    public var description: String { "\(operation.rawValue) of \(characteristic) failed: \(why)" }
}

/// What a connected peripheral reports to its wearable link, on the link's queue.
public enum GATTLinkEvent: Hashable, Sendable {
    /// Services are resolved: every characteristic found, with its properties, and the ATT MTU
    /// the link will carry notifications in.
    case ready(mtu: Int, characteristics: [GATTCharacteristicID: GATTClient.Properties])
    case readCompleted(GATTCharacteristicID, value: [UInt8])
    case writeCompleted(GATTCharacteristicID)
    /// Notifications (or indications) of the characteristic now reach the link.
    case subscribed(GATTCharacteristicID)
    case failed(GATTFailure)
    /// A notification or an indication: the link treats both alike (the link acknowledges
    /// indications itself).
    case notification(GATTCharacteristicID, value: [UInt8])
    /// Input from the peripheral that was dropped (a PDU that does not decode, a response nobody
    /// asked for, a value of an unknown characteristic): counted by the link; nothing else follows.
    case ignoredInput(String)
    /// The connection is gone (or never came up); reported once, and nothing follows it.
    case linkLost(String)
}

/// One connected peripheral at GATT level. Every method is called on the queue the transport
/// was given at `connect`, and every event is delivered on it; each request is answered by
/// exactly one event (or by `.linkLost`).
public protocol GATTLink: AnyObject {
    func read(_ characteristic: GATTCharacteristicID)
    /// A write with response (the PMD control point needs the answer).
    func write(_ characteristic: GATTCharacteristicID, _ value: [UInt8])
    /// Notifications where the characteristic has them, indications otherwise.
    func subscribe(_ characteristic: GATTCharacteristicID)
    /// Disconnects; no event follows.
    func close()
}
