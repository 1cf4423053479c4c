import Dispatch
import Glibc
import SensorSystem
import Synchronization
import SystemBus

/// One wearable through bluetoothd, as a `GATTLink`: characteristics are bluetoothd's objects,
/// reads and writes are `ReadValue` / `WriteValue` (`type=request`), notifications come through
/// an `AcquireNotify` fd (one datagram per notification, no D-Bus message each) or, where that is
/// refused, `StartNotify` and `PropertiesChanged` on `Value`.
///
/// Its state lives on the transport's queue (every D-Bus answer arrives there); requests hop
/// onto it from the link's queue and events hop back, so their order holds. Each request gets
/// one event; `.linkLost` is reported once and nothing follows it, and nothing follows `close()`.
///
/// Battery: bluetoothd keeps the Battery Service (0x180F) to itself and exports `Battery1`
/// instead, so Battery Level (0x2A19) is served from `Battery1.Percentage` — read, and notified
/// when it changes — and the wearable's logic stays the same on every transport.
// @unchecked Sendable: its state is confined to transport.queue (dispatchPrecondition).
final class BlueZGATTLink: GATTLink, @unchecked Sendable {
    let devicePath: DBusObjectPath
    let address: String
    /// Strong: a link outliving the driver's reference to the transport must still reach its queue;
    /// the transport drops its links when they end or it closes, which breaks the cycle.
    private let transport: BlueZTransport
    private let linkQueue: DispatchQueue
    private let onEvent: @Sendable (GATTLinkEvent) -> Void
    /// Set on the link's queue by `close()` and by `.linkLost`'s delivery: nothing is delivered after it.
    private let finished = Mutex(false)

    private enum Phase { case connecting, resolving, ready, ended }
    private var phase = Phase.connecting
    /// True when this link asked bluetoothd to connect; only then does `close` disconnect.
    private var connectedByUs = false
    private var deadline: ContinuousClock.Instant
    private var characteristics: [GATTCharacteristicID: BlueZGATTCharacteristic] = [:]
    private var acquired: [GATTCharacteristicID: AcquiredNotifications] = [:]
    private var started: [DBusObjectPath: GATTCharacteristicID] = [:]
    private var batterySubscribed = false
    /// Pairing is tried once per link, when bluetoothd says the wearable wants bonding.
    private var pairingTried = false
    /// Operations refused "Not paired" while that one pairing runs: the driver sends its reads and
    /// subscriptions at once, and each must wait for the pairing, not fail beside it.
    private var waitingForPairing: [PairingWaiter] = []
    private var pairingInProgress = false

    private struct PairingWaiter {
        let retry: @Sendable (BlueZGATTLink) -> Void
        let failed: @Sendable (BlueZGATTLink, String) -> Void
    }

    static let batteryLevel = GATTCharacteristicID(service: .batteryService, characteristic: .batteryLevel)

    private final class AcquiredNotifications {
        let fd: Int32
        let mtu: Int
        let source: any DispatchSourceRead
        init(fd: Int32, mtu: Int, source: any DispatchSourceRead) {
            self.fd = fd
            self.mtu = mtu
            self.source = source
        }
    }

    init(
        transport: BlueZTransport, device: BlueZDevice, queue: DispatchQueue, onEvent: @escaping @Sendable (GATTLinkEvent) -> Void
    ) {
        self.transport = transport
        devicePath = device.path
        address = device.address
        linkQueue = queue
        self.onEvent = onEvent
        deadline = .now + transport.options.connectTimeout
    }

    // MARK: GATTLink (on the link's queue)

    func read(_ characteristic: GATTCharacteristicID) {
        transport.queue.async { self.performRead(characteristic) }
    }

    func write(_ characteristic: GATTCharacteristicID, _ value: [UInt8]) {
        transport.queue.async { self.performWrite(characteristic, value) }
    }

