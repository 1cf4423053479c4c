import Dispatch
import Glibc

/// The `GATTLink` of the transports that speak ATT themselves (emulated and `hci`): a
/// `GATTConnection` over the bearer, with characteristics resolved to ATT handles once discovery
/// is done. MTU exchange and discovery run first and end in `.ready`; a subscription is the CCCD
/// write (notifications where offered, else indications, which the client confirms); every
/// request is answered by exactly one event, or by `.linkLost` (docs/ble.md, "The GATT link").
/// Confined to its queue.
public final class ATTGATTLink: GATTLink, @unchecked Sendable {
    // @unchecked: every field is confined to `queue`.
    private let queue: DispatchQueue
    private let onEvent: @Sendable (GATTLinkEvent) -> Void
    private var connection: GATTConnection?
    private var mtu = 23
    private var characteristics: [GATTCharacteristicID: GATTCharacteristic] = [:]
    /// Which characteristic each value handle belongs to, for notifications and indications.
    private var owners: [UInt16: GATTCharacteristicID] = [:]
    private var operations: [GATTClient.OperationID: (kind: GATTOperationKind, characteristic: GATTCharacteristicID)] = [:]
    private var closed = false

    private init(queue: DispatchQueue, onEvent: @escaping @Sendable (GATTLinkEvent) -> Void) {
        self.queue = queue
        self.onEvent = onEvent
    }

    /// A link over `bearer`; it starts (MTU exchange, discovery) in a later turn of `queue`, so no
    /// event reaches the owner before it holds the link.
    public static func open(
        bearer: any ATTBearer, queue: DispatchQueue, preferredMTU: UInt16 = 247,
        onEvent: @escaping @Sendable (GATTLinkEvent) -> Void
    ) -> ATTGATTLink {
        let link = ATTGATTLink(queue: queue, onEvent: onEvent)
        link.connection = GATTConnection(bearer: bearer, queue: queue, preferredMTU: preferredMTU) { [weak link] event in
            link?.received(event)
        }
        queue.async { link.start() }
        return link
    }

    /// What a failed connect means to the driver: out of range and other failures are `.failed`
    /// (retried with backoff); EBUSY — another ATT client holds the link — is `.busy`.
    public static func transportError(_ error: ATTBearerError) -> BLETransportError {
        switch error {
        case .outOfRange: .failed(error.description)
        case .system(let failure) where failure.errno == EBUSY: .busy(failure.description)
        default: .failed(error.description)
        }
    }

    private func start() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !closed else { return }
        connection?.start()
    }

    public func read(_ characteristic: GATTCharacteristicID) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let connection, !closed else { return }
        guard let found = characteristics[characteristic] else { return refuse(.read, characteristic) }
        operations[connection.read(found.valueHandle)] = (.read, characteristic)
    }

    public func write(_ characteristic: GATTCharacteristicID, _ value: [UInt8]) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let connection, !closed else { return }
        guard let found = characteristics[characteristic] else { return refuse(.write, characteristic) }
        operations[connection.write(found.valueHandle, value: value)] = (.write, characteristic)
    }

    public func subscribe(_ characteristic: GATTCharacteristicID) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let connection, !closed else { return }
        guard let found = characteristics[characteristic] else { return refuse(.subscribe, characteristic) }
        guard let id = connection.subscribe(found) else {
            onEvent(
                .failed(
                    GATTFailure(
                        operation: .subscribe, characteristic: characteristic,
                        why: "it has no Client Characteristic Configuration descriptor or cannot notify")))
            return
        }
        operations[id] = (.subscribe, characteristic)
    }

    public func close() {
        dispatchPrecondition(condition: .onQueue(queue))
        closed = true
        connection?.close()
    }

    /// PDUs that did not decode or that nothing asked for, dropped so far.
    public var ignoredPDUs: Int { connection?.ignoredPDUs ?? 0 }

    private func refuse(_ operation: GATTOperationKind, _ characteristic: GATTCharacteristicID) {
        onEvent(
            .failed(GATTFailure(operation: operation, characteristic: characteristic, why: "the peripheral does not offer it")))
    }

    private func received(_ event: GATTClient.Event) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !closed else { return }
        switch event {
        case .mtuExchanged(let value):
            mtu = value
        case .discovered(let services):
            for service in services {
                for characteristic in service.characteristics {
                    let id = GATTCharacteristicID(service: service.uuid, characteristic: characteristic.uuid)
                    // A database naming a characteristic twice: the first one is the one used.
                    guard characteristics[id] == nil else { continue }
                    characteristics[id] = characteristic
                    owners[characteristic.valueHandle] = id
                }
            }
            onEvent(.ready(mtu: mtu, characteristics: characteristics.mapValues(\.properties)))
        case .readCompleted(let operation, _, let value):
            guard let (_, characteristic) = operations.removeValue(forKey: operation) else { return }
            onEvent(.readCompleted(characteristic, value: value))
        case .writeCompleted(let operation, _):
            guard let (kind, characteristic) = operations.removeValue(forKey: operation) else { return }
            onEvent(kind == .subscribe ? .subscribed(characteristic) : .writeCompleted(characteristic))
        case .operationFailed(let operation, _, let error):
            guard let (kind, characteristic) = operations.removeValue(forKey: operation) else { return }
            onEvent(
                .failed(GATTFailure(operation: kind, characteristic: characteristic, attError: error, why: "ATT error \(error)")))
        case .notification(let handle, let value), .indication(let handle, let value):
            guard let characteristic = owners[handle] else { return }
            onEvent(.notification(characteristic, value: value))
        case .ignoredPDU(let why):
            onEvent(.ignoredInput(why))
        case .linkFailed(let why):
            closed = true
            onEvent(.linkLost(why))
        }
    }
}
