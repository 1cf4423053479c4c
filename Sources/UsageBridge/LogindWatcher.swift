import Dispatch
import SensorKitModel
import SensorSystem
import Synchronization
import SystemBus

/// logind's view of seat0 over the system bus (`SystemBus`): which session is active and whose,
/// whether it is locked (`LockedHint`, and the `Lock`/`Unlock` requests) and idle (`IdleHint`:
/// its end is a screen wake where no compositor tells). What it sees becomes `UsageEvent`s;
/// `activeUser` answers the session agent's trust check (docs/device-usage.md, "Trust").
/// A lost bus is connected again after 1 s, doubling up to 60 s; logind leaving the bus and
/// coming back (`NameOwnerChanged`) is followed on the same connection. While nothing is
/// watched, `watching` is off, so a stretch no other source observed the lock state in becomes a
/// deletion record.
public final class LogindWatcher: @unchecked Sendable {
    // @unchecked: the vars are touched only on `queue`; `active` is a Mutex.
    public static let firstRetry: Int64 = 1_000_000_000
    public static let lastRetry: Int64 = 60_000_000_000
    public static let service = "org.freedesktop.login1"
    public static let seatInterface = "org.freedesktop.login1.Seat"
    public static let sessionInterface = "org.freedesktop.login1.Session"
    static let seatPath = try! DBusObjectPath("/org/freedesktop/login1/seat/seat0")

    public let queue = DispatchQueue(label: "sensorkitd.logind")
    private let clock: any SystemClock
    private let scheduler: any Scheduler
    private let journal: Journal
    private let onEvent: @Sendable (UsageEvent) -> Void
    private let active = Mutex<ActiveSession?>(nil)
    private var bus: DBusBus?
    private var connection: DBusConnection?
    /// Counts connections, so that a lost one's late report cannot end its successor.
    private var generation = 0
    /// The waits between connects, and the last failure said (once, not at every retry).
    private var backoff = RetryBackoff(first: LogindWatcher.firstRetry, last: LogindWatcher.lastRetry)
    private var retryTimer: (any ScheduledTimer)?
    private var ownerSubscription: DBusSubscription?
    private var seatSubscription: DBusSubscription?
    private var sessionSubscriptions: [DBusSubscription] = []
    private var sessionPath: DBusObjectPath?

    /// seat0's active session as logind last said.
    public struct ActiveSession: Sendable, Equatable {
        public let path: DBusObjectPath
        public let uid: UInt32
        public let remote: Bool
    }

    public init(
        clock: any SystemClock, scheduler: any Scheduler = DispatchScheduler(), journal: Journal,
        onEvent: @escaping @Sendable (UsageEvent) -> Void
    ) {
        self.clock = clock
        self.scheduler = scheduler
        self.journal = journal
        self.onEvent = onEvent
    }

    /// The uid of seat0's active local session, or nil (no seat, no session, logind not answering).
    public var activeUser: UInt32? { active.withLock { $0.flatMap { $0.remote ? nil : $0.uid } } }

    /// Connects and follows seat0, now or — when the system bus cannot be reached — at the
    /// retries; returns false when this first attempt failed.
    @discardableResult
    public func start(bus: DBusBus = .system) -> Bool {
        queue.sync {
            self.bus = bus
            connect()
            return connection != nil
        }
    }

    private func connect() {
        dispatchPrecondition(condition: .onQueue(queue))
        retryTimer = nil
        guard let bus, connection == nil else { return }
        generation += 1
        let generation = generation
        let opened: DBusConnection
        do throws(DBusError) {
            opened = try DBusConnection(bus, description: "logind", queue: queue) { [weak self] error in
                guard let self, self.generation == generation else { return }
                lost("\(error)")
            }
        } catch {
            retryLater(because: "\(error)") {
                "logind: the system bus cannot be reached (\($0)); retrying, at most every minute"
            }
            return
        }
        if backoff.succeeded() { journal.info("logind: connected to the system bus again") }
        connection = opened
        ownerSubscription = opened.subscribe(DBusNameOwnerChanged.match(name: Self.service), queue: queue) {
            [weak self] event in
            guard case .signal(let message) = event, let change = try? DBusNameOwnerChanged(message),
                change.name == Self.service
            else { return }
            self?.ownerChanged(change)
        }
        seatSubscription = opened.subscribe(
            DBusPropertiesChanged.match(sender: Self.service, path: Self.seatPath, interface: Self.seatInterface),
            queue: queue
        ) { [weak self] event in
            guard case .signal = event else { return }
            self?.readSeat()
        }
        readSeat()
    }

    /// Connects again after the backoff's wait; `line` is logged when `reason` is new.
    private func retryLater(because reason: String, _ line: (String) -> LogMessage) {
        dispatchPrecondition(condition: .onQueue(queue))
        let (wait, worthSaying) = backoff.failed(because: reason)
        if worthSaying { journal.warning(line(reason)) }
        retryTimer = scheduler.schedule(on: queue, after: wait, repeating: nil) { [weak self] in self?.connect() }
    }

    /// logind left the bus (its states are no longer watched) or came onto it (read afresh).
    private func ownerChanged(_ change: DBusNameOwnerChanged) {
        dispatchPrecondition(condition: .onQueue(queue))
        if change.oldOwner != nil {
            journal.warning("logind: logind left the system bus; its lock and idle states are not watched until it returns")
            follow(nil)
        }
        if change.newOwner != nil {
            journal.info("logind: logind is on the system bus")
            readSeat()
        }
    }

    public func stop() {
        let connection: DBusConnection? = queue.sync {
            bus = nil
            retryTimer?.cancel()
            retryTimer = nil
            ownerSubscription?.cancel()
            ownerSubscription = nil
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
        ownerSubscription = nil
        seatSubscription = nil
        sessionSubscriptions = []
        sessionPath = nil
        connection = nil
        active.withLock { $0 = nil }
        emitWatching(false)
        // A stop that raced the loss leaves no bus to go back to.
        if bus != nil {
            retryLater(because: why) { "logind: the system bus connection was lost (\($0)); reconnecting, at most every minute" }
        }
    }
}