    func subscribe(_ characteristic: GATTCharacteristicID) {
        transport.queue.async { self.performSubscribe(characteristic) }
    }

    func close() {
        finished.withLock { $0 = true }
        transport.queue.async {
            guard self.phase != .ended else { return }
            self.release(disconnect: self.connectedByUs)
            self.transport.forget(self)
        }
    }

    // MARK: On the transport's queue

    func start(_ device: BlueZDevice) {
        dispatchPrecondition(condition: .onQueue(transport.queue))
        if device.connected {
            // bluetoothd's connection (a wearable the user paired): used, never fought over.
            phase = .resolving
            if device.servicesResolved { becomeReady() }
            return
        }
        connectedByUs = true
        call(devicePath, BlueZName.device, "Connect", [], timeout: transport.options.connectTimeout) { link, result in
            guard case .failure(let error) = result else {
                if link.phase == .connecting { link.phase = .resolving }
                if link.transport.tree.device(at: link.devicePath)?.servicesResolved == true { link.becomeReady() }
                return
            }
            if BlueZRefusal.classify(error) == .needsPairing, !link.pairingTried {
                link.pair { link in link.connectAgain() }
                return
            }
            link.end("bluetoothd could not connect \(link.address): \(error)\(Self.hint(error))")
        }
    }

    private func connectAgain() {
        guard let device = transport.tree.device(at: devicePath) else {
            end("bluetoothd removed \(address) while pairing")
            return
        }
        start(device)
    }

    /// `Device1.Pair` with our agent expecting this device; `retry` runs once it is paired
    /// (or was already). A refusal ends the operation with a sentence saying so.
    private func pair(
        then retry: @escaping @Sendable (BlueZGATTLink) -> Void, failed: (@Sendable (BlueZGATTLink, String) -> Void)? = nil
    ) {
        dispatchPrecondition(condition: .onQueue(transport.queue))
        pairingTried = true
        pairingInProgress = true
        transport.agent.expect(devicePath)
        call(devicePath, BlueZName.device, "Pair", [], timeout: transport.options.connectTimeout) { link, result in
            link.transport.agent.done(link.devicePath)
            link.pairingInProgress = false
            let waiting = link.waitingForPairing
            link.waitingForPairing = []
            switch result {
            case .success:
                link.transport.notePaired(link.address)
                retry(link)
                for waiter in waiting { waiter.retry(link) }
            case .failure(let error) where error.name == "org.bluez.Error.AlreadyExists":
                retry(link)
                for waiter in waiting { waiter.retry(link) }
            case .failure(let error):
                let why = "\(link.address) wants bonding and pairing it through bluetoothd failed: \(error)"
                for waiter in waiting { waiter.failed(link, why) }
                if let failed { failed(link, why) } else { link.end(why) }
            }
        }
    }

    /// Connecting or resolving services: `tick` ends the link at its deadline.
    var waitsForADeadline: Bool {
        dispatchPrecondition(condition: .onQueue(transport.queue))
        return phase == .connecting || phase == .resolving
    }

    func tick() {
        dispatchPrecondition(condition: .onQueue(transport.queue))
        if phase == .connecting || phase == .resolving, ContinuousClock.now > deadline {
            end("services of \(address) were not resolved within \(transport.options.connectTimeout)")
        }
    }

    func deviceChanged(_ device: BlueZDevice?, changed: Set<String>, interface: String) {
        dispatchPrecondition(condition: .onQueue(transport.queue))
        guard phase != .ended else { return }
        guard let device else { return }
        if interface == BlueZName.battery {
            if phase == .ready, batterySubscribed, changed.contains("Percentage"), let percent = device.batteryPercent {
                deliver(.notification(Self.batteryLevel, value: [percent]))
            }
            return
        }
        if changed.contains("Connected"), !device.connected, phase != .connecting {
            end("\(address) disconnected")
        } else if changed.contains("ServicesResolved"), device.servicesResolved, phase == .resolving {
            becomeReady()
        } else if changed.contains("ServicesResolved"), !device.servicesResolved, phase == .ready {
            // bluetoothd clears ServicesResolved just before Connected on a disconnection.
            end("\(address) disconnected (its services are no longer resolved)")
        }
    }

