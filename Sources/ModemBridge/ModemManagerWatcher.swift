import Dispatch
import SensorKitModel
import SensorSystem
import SystemBus

/// Follows ModemManager on the system bus through `SystemBus`: its name owner (a restart ends
/// every call it had and starts over), its modems through the ObjectManager, and on each modem
/// the calls (`Voice.ListCalls`, `CallAdded`, `CallDeleted`, each `Call`'s `StateChanged`) and
/// the SMS (`Messaging.List`, `Added`, `Deleted`, each `Sms`'s `State` changes). Everything runs
/// on `queue`, which it shares with its owner; observations go to `observe` there.
///
/// What the bus says is hostile: tracked modems, calls and messages are bounded, a reply of a
/// ModemManager that has since left is dropped, and properties of the wrong type read as unknown.
public final class ModemManagerWatcher: @unchecked Sendable {
    // @unchecked: every field but the constants is touched only on `queue`.

    /// What the watcher reports.
    public enum Observation: Sendable {
        /// Whether some modem with voice or messaging can be observed now.
        case observable(Bool)
        /// A call first read (`fresh`: announced by `CallAdded`, not found by a listing).
        case call(String, CallProperties, fresh: Bool)
        case callState(String, CallState)
        case callGone(String)
        /// A message completed while watched; `number` is to be hashed at once.
        case message(MessageDirection, number: String)
    }

    public static let maximumModems = 16
    public static let maximumCalls = 64
    public static let maximumMessages = 4096
    /// How long a call to ModemManager may take.
    public static let callTimeout = Duration.seconds(10)
    /// Waits before connecting again while the bus cannot be reached or after it was lost: 1 s,
    /// doubling up to a minute.
    public static let firstRetry: Int64 = 1_000_000_000
    public static let lastRetry: Int64 = 60_000_000_000

    public let queue: DispatchQueue
    private let bus: DBusBus
    private let scheduler: any Scheduler
    /// The waits between connects, and the last failure said (once, not at every retry).
    private var backoff = RetryBackoff(first: ModemManagerWatcher.firstRetry, last: ModemManagerWatcher.lastRetry)
    private var retryTimer: (any ScheduledTimer)?
    private let observe: @Sendable (Observation) -> Void
    private let log: @Sendable (LogMessage) -> Void
    private var connection: DBusConnection?
    private var subscriptions: [DBusSubscription] = []
    /// Modem paths with voice or messaging.
    private var modems: Set<String> = []
    /// Call path → whether its properties were read (state changes before that are in the read).
    private var calls: [String: Bool] = [:]
    /// SMS path → whether it was counted or found already complete.
    private var messages: [String: Bool] = [:]
    /// Bumped whenever ModemManager leaves or the connection ends: older replies are dropped.
    private var generation = 0
    private var running = false
    private var reportedObservable = false

    public init(
        bus: DBusBus, queue: DispatchQueue, scheduler: any Scheduler = DispatchScheduler(),
        log: @escaping @Sendable (LogMessage) -> Void, observe: @escaping @Sendable (Observation) -> Void
    ) {
        self.bus = bus
        self.scheduler = scheduler
        self.queue = queue
        self.log = log
        self.observe = observe
    }

