import Dispatch
import Glibc
import SensorKitModel
import SensorSystem
import Synchronization
import SystemBus

/// BLE through bluetoothd (docs/ble.md, "The bluez transport"): discovery through `Adapter1`,
/// devices as `Device1` objects, GATT as bluetoothd's `GattService1`/`GattCharacteristic1`
/// objects, notifications through `AcquireNotify` fds. bluetoothd keeps the adapter, the ATT
/// channel, MTU negotiation and pairing; this transport never opens a raw socket.
///
/// State (the mirror of bluetoothd's objects, the links, discovery) is confined to `queue`;
/// every D-Bus result and signal arrives there. Links deliver their events on the queue the
/// caller of `connect` names.
///
/// bluetoothd may start after the daemon (boot order) or restart: without `org.bluez` on the
/// bus the transport waits for it (NameOwnerChanged) with no wearables in range, and a bus
/// connection that ends is opened again with `RetryBackoff`'s waits. bluetoothd exports an
/// adapter only once the kernel reports its controller (at boot, a moment after bluetoothd
/// started): until `Adapter1` is on the adapter's path (InterfacesAdded) scans say so and retry.
// @unchecked Sendable: its state is confined to `queue` (dispatchPrecondition).
public final class BlueZTransport: BLETransport, @unchecked Sendable {
    public struct Options: Sendable {
        public var adapter = "hci0"
        /// The services the discovery filter asks for (`SetDiscoveryFilter` `UUIDs`); empty: any.
        public var serviceUUIDs: [BluetoothUUID] = [.heartRateService, .polarMeasurementDataService]
        /// Discovery stops this long after the last `scan()` (the driver scans only while a
        /// configured wearable is missing).
        public var discoveryLinger: Duration = .seconds(3)
        public var callTimeout: Duration = .seconds(10)
        /// `Device1.Connect` and the wait for `ServicesResolved` (bluetoothd's own connect gives up after 40 s).
        public var connectTimeout: Duration = .seconds(30)
        /// How long `init` waits for the broker and bluetoothd's first answer.
        public var startTimeout: Duration = .seconds(5)
        /// The waits before the bus is opened again after the connection ended: 1 s, doubling up
        /// to a minute.
        public var firstRetry: Duration = .seconds(1)
        public var lastRetry: Duration = .seconds(60)
        public init() {}
    }

    public let options: Options
    public let adapterPath: DBusObjectPath
    let queue = DispatchQueue(label: "ble.bluez")
    private let bus: DBusBus
    // Links call through it from their own queues while a reconnect may replace it.
    private let current: Mutex<DBusConnection>
    var connection: DBusConnection { current.withLock { $0 } }
    private var backoff: RetryBackoff
    private var reconnecting = false
    private var closed = false
    /// Why bluetoothd is away, said once per absence; nil while it is on the bus.
    private var absence: String?
    private var objects: DBusManagedObjects = [:]
    private var treeCache: BlueZObjectTree?
    private var links: [DBusObjectPath: BlueZGATTLink] = [:]
    private var bluezPresent = false
    /// Whether bluetoothd exports our adapter, as last said in the log; nil until bluetoothd
    /// answered (again, after it left the bus).
    private var adapterExported: Bool?
    private var discoveryRequested = false
    private var lastScan: ContinuousClock.Instant?
    private var timer: (any DispatchSourceTimer)?
    /// The timer is armed (`tickWhileNeeded`).
    private var ticking = false
    private var subscriptions: [DBusSubscription] = []
    private let log: @Sendable (String) -> Void
    private let reported = Mutex<[String]>([])
    let agent = BlueZAgent()
    private var agentExport: DBusExport?
    private let paired = Mutex<[String]>([])