    func isNotifying(_ characteristic: DBusObjectPath) -> Bool {
        dispatchPrecondition(condition: .onQueue(transport.queue))
        return started[characteristic] != nil
    }

    func notified(_ characteristic: DBusObjectPath, _ value: [UInt8]) {
        dispatchPrecondition(condition: .onQueue(transport.queue))
        guard phase == .ready, let id = started[characteristic] else { return }
        deliver(.notification(id, value: value))
    }

    /// Ends the link: `why` is reported as `.linkLost` (nil: silently, a replaced link).
    func end(_ why: String?) {
        dispatchPrecondition(condition: .onQueue(transport.queue))
        guard phase != .ended else { return }
        release(disconnect: connectedByUs && why != nil)
        transport.forget(self)
        if let why {
            let event = GATTLinkEvent.linkLost(why)
            linkQueue.async {
                let deliver = self.finished.withLock { done in
                    defer { done = true }
                    return !done
                }
                if deliver { self.onEvent(event) }
            }
        }
    }

    private func becomeReady() {
        let tree = transport.tree
        characteristics = tree.characteristics(of: devicePath)
        var properties = characteristics.mapValues(\.properties)
        if tree.device(at: devicePath)?.batteryPercent != nil, properties[Self.batteryLevel] == nil {
            properties[Self.batteryLevel] = [.read, .notify]
        }
        let mtu = characteristics.values.compactMap(\.mtu).max() ?? ATTPDU.defaultMTU
        phase = .ready
        deliver(.ready(mtu: mtu, characteristics: properties))
    }

    private func performRead(_ id: GATTCharacteristicID) {
        dispatchPrecondition(condition: .onQueue(transport.queue))
        guard phase == .ready else { return }
        guard let characteristic = characteristics[id] else {
            if id == Self.batteryLevel, let percent = transport.tree.device(at: devicePath)?.batteryPercent {
                deliver(.readCompleted(id, value: [percent]))
            } else {
                deliver(.failed(GATTFailure(operation: .read, characteristic: id, why: "bluetoothd has no such characteristic")))
            }
            return
        }
        call(characteristic.path, BlueZName.gattCharacteristic, "ReadValue", [Self.noOptions]) { link, result in
            switch result {
            case .success(let reply):
                guard let value = try? expectArguments(reply, "ay")[0].as([UInt8].self),
                    value.count <= GATTClient.maximumValueLength
                else {
                    link.deliver(
                        .failed(
                            GATTFailure(
                                operation: .read, characteristic: id,
                                why: "bluetoothd answered with no byte array of at most \(GATTClient.maximumValueLength) bytes")))
                    return
                }
                link.deliver(.readCompleted(id, value: value))
            case .failure(let error):
                link.failed(.read, id, error) { $0.performRead(id) }
            }
        }
    }

    private func performWrite(_ id: GATTCharacteristicID, _ value: [UInt8]) {
        dispatchPrecondition(condition: .onQueue(transport.queue))
        guard phase == .ready else { return }
        guard let characteristic = characteristics[id] else {
            deliver(.failed(GATTFailure(operation: .write, characteristic: id, why: "bluetoothd has no such characteristic")))
            return
        }
        let options = DBusValue.dictionary(
            key: .string, value: .variant, [DBusDictionaryEntry(.string("type"), .variant(.string("request")))])
        call(characteristic.path, BlueZName.gattCharacteristic, "WriteValue", [.array(.byte, value.map { .byte($0) }), options]) {
            link, result in
            switch result {
            case .success: link.deliver(.writeCompleted(id))
            case .failure(let error): link.failed(.write, id, error) { $0.performWrite(id, value) }
            }
        }
    }