    /// Connects and subscribes, then reads ModemManager's state if it is on the bus. On `queue`.
    public func start() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !running else { return }
        running = true
        connect()
    }

    /// Ends every call it followed (observations), unsubscribes and closes. On `queue`.
    public func stop() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard running else { return }
        running = false
        retryTimer?.cancel()
        retryTimer = nil
        forgetModemManager()
        for subscription in subscriptions { subscription.cancel() }
        subscriptions = []
        // The connection's own thread ends it; closing waits for no queue.
        connection?.close()
        connection = nil
    }

    private func connect() {
        dispatchPrecondition(condition: .onQueue(queue))
        retryTimer = nil
        guard running, connection == nil else { return }
        let opened: DBusConnection
        do {
            opened = try DBusConnection(
                bus, description: "modemmanager", queue: queue,
                onLost: { [weak self] error in self?.lost(error) })
        } catch {
            retryLater(because: "\(error)") { "modem: the system bus cannot be reached (\($0)); retrying, at most every minute" }
            return
        }
        if backoff.succeeded() { log("modem: connected to the system bus again") }
        connection = opened
        let service = ModemManagerInterface.service
        let matches = [
            DBusNameOwnerChanged.match(name: service), DBusInterfacesAdded.match(sender: service),
            DBusInterfacesRemoved.match(sender: service),
            DBusMatch(sender: service, interface: ModemManagerInterface.voice),
            DBusMatch(sender: service, interface: ModemManagerInterface.messaging),
            DBusMatch(sender: service, interface: ModemManagerInterface.call, member: "StateChanged"),
            DBusPropertiesChanged.match(sender: service, interface: ModemManagerInterface.sms),
        ]
        let pending = Counter(matches.count)
        for match in matches {
            subscriptions.append(
                opened.subscribe(
                    match, queue: queue,
                    installed: { [weak self] refusal in
                        if let refusal { self?.log("modem: the bus refused a match (\(refusal))") }
                        // Read the state only once every match is in: nothing that changes after is missed.
                        if pending.done() { self?.probe() }
                    },
                    handler: { [weak self] event in self?.handle(event) }))
        }
    }

    /// Connects again after the backoff's wait; `line` is logged when `reason` is new.
    private func retryLater(because reason: String, _ line: (String) -> LogMessage) {
        let (wait, worthSaying) = backoff.failed(because: reason)
        if worthSaying { log(line(reason)) }
        retryTimer = scheduler.schedule(on: queue, after: wait, repeating: nil) { [weak self] in self?.connect() }
    }

    private func lost(_ error: DBusError) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard running else { return }
        forgetModemManager()
        subscriptions = []
        connection = nil
        retryLater(because: "\(error)") {
            "modem: the system bus connection was lost (\($0)); reconnecting, at most every minute"
        }
    }

    private func probe() {
        guard let connection else { return }
        let generation = generation
        connection.nameHasOwner(ModemManagerInterface.service, timeout: Self.callTimeout, queue: queue) { [weak self] result in
            guard let self, self.generation == generation else { return }
            if case .success(true) = result { self.synchronize() } else { self.updateObservable() }
        }
    }

    // MARK: Reading ModemManager's state

    private func synchronize() {
        guard let connection else { return }
        let generation = generation
        connection.managedObjects(
            destination: ModemManagerInterface.service, path: ModemManagerInterface.root, timeout: Self.callTimeout,
            queue: queue
        ) { [weak self] result in
            guard let self, self.generation == generation else { return }
            switch result {
            case .success(let objects):
                for (path, interfaces) in objects.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                    self.modemAppeared(path, interfaces: Set(interfaces.keys))
                }
            case .failure(let error):
                self.log("modem: ModemManager did not list its modems (\(error))")
            }
            self.updateObservable()
        }
    }

    private func modemAppeared(_ path: DBusObjectPath, interfaces: Set<String>) {
        let hasVoice = interfaces.contains(ModemManagerInterface.voice)
        let hasMessaging = interfaces.contains(ModemManagerInterface.messaging)
        guard hasVoice || hasMessaging else { return }
        guard modems.contains(path.rawValue) || modems.count < Self.maximumModems else { return }
        if modems.insert(path.rawValue).inserted {
            log("modem: \(path.rawValue) (voice: \(hasVoice), messaging: \(hasMessaging))")
        }
        if hasVoice { list(path, interface: ModemManagerInterface.voice, member: "ListCalls") { $0.readCall($1, fresh: false) } }
        if hasMessaging {
            list(path, interface: ModemManagerInterface.messaging, member: "List") { $0.readMessage($1, fresh: false) }
        }
    }

    private func list(
        _ modem: DBusObjectPath, interface: String, member: String,
        each: @escaping @Sendable (ModemManagerWatcher, DBusObjectPath) -> Void
    ) {
        guard let connection else { return }
        let generation = generation
        connection.call(
            destination: ModemManagerInterface.service, path: modem, interface: interface, member: member,
            timeout: Self.callTimeout, queue: queue
        ) { [weak self] result in
            guard let self, self.generation == generation, self.modems.contains(modem.rawValue) else { return }
            do throws(DBusError) {
                let paths = try expectArguments(try result.get(), "ao")[0].as([DBusObjectPath].self)
                for path in paths { each(self, path) }
            } catch {
                self.log("modem: \(member) on \(modem.rawValue) failed (\(error))")
            }
        }
    }

    private func readCall(_ path: DBusObjectPath, fresh: Bool) {
        guard calls[path.rawValue] == nil, calls.count < Self.maximumCalls else { return }
        calls[path.rawValue] = false
        read(path, interface: ModemManagerInterface.call) { watcher, properties in
            guard watcher.calls[path.rawValue] == false else { return }
            watcher.calls[path.rawValue] = true
            watcher.observe(.call(path.rawValue, CallProperties(properties), fresh: fresh))
        }
    }

    private func readMessage(_ path: DBusObjectPath, fresh: Bool) {
        let known = messages[path.rawValue]
        guard known != true, known != nil || messages.count < Self.maximumMessages else { return }
        messages[path.rawValue] = false
        read(path, interface: ModemManagerInterface.sms) { watcher, properties in
            guard watcher.messages[path.rawValue] == false else { return }
            let sms = SmsProperties(properties)
            guard let direction = sms.completed else { return }
            watcher.messages[path.rawValue] = true
            // A message complete when first listed was complete before we watched: not this interval's.
            if fresh { watcher.observe(.message(direction, number: sms.number)) }
        }
    }

    private func read(
        _ path: DBusObjectPath, interface: String, then: @escaping @Sendable (ModemManagerWatcher, DBusProperties) -> Void
    ) {
        guard let connection else { return }
        let generation = generation
        connection.properties(
            destination: ModemManagerInterface.service, path: path, interface: interface, timeout: Self.callTimeout,
            queue: queue
        ) { [weak self] result in
            guard let self, self.generation == generation else { return }
            switch result {
            case .success(let properties): then(self, properties)
            case .failure(let error): self.log("modem: reading \(path.rawValue) failed (\(error))")
            }
        }
    }

    // MARK: Signals

    private func handle(_ event: DBusSignalEvent) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard running else { return }
        switch event {
        case .ended:
            return  // `lost` follows
        case .lost(let count):
            log("modem: \(count) signal(s) from ModemManager were dropped; reading its state again")
            synchronize()
        case .signal(let message):
            do throws(DBusError) {
                try handle(message)
            } catch {
                log("modem: a malformed \(message.member ?? "signal") from ModemManager was ignored (\(error))")
            }
        }
    }

    private func handle(_ message: DBusMessage) throws(DBusError) {
        switch (message.interface, message.member) {
        case (DBusStandard.bus, "NameOwnerChanged"):
            let change = try DBusNameOwnerChanged(message)
            guard change.name == ModemManagerInterface.service else { return }
            if change.oldOwner != nil {
                log("modem: ModemManager left the bus")
                forgetModemManager()
            }
            if change.newOwner != nil {
                log("modem: ModemManager is on the bus")
                synchronize()
            }
        case (DBusStandard.objectManager, "InterfacesAdded"):
            let added = try DBusInterfacesAdded(message)
            modemAppeared(added.object, interfaces: Set(added.interfaces.keys))
            updateObservable()
        case (DBusStandard.objectManager, "InterfacesRemoved"):
            let removed = try DBusInterfacesRemoved(message)
            guard removed.interfaces.contains(ModemManagerInterface.modem), modems.remove(removed.object.rawValue) != nil
            else { return }
            log("modem: \(removed.object.rawValue) removed")
            // ModemManager numbers calls and SMS globally, not per modem: the modem's calls end
            // with their own CallDeleted, or when no modem is left.
            if modems.isEmpty { endCalls() }
            updateObservable()
        case (ModemManagerInterface.voice, "CallAdded"):
            guard let modem = message.path, modems.contains(modem.rawValue) else { return }
            readCall(try expectArguments(message.arguments, "o")[0].as(DBusObjectPath.self), fresh: true)
        case (ModemManagerInterface.voice, "CallDeleted"):
            let path = try expectArguments(message.arguments, "o")[0].as(DBusObjectPath.self)
            if calls.removeValue(forKey: path.rawValue) == true { observe(.callGone(path.rawValue)) }
        case (ModemManagerInterface.call, "StateChanged"):
            let arguments = try expectArguments(message.arguments, "iiu")
            guard let path = message.path, calls[path.rawValue] == true else { return }
            observe(.callState(path.rawValue, CallState(dbus: try arguments[1].as(Int32.self))))
        case (ModemManagerInterface.messaging, "Added"):
            guard let modem = message.path, modems.contains(modem.rawValue) else { return }
            readMessage(try expectArguments(message.arguments, "ob")[0].as(DBusObjectPath.self), fresh: true)
        case (ModemManagerInterface.messaging, "Deleted"):
            messages.removeValue(forKey: try expectArguments(message.arguments, "o")[0].as(DBusObjectPath.self).rawValue)
        case (DBusStandard.properties, "PropertiesChanged"):
            let change = try DBusPropertiesChanged(message)
            guard change.interface == ModemManagerInterface.sms, let path = change.path, messages[path.rawValue] == false,
                change.changed["State"] != nil
            else { return }
            // Read it whole: the number and PDU type were not in the change.
            messages.removeValue(forKey: path.rawValue)
            readMessage(path, fresh: true)
        default:
            return
        }
    }

    // MARK: State

    private func forgetModemManager() {
        generation &+= 1
        endCalls()
        modems = []
        messages = [:]
        updateObservable()
    }

    private func endCalls() {
        for (path, read) in calls.sorted(by: { $0.key < $1.key }) where read { observe(.callGone(path)) }
        calls = [:]
    }

    private func updateObservable() {
        let now = running && !modems.isEmpty
        guard now != reportedObservable else { return }
        reportedObservable = now
        observe(.observable(now))
    }
}

/// Counts the installed matches down; true once, for the last.
private final class Counter: @unchecked Sendable {
    // @unchecked: touched only on the watcher's queue (the `installed` callbacks run there).
    private var left: Int
    init(_ count: Int) { left = count }
    func done() -> Bool {
        left -= 1
        return left == 0
    }
}