    /// Connects to `bus` (the system bus on a tablet; a private bus in tests) and reads
    /// bluetoothd's objects. No bus is `.unavailable`; no bluetoothd, or no such adapter yet, is a
    /// transport waiting for it (said once in the log).
    public init(bus: DBusBus = .system, options: Options = Options(), log: @escaping @Sendable (String) -> Void = { _ in })
        throws(BLETransportError)
    {
        self.options = options
        self.log = log
        self.bus = bus
        backoff = RetryBackoff(first: options.firstRetry.saturatingNanoseconds, last: options.lastRetry.saturatingNanoseconds)
        guard HCIAdapterName.index(options.adapter) != nil, let path = try? DBusObjectPath("/org/bluez/" + options.adapter) else {
            throw .failed("Bluetooth adapter name \"\(options.adapter)\" is not of the form hci0, hci1, …")
        }
        adapterPath = path
        let connection: DBusConnection
        do {
            connection = try DBusConnection(bus, description: "bluez")
        } catch {
            throw .unavailable("the system bus cannot be reached (\(error)), so bluetoothd cannot be asked for wearables")
        }
        current = Mutex(connection)
        let installed = DispatchSemaphore(value: 0)
        queue.sync { subscribe(on: connection) { installed.signal() } }
        guard installed.wait(timeout: .now() + options.startTimeout.seconds) == .success else {
            connection.close()
            throw .unavailable("the system bus did not answer within \(options.startTimeout)")
        }
        let loaded = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<DBusManagedObjects, DBusError>?>(nil)
        connection.managedObjects(
            destination: BlueZName.service, path: DBusObjectPath.root, timeout: options.startTimeout, queue: queue
        ) {
            [weak self] result in
            self?.load(result)
            outcome.withLock { $0 = result }
            loaded.signal()
        }
        _ = loaded.wait(timeout: .now() + options.startTimeout.seconds + 1)
        switch outcome.withLock({ $0 }) {
        case .success?:
            break  // load() said whether the adapter is there; InterfacesAdded brings it later.
        case .failure(let error)? where BlueZRefusal.classify(error) == .serviceGone:
            break  // load() said so; NameOwnerChanged brings it.
        case .failure(let error)?:
            connection.close()
            throw .unavailable("bluetoothd did not answer GetManagedObjects: \(error)")
        case nil:
            connection.close()
            throw .unavailable("bluetoothd did not answer within \(options.startTimeout)")
        }
        // Armed only while discovery runs or a link connects (`tickWhileNeeded`): a recording
        // wearable's link wakes nobody once a second.
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .distantFuture)
        timer.setEventHandler { [weak self] in self?.tick() }
        timer.resume()
        queue.sync { self.timer = timer }
    }

    // Not close(): the last reference can go inside one of our own blocks on `queue` (a signal
    // handler's temporary), where close()'s queue.sync would deadlock. The bus connection closes
    // itself when it goes; links keep the transport alive until they end.
    deinit { timer?.cancel() }

    /// Ends every link (no events), stops discovery we started, unregisters the agent, closes the
    /// bus connection. Call it before dropping the transport (never from a link's event handler
    /// running on the transport's own queue — events come on the link's queue, so that is fine).
    public func close() {
        let (open, subscriptions) = queue.sync {
            closed = true
            timer?.cancel()
            timer = nil
            let open = Array(links.values)
            links = [:]
            defer { self.subscriptions = [] }
            if discoveryRequested { stopDiscovery() }
            return (open, self.subscriptions)
        }
        for link in open { link.close() }
        for subscription in subscriptions { subscription.cancel() }
        queue.sync {
            if agentExport != nil {
                connection.call(
                    destination: BlueZName.service, path: BlueZAgent.managerPath, interface: BlueZName.agentManager,
                    member: "UnregisterAgent", arguments: [.objectPath(BlueZAgent.path)], timeout: .seconds(1), queue: queue
                ) { _ in }
            }
            agentExport?.cancel()
            agentExport = nil
        }
        // Let the queued StopDiscovery / Disconnect reach the broker before the connection ends.
        let flushed = DispatchSemaphore(value: 0)
        connection.nameHasOwner(BlueZName.service, timeout: .seconds(1), queue: DispatchQueue(label: "ble.bluez.close")) { _ in
            flushed.signal()
        }
        _ = flushed.wait(timeout: .now() + 2)
        connection.close()
    }

    /// The devices bluetoothd reports on our adapter as in range or connected, as scan reports;
    /// starts discovery when it is not running. Never blocks for more than a queue hop.
    public func scan() throws(BLETransportError) -> [BLEScanReport] {
        let result: Result<[BLEScanReport], BLETransportError> = queue.sync {
            guard bluezPresent else {
                return .failure(
                    .unavailable("bluetoothd is not on the system bus (not started yet, stopped or restarting); scans retry"))
            }
            guard adapterIsExported else {
                return .failure(
                    .unavailable(
                        "bluetoothd does not export \(options.adapter) yet (it adds an adapter once the kernel reports its controller)"
                    ))
            }
            lastScan = .now
            if !discoveryRequested { startDiscovery() }
            return .success(tree.reachable(on: adapterPath).map(\.scanReport))
        }
        return try result.get()
    }

    /// Problems found in what bluetoothd sent (hostile or malformed properties), oldest first, bounded.
    public var problems: [String] { reported.withLock { $0 } }

    /// Addresses of wearables this transport paired through bluetoothd (with its `NoInputNoOutput`
    /// agent) because they wanted bonding, for `sensorkitctl devices`.
    public var pairedWearables: [String] { paired.withLock { $0 } }

    public func status(of address: String) -> [String: String] {
        pairedWearables.contains { $0.uppercased() == address.uppercased() }
            ? ["pairing": "paired by sensorkitd through bluetoothd (agent \(BlueZAgent.capability))"] : [:]
    }

    func notePaired(_ address: String) {
        paired.withLock { list in if !list.contains(address), list.count < 64 { list.append(address) } }
        log("bluez: \(address) wanted bonding and was paired through bluetoothd (agent \(BlueZAgent.capability))")
    }

    /// Opens a link to a device `scan` reported: through bluetoothd's connection when it is
    /// already connected (a wearable the user paired), else `Device1.Connect`. Returns at once;
    /// the link reports `.ready` once services are resolved, or `.linkLost`.
    public func connect(
        _ report: BLEScanReport, queue linkQueue: DispatchQueue, onEvent: @escaping @Sendable (GATTLinkEvent) -> Void
    )
        throws(BLETransportError) -> any GATTLink
    {
        let result: Result<BlueZGATTLink, BLETransportError> = queue.sync {
            guard bluezPresent else { return .failure(.busy("bluetoothd is not on the system bus")) }
            let device =
                (try? DBusObjectPath(report.endpoint)).flatMap { tree.device(at: $0) } ?? tree.device(address: report.address)
            guard let device, device.adapter == adapterPath else {
                return .failure(.failed("bluetoothd no longer knows \(report.address)"))
            }
            if let old = links[device.path] { old.end(nil) }
            let link = BlueZGATTLink(transport: self, device: device, queue: linkQueue, onEvent: onEvent)
            links[device.path] = link
            link.start(device)
            tickWhileNeeded()
            return .success(link)
        }
        return try result.get()
    }

    // MARK: - On `queue`

    var tree: BlueZObjectTree {
        dispatchPrecondition(condition: .onQueue(queue))
        if let treeCache { return treeCache }
        let tree = BlueZObjectTree(objects)
        treeCache = tree
        for problem in tree.problems { report(problem) }
        return tree
    }

    func forget(_ link: BlueZGATTLink) {
        dispatchPrecondition(condition: .onQueue(queue))
        if links[link.devicePath] === link { links[link.devicePath] = nil }
    }

    func report(_ problem: String) {
        let new = reported.withLock { list -> Bool in
            guard !list.contains(problem) else { return false }
            if list.count >= 64 { list.removeFirst() }
            list.append(problem)
            return true
        }
        if new { log("bluez: \(problem)") }
    }

    private func load(_ result: Result<DBusManagedObjects, DBusError>) {
        dispatchPrecondition(condition: .onQueue(queue))
        switch result {
        case .success(let loaded):
            objects = loaded
            treeCache = nil
            bluezPresent = true
            discoveryRequested = false
            if absence != nil { log("bluez: bluetoothd is on the system bus; wearables are looked for through it") }
            absence = nil
            registerAgent()
            noteAdapter()
        case .failure(let error) where BlueZRefusal.classify(error) == .serviceGone:
            sayAbsent("bluetoothd is not running (org.bluez is not on the system bus)")
        case .failure(let error):
            log("bluez: GetManagedObjects failed: \(error)")
        }
    }

    /// Exports the pairing agent (once per connection) and registers it with bluetoothd (again
    /// after every bluetoothd start). Without an agent manager, pairing is not offered.
    private func registerAgent() {
        dispatchPrecondition(condition: .onQueue(queue))
        if agentExport == nil {
            let agent = self.agent
            agentExport = connection.export(BlueZAgent.path, interface: BlueZAgent.interface, queue: queue) { call, reply in
                reply(agent.answer(call))
            }
        }
        connection.call(
            destination: BlueZName.service, path: BlueZAgent.managerPath, interface: BlueZName.agentManager,
            member: "RegisterAgent", arguments: [.objectPath(BlueZAgent.path), .string(BlueZAgent.capability)],
            timeout: options.callTimeout, queue: queue
        ) { [weak self] result in
            if case .failure(let error) = result, error.name != "org.bluez.Error.AlreadyExists" {
                self?.report(
                    "the pairing agent could not be registered (\(error)); wearables that want bonding must be paired with bluetoothctl"
                )
            }
        }
    }

    private func tick() {
        dispatchPrecondition(condition: .onQueue(queue))
        if discoveryRequested, let lastScan, ContinuousClock.now - lastScan > options.discoveryLinger {
            stopDiscovery()
        }
        for link in links.values { link.tick() }
        if ticking, !discoveryRequested, !links.values.contains(where: \.waitsForADeadline) {
            ticking = false
            timer?.schedule(deadline: .distantFuture)
        }
    }

    /// Ticks once a second from now on until nothing waits for a deadline (discovery to stop,
    /// a link to connect): called where either begins.
    private func tickWhileNeeded() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !ticking, !closed else { return }
        ticking = true
        timer?.schedule(deadline: .now() + 1, repeating: 1)
    }

    private func startDiscovery() {
        dispatchPrecondition(condition: .onQueue(queue))
        discoveryRequested = true
        tickWhileNeeded()
        var filter: [DBusDictionaryEntry] = [DBusDictionaryEntry(.string("Transport"), .variant(.string("le")))]
        if !options.serviceUUIDs.isEmpty {
            filter.append(
                DBusDictionaryEntry(
                    .string("UUIDs"), .variant(.array(.string, options.serviceUUIDs.map { .string(BlueZUUID.text($0)) }))))
        }
        adapterCall("SetDiscoveryFilter", [.dictionary(key: .string, value: .variant, filter)])
        adapterCall("StartDiscovery", [])
    }

    private func stopDiscovery() {
        dispatchPrecondition(condition: .onQueue(queue))
        discoveryRequested = false
        lastScan = nil
        adapterCall("StopDiscovery", [])
    }

    private func adapterCall(_ member: String, _ arguments: [DBusValue]) {
        connection.call(
            destination: BlueZName.service, path: adapterPath, interface: BlueZName.adapter, member: member,
            arguments: arguments, timeout: options.callTimeout, queue: queue
        ) { [weak self] result in
            // InProgress: discovery already runs (another client's, or ours); NotReady: powered off.
            if case .failure(let error) = result, error.name != "org.bluez.Error.InProgress" {
                self?.report("\(member) on \(self?.options.adapter ?? "") failed: \(error)")
            }
        }
    }

    /// Subscribes `connection` to bluetoothd's signals; `installed` runs on `queue` once the
    /// broker answered every match rule.
    private func subscribe(on connection: DBusConnection, installed: @escaping @Sendable () -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        let matches = [
            DBusNameOwnerChanged.match(name: BlueZName.service), DBusInterfacesAdded.match(sender: BlueZName.service),
            DBusInterfacesRemoved.match(sender: BlueZName.service), DBusPropertiesChanged.match(sender: BlueZName.service),
        ]
        let pending = MatchesPending(matches.count)
        for match in matches {
            subscriptions.append(
                connection.subscribe(
                    match, queue: queue,
                    installed: { _ in if pending.answered() { installed() } },
                    handler: { [weak self, weak connection] event in
                        // Events of a connection already replaced (its `.ended` comes once per match) are stale.
                        guard let self, let connection, connection === self.connection else { return }
                        self.handle(event)
                    }))
        }
    }

    private func connectionEnded() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !closed, !reconnecting else { return }
        bluezGone("the system bus connection ended")
        subscriptions = []
        // The agent's export ended with its connection; the next load exports it again.
        agentExport = nil
        reconnectLater(because: "the system bus connection ended")
    }

    private func reconnectLater(because reason: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        reconnecting = true
        let (wait, worthSaying) = backoff.failed(because: reason)
        if worthSaying { log("bluez: \(reason); the bus is opened again, at most every \(options.lastRetry)") }
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: wait))) { [weak self] in self?.reconnect() }
    }

    private func reconnect() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !closed else { return }
        let opened: DBusConnection
        do {
            opened = try DBusConnection(bus, description: "bluez")
        } catch {
            reconnectLater(because: "the system bus cannot be reached (\(error))")
            return
        }
        current.withLock { $0 = opened }
        reconnecting = false
        if backoff.succeeded() { log("bluez: the system bus is reachable again") }
        subscribe(on: opened) { [weak self] in self?.reload() }
    }

    private func handle(_ event: DBusSignalEvent) {
        dispatchPrecondition(condition: .onQueue(queue))
        switch event {
        case .signal(let message):
            do throws(DBusError) {
                try handle(message)
            } catch {
                report("a signal from bluetoothd was refused: \(error)")
            }
        case .lost(let count):
            // Signals were dropped: the mirror may be stale, read it again.
            report("\(count) signals from bluetoothd were lost; its objects are read again")
            reload()
        case .ended:
            connectionEnded()
        }
    }

    private func handle(_ message: DBusMessage) throws(DBusError) {
        switch (message.interface, message.member) {
        case (DBusStandard.bus, "NameOwnerChanged"):
            let change = try DBusNameOwnerChanged(message)
            guard change.name == BlueZName.service else { return }
            if change.newOwner == nil {
                bluezGone("bluetoothd left the system bus")
            } else {
                if bluezPresent { bluezGone("bluetoothd restarted") }
                reload()
            }
        case (DBusStandard.objectManager, "InterfacesAdded"):
            let added = try DBusInterfacesAdded(message)
            guard objects[added.object] != nil || objects.count < BlueZObjectTree.maximumObjects else {
                report("bluetoothd exports more than \(BlueZObjectTree.maximumObjects) objects; \(added.object) is ignored")
                return
            }
            objects[added.object, default: [:]].merge(added.interfaces) { _, new in new }
            treeCache = nil
            if added.object == adapterPath { noteAdapter() }
        case (DBusStandard.objectManager, "InterfacesRemoved"):
            let removed = try DBusInterfacesRemoved(message)
            for interface in removed.interfaces { objects[removed.object]?[interface] = nil }
            if objects[removed.object]?.isEmpty == true { objects[removed.object] = nil }
            treeCache = nil
            if removed.object == adapterPath { noteAdapter() }
            if removed.interfaces.contains(BlueZName.device), let link = links[removed.object] {
                link.end("bluetoothd removed the device")
            }
        case (DBusStandard.properties, "PropertiesChanged"):
            let change = try DBusPropertiesChanged(message)
            guard let path = change.path ?? message.path else { return }
            var changed = change.changed
            // A notification's value is routed to its link, never kept in the mirror.
            if change.interface == BlueZName.gattCharacteristic, let value = changed.removeValue(forKey: "Value") {
                notify(path, value)
            }
            guard objects[path]?[change.interface] != nil else { return }
            objects[path]?[change.interface]?.merge(changed) { _, new in new }
            for name in change.invalidated { objects[path]?[change.interface]?[name] = nil }
            treeCache = nil
            if change.interface == BlueZName.device || change.interface == BlueZName.battery, let link = links[path] {
                link.deviceChanged(tree.device(at: path), changed: Set(changed.keys), interface: change.interface)
            }
        default:
            break
        }
    }

    private func notify(_ characteristic: DBusObjectPath, _ value: DBusValue) {
        guard let link = links.values.first(where: { $0.isNotifying(characteristic) }) else { return }
        guard case .array(.byte, let bytes) = value, bytes.count <= GATTClient.maximumValueLength else {
            report("\(characteristic): a Value that is not a byte array of at most \(GATTClient.maximumValueLength) bytes")
            return
        }
        link.notified(characteristic, bytes.compactMap { if case .byte(let byte) = $0 { byte } else { nil } })
    }

    private func reload() {
        connection.managedObjects(destination: BlueZName.service, path: .root, timeout: options.callTimeout, queue: queue) {
            [weak self] result in self?.load(result)
        }
    }

    private var adapterIsExported: Bool {
        dispatchPrecondition(condition: .onQueue(queue))
        return objects[adapterPath]?[BlueZName.adapter] != nil
    }

    /// Says when our adapter appears or goes (once per change). A discovery requested before
    /// belonged to no adapter, or to the one that went: the next scan starts it again.
    private func noteAdapter() {
        dispatchPrecondition(condition: .onQueue(queue))
        let exported = adapterIsExported
        guard exported != adapterExported else { return }
        let before = adapterExported
        adapterExported = exported
        discoveryRequested = false
        lastScan = nil
        if exported {
            if before == false { log("bluez: bluetoothd exports \(options.adapter) now; wearables are looked for through it") }
        } else {
            log(
                "bluez: bluetoothd does not export \(options.adapter) (yet: it adds an adapter once the kernel reports its controller; `bluetoothctl list` shows the ones it has); wearables wait until it does"
            )
        }
    }

    private func sayAbsent(_ why: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard absence != why else { return }
        absence = why
        log("bluez: \(why); wearables wait until it is on the system bus (start bluetooth.service)")
    }

    private func bluezGone(_ why: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        sayAbsent(why)
        bluezPresent = false
        adapterExported = nil
        discoveryRequested = false
        objects = [:]
        treeCache = nil
        for link in links.values { link.end(why) }
        links = [:]
    }
}

/// Match rules the broker has not answered yet.
private final class MatchesPending: Sendable {
    private let left: Mutex<Int>
    init(_ count: Int) { left = Mutex(count) }
    /// One more answered; true for the last.
    func answered() -> Bool {
        left.withLock { count in
            count -= 1
            return count == 0
        }
    }
}

extension DBusObjectPath {
    static let root = try! DBusObjectPath("/")
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// `hciN` → N (0…65534).
enum HCIAdapterName {
    static func index(_ name: String) -> Int32? { HCITransport.adapterIndex(name) }
}
