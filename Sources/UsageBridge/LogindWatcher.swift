import Dispatch
import SensorKitModel
import SensorSystem
import Synchronization
import SystemBus

/// logind's view of seat0 over the system bus (`SystemBus`): which session is active and whose,
/// whether it is locked (`LockedHint`, and the `Lock`/`Unlock` requests) and idle (`IdleHint`:
/// its end is a screen wake where no compositor tells). What it sees becomes `UsageEvent`s;
/// `activeUser` answers the session agent's trust check (docs/device-usage.md, "Trust").
public final class LogindWatcher: @unchecked Sendable {
    // @unchecked: the vars are touched only on `queue`; `active` is a Mutex.
    public static let service = "org.freedesktop.login1"
    public static let seatInterface = "org.freedesktop.login1.Seat"
    public static let sessionInterface = "org.freedesktop.login1.Session"
    static let seatPath = try! DBusObjectPath("/org/freedesktop/login1/seat/seat0")

    public let queue = DispatchQueue(label: "sensorkitd.logind")
    private let clock: any SystemClock
    private let journal: Journal
    private let onEvent: @Sendable (UsageEvent) -> Void
    private let active = Mutex<ActiveSession?>(nil)
    private var connection: DBusConnection?
    private var seatSubscription: DBusSubscription?
    private var sessionSubscriptions: [DBusSubscription] = []
    private var sessionPath: DBusObjectPath?

    /// seat0's active session as logind last said.
    public struct ActiveSession: Sendable, Equatable {
        public let path: DBusObjectPath
        public let uid: UInt32
        public let remote: Bool
    }

    public init(clock: any SystemClock, journal: Journal, onEvent: @escaping @Sendable (UsageEvent) -> Void) {
        self.clock = clock
        self.journal = journal
        self.onEvent = onEvent
    }

    /// The uid of seat0's active local session, or nil (no seat, no session, logind not answering).
    public var activeUser: UInt32? { active.withLock { $0.flatMap { $0.remote ? nil : $0.uid } } }

    /// Connects and follows seat0; throws when the system bus cannot be reached.
    public func start(bus: DBusBus = .system) throws(DBusError) {
        let connection = try DBusConnection(bus, description: "logind", queue: queue) { [weak self] error in
            self?.lost("\(error)")
        }
        queue.sync {
            self.connection = connection
            seatSubscription = connection.subscribe(
                DBusPropertiesChanged.match(sender: Self.service, path: Self.seatPath, interface: Self.seatInterface),
                queue: queue
            ) { [weak self] event in
                guard case .signal = event else { return }
                self?.readSeat()
            }
            readSeat()
        }
    }

    public func stop() {
        let connection: DBusConnection? = queue.sync {
            seatSubscription?.cancel()
            for subscription in sessionSubscriptions { subscription.cancel() }
            sessionSubscriptions = []
            defer { self.connection = nil }
            return self.connection
        }
        connection?.close()
        active.withLock { $0 = nil }
        emitWatching(false)
    }

    private func readSeat() {
        dispatchPrecondition(condition: .onQueue(queue))
        connection?.property(
            destination: Self.service, path: Self.seatPath, interface: Self.seatInterface, name: "ActiveSession",
            timeout: .seconds(5), queue: queue
        ) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let value):
                guard case .structure(let fields) = value, fields.count == 2, case .objectPath(let path) = fields[1],
                    path.rawValue != "/"
                else {
                    follow(nil)
                    return
                }
                follow(path)
            case .failure(let error):
                journal.warning("logind: seat0's active session cannot be read (\(error))")
                follow(nil)
            }
        }
    }

    private func follow(_ path: DBusObjectPath?) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard path != sessionPath else { return }
        for subscription in sessionSubscriptions { subscription.cancel() }
        sessionSubscriptions = []
        sessionPath = path
        active.withLock { $0 = nil }
        guard let path, let connection else {
            emitWatching(false)
            return
        }
        sessionSubscriptions.append(
            connection.subscribe(
                DBusPropertiesChanged.match(sender: Self.service, path: path, interface: Self.sessionInterface), queue: queue
            ) { [weak self] event in
                guard case .signal(let message) = event, let changed = try? DBusPropertiesChanged(message) else { return }
                self?.changed(changed.changed, on: path)
            })
        for (member, locked) in [("Lock", true), ("Unlock", false)] {
            sessionSubscriptions.append(
                connection.subscribe(
                    DBusMatch(sender: Self.service, path: path, interface: Self.sessionInterface, member: member), queue: queue
                ) { [weak self] event in
                    guard case .signal = event, let self, sessionPath == path else { return }
                    onEvent(.locked(locked, at: clock.boottimeNanoseconds(), from: .logindLockSignal))
                })
        }
        connection.properties(
            destination: Self.service, path: path, interface: Self.sessionInterface, timeout: .seconds(5), queue: queue
        ) { [weak self] result in
            guard let self, sessionPath == path else { return }
            guard case .success(let properties) = result else {
                journal.warning("logind: session \(path) cannot be read")
                return
            }
            let uid: UInt32? =
                if case .structure(let user)? = properties["User"], user.count == 2, case .uint32(let uid) = user[0] {
                    uid
                } else { nil }
            let remote = (try? properties["Remote"]?.as(Bool.self)) ?? false
            if let uid { active.withLock { $0 = ActiveSession(path: path, uid: uid, remote: remote) } }
            journal.info("logind: seat0's active session is \(path)\(uid.map { " of uid \($0)" } ?? "")")
            emitWatching(true)
            changed(properties, on: path)
        }
    }

    private func changed(_ properties: DBusProperties, on path: DBusObjectPath) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard path == sessionPath else { return }
        for event in Self.events(properties, at: clock.boottimeNanoseconds()) { onEvent(event) }
    }

    /// What a session's (changed) properties say: `LockedHint` is the lock state, `IdleHint`
    /// the screen (idle: off). Values of the wrong type are ignored.
    public static func events(_ properties: DBusProperties, at now: Int64) -> [UsageEvent] {
        var events: [UsageEvent] = []
        if let locked = try? properties["LockedHint"]?.as(Bool.self) {
            events.append(.locked(locked, at: now, from: .logindLockedHint))
        }
        if let idle = try? properties["IdleHint"]?.as(Bool.self) {
            events.append(.screen(on: !idle, at: now, from: .logindIdleHint))
        }
        return events
    }

    private func emitWatching(_ on: Bool) {
        let now = clock.boottimeNanoseconds()
        onEvent(.watching(.logindLockedHint, on, at: now))
        onEvent(.watching(.logindIdleHint, on, at: now))
    }

    private func lost(_ why: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        journal.warning("logind: the system bus connection was lost (\(why)); device usage counts no locks until restart")
        sessionSubscriptions = []
        sessionPath = nil
        connection = nil
        active.withLock { $0 = nil }
        emitWatching(false)
    }
}