    private func performSubscribe(_ id: GATTCharacteristicID) {
        dispatchPrecondition(condition: .onQueue(transport.queue))
        guard phase == .ready else { return }
        guard let characteristic = characteristics[id] else {
            if id == Self.batteryLevel, transport.tree.device(at: devicePath)?.batteryPercent != nil {
                batterySubscribed = true
                deliver(.subscribed(id))
            } else {
                deliver(
                    .failed(GATTFailure(operation: .subscribe, characteristic: id, why: "bluetoothd has no such characteristic")))
            }
            return
        }
        guard characteristic.properties.contains(.notify) else {
            startNotify(id, characteristic)
            return
        }
        call(characteristic.path, BlueZName.gattCharacteristic, "AcquireNotify", [Self.noOptions]) { link, result in
            switch result {
            case .success(let reply):
                do throws(DBusError) {
                    let values = try expectArguments(reply, "hq")
                    let fd = try DBusFileDescriptor(dbus: values[0])
                    let mtu = Int(try values[1].as(UInt16.self))
                    guard let number = fd.take() else { throw .malformed("AcquireNotify returned a closed fd") }
                    link.acquired(id, fd: number, mtu: mtu)
                } catch {
                    link.deliver(.failed(GATTFailure(operation: .subscribe, characteristic: id, why: "AcquireNotify: \(error)")))
                }
            case .failure(let error):
                if BlueZRefusal.classify(error, acquiringNotify: true) == .useStartNotify {
                    link.startNotify(id, characteristic)
                } else {
                    link.failed(.subscribe, id, error) { $0.performSubscribe(id) }
                }
            }
        }
    }

    private func acquired(_ id: GATTCharacteristicID, fd: Int32, mtu: Int) {
        dispatchPrecondition(condition: .onQueue(transport.queue))
        guard phase == .ready else {
            _ = SystemCalls.close(fd)
            return
        }
        do {
            try UnixSocket.setNonBlocking(fd)
        } catch {
            _ = SystemCalls.close(fd)
            deliver(.failed(GATTFailure(operation: .subscribe, characteristic: id, why: "the notification socket: \(error)")))
            return
        }
        // An absurd MTU from the bus cannot size our buffer: the ATT maximum bounds it.
        let capacity = min(max(mtu, ATTPDU.defaultMTU), BlueZObjectTree.mtuRange.upperBound)
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: transport.queue)
        source.setEventHandler { [weak self] in self?.drain(id) }
        source.setCancelHandler { _ = SystemCalls.close(fd) }
        acquired[id]?.source.cancel()
        acquired[id] = AcquiredNotifications(fd: fd, mtu: capacity, source: source)
        source.resume()
        deliver(.subscribed(id))
    }

    /// Reads what waits on an acquired socket, at most 16 datagrams a turn (other links share the
    /// queue); EOF means bluetoothd closed it (another client's `StopNotify`, a disconnect).
    private func drain(_ id: GATTCharacteristicID) {
        dispatchPrecondition(condition: .onQueue(transport.queue))
        guard let notifications = acquired[id] else { return }
        for _ in 0..<16 {
            let received: IOResult<SeqPacketSocket.Received>
            do {
                received = try SeqPacketSocket.receive(notifications.fd, capacity: notifications.mtu)
            } catch {
                lostNotifications(id, "\(error)")
                return
            }
            switch received {
            case .wouldBlock: return
            case .done(.packet(let value)): deliver(.notification(id, value: value))
            case .done(.truncated(_, let length)):
                transport.report("\(address): a notification of \(length) bytes on a socket of MTU \(notifications.mtu), dropped")
            case .done(.closed):
                lostNotifications(id, "bluetoothd closed the notification socket")
                return
            }
        }
    }

    private func lostNotifications(_ id: GATTCharacteristicID, _ why: String) {
        acquired.removeValue(forKey: id)?.source.cancel()
        guard phase == .ready, let characteristic = characteristics[id] else { return }
        transport.report("\(address): notifications of \(id) ended (\(why)); restarted with StartNotify")
        // Subscribed again without an event: the link asked once and is still subscribed.
        call(characteristic.path, BlueZName.gattCharacteristic, "StartNotify", []) { link, result in
            switch result {
            case .success: link.started[characteristic.path] = id
            case .failure(let error):
                link.end("notifications of \(id) from \(link.address) ended and could not be restarted: \(error)")
            }
        }
    }

    private func startNotify(_ id: GATTCharacteristicID, _ characteristic: BlueZGATTCharacteristic) {
        dispatchPrecondition(condition: .onQueue(transport.queue))
        started[characteristic.path] = id
        call(characteristic.path, BlueZName.gattCharacteristic, "StartNotify", []) { link, result in
            switch result {
            case .success: link.deliver(.subscribed(id))
            case .failure(let error):
                // InProgress: another client started them; bluetoothd sends us the values all the same.
                if error.name == "org.bluez.Error.InProgress" {
                    link.deliver(.subscribed(id))
                } else {
                    link.started[characteristic.path] = nil
                    link.failed(.subscribe, id, error) { $0.performSubscribe(id) }
                }
            }
        }
    }

    /// An operation bluetoothd refused: a lost link ends it; a wearable that wants bonding is paired
    /// once and the operation runs again (`retry`); anything else is that operation's failure.
    private func failed(
        _ operation: GATTOperationKind, _ id: GATTCharacteristicID, _ error: DBusError,
        retry: @escaping @Sendable (BlueZGATTLink) -> Void
    ) {
        let failure: @Sendable (BlueZGATTLink, String) -> Void = { link, why in
            link.deliver(.failed(GATTFailure(operation: operation, characteristic: id, why: why)))
        }
        switch BlueZRefusal.classify(error) {
        case .needsPairing where pairingInProgress:
            waitingForPairing.append(PairingWaiter(retry: retry, failed: failure))
        case .needsPairing where !pairingTried:
            pair(then: retry, failed: failure)
        case .linkLost, .serviceGone: end("\(operation.rawValue) of \(id) on \(address): \(error)")
        default: deliver(.failed(GATTFailure(operation: operation, characteristic: id, why: "\(error)\(Self.hint(error))")))
        }
    }

    private func release(disconnect: Bool) {
        phase = .ended
        for notifications in acquired.values { notifications.source.cancel() }
        acquired = [:]
        for path in started.keys { call(path, BlueZName.gattCharacteristic, "StopNotify", []) { _, _ in } }
        started = [:]
        if disconnect { call(devicePath, BlueZName.device, "Disconnect", []) { _, _ in } }
    }

    private func deliver(_ event: GATTLinkEvent) {
        linkQueue.async {
            guard !self.finished.withLock({ $0 }) else { return }
            self.onEvent(event)
        }
    }

    private func call(
        _ path: DBusObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue], timeout: Duration? = nil,
        then: @escaping @Sendable (BlueZGATTLink, Result<[DBusValue], DBusError>) -> Void
    ) {
        transport.connection.call(
            destination: BlueZName.service, path: path, interface: interface, member: member, arguments: arguments,
            timeout: timeout ?? transport.options.callTimeout, queue: transport.queue
        ) { result in
            // Answers to an ended link are dropped; its fds were closed with it.
            guard self.phase != .ended else {
                if case .success(let values) = result {
                    for case .unixFD(let fd) in values { fd.close() }
                }
                return
            }
            then(self, result)
        }
    }

    private static let noOptions = DBusValue.dictionary(key: .string, value: .variant, [])

    private static func hint(_ error: DBusError) -> String {
        BlueZRefusal.classify(error) == .needsPairing
            ? " (the wearable wants bonding: pair it once with `bluetoothctl pair ADDRESS`)" : ""
    }
}
