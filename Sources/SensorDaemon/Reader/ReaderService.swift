import Dispatch
import Foundation
import LocationBridge
import SensorKitModel
import SensorSystem
import UsageBridge

/// The reader API's logic (docs/protocol.md §3): who a connection is, consent, stakes, fetches, push events.
/// Confined to one serial control queue; fetches run on their own queues (`FetchStream`).
public final class ReaderService: @unchecked Sendable {
    // @unchecked: every mutable field is touched only on `queue` (dispatchPrecondition).
    public struct Dependencies: Sendable {
        public var registry: AppRegistry
        public var archive: any SampleArchive
        public var recorder: any RecordingControl
        public var clock: any SystemClock
        public var timeline: @Sendable () -> Timeline
        /// Where consent and stakes are kept.
        public var storage: any ControlStorage
        /// Which sensors a driver can produce: the others refuse stakes and fetches, with the reason.
        public var drivers: DriverRegistry
        /// Administrator pre-grants from the config (lab rigs): (app, sensor) pairs.
        public var preGranted: [ControlLedger.Key]
        /// Where the grants the configuration made are remembered across restarts
        /// (`ConfiguredGrants`), so a `[grant]` removed while the daemon was stopped is revoked at
        /// start; nil: only for this run.
        public var configuredGrantsFile: String?
        /// Nanoseconds a fetch may go without progress before it ends with `timedOut`.
        public var fetchIdleTimeout: Int64
        /// Runs the fetches' idle and park timers (tests drive it by hand).
        public var scheduler: any Scheduler = DispatchScheduler()
        /// Fetches running at once, in all and per Unix user (`ReaderLimits`).
        public var maxFetches = 1024
        public var maxFetchesPerUser = 128
        /// The session agent's door: the device-usage driver attaches its sink when it runs.
        let usageAgents = UsageAgentDoor()
        /// The live subscriptions' feed (the pipeline's observer); nil: `subscribe` is refused.
        public var live: LiveFeed?
        public var log: Journal

        public init(
            registry: AppRegistry, archive: any SampleArchive, recorder: any RecordingControl,
            clock: any SystemClock, timeline: @escaping @Sendable () -> Timeline, storage: any ControlStorage,
            drivers: DriverRegistry, preGranted: [ControlLedger.Key] = [],
            fetchIdleTimeout: Int64 = ReaderLimits.Settings().fetchIdleTimeout,
            log: Journal
        ) {
            self.registry = registry
            self.archive = archive
            self.recorder = recorder
            self.clock = clock
            self.timeline = timeline
            self.storage = storage
            self.drivers = drivers
            self.preGranted = preGranted
            self.fetchIdleTimeout = fetchIdleTimeout
            self.log = log
        }
    }

    private final class Session: @unchecked Sendable {
        // @unchecked: touched only on the control queue (the service's `queue`), like the service.
        let connection: ClientConnection
        /// The app as installed now: checked again at every reload and every request (`recheck`).
        var app: AppManifest?
        /// Set when a reload withdrew the app (uninstalled, or this uid removed from its binding):
        /// every study operation of the connection fails with it from then on.
        var withdrawn: WireError?
        var helloDone = false
        var fetches: [UInt32: FetchStream] = [:]
        /// The sensor (as recorded: deletion records count as their sensor) each fetch reads.
        var fetchSensors: [UInt32: SRSensor] = [:]
        /// Live subscriptions (docs/protocol.md §3.9) and the sensor and device each watches.
        var subscriptions: [UInt32: (subscription: LiveSubscription, sensor: SRSensor, device: String)] = [:]
        /// requestAuthorization requests waiting for a person's answer: id → sensors.
        var waitingConsent: [UInt32: Set<SRSensor>] = [:]
        /// Frames of this connection waiting in `held` (they keep their order behind it).
        var heldFrames = 0
        init(connection: ClientConnection) { self.connection = connection }
        var isRoot: Bool { connection.peer.uid == 0 }
        var openRequests: Int { fetches.count + waitingConsent.count + subscriptions.count }
    }

    let queue = DispatchQueue(label: "sensorkitd.reader.control")
    private var dependencies: Dependencies
    private var ledger: ControlLedger
    private var sessions: [Int: Session] = [:]
    /// A ledger change is being saved (`ControlStorage.persist`): the control queue does not wait
    /// for the store, but requests that change the ledger wait in `held` until the save is done,
    /// so changes apply in the order they were asked for and each sees the one before. So do the
    /// later requests of the connection that asked for the change, and of a connection with a
    /// held frame: every client's requests keep their order. Bounded: a connection has at most
    /// `ClientConnection.maxQueuedRequests` requests unanswered.
    private var saving = false
    private var savingFor: Int?
    private var held: [(connection: Int, frame: Frame)] = []
    /// Running fetches per Unix user and in all (each may hold a read connection of the store).
    private var fetchAdmission: FetchAdmission
    /// `health` requests being computed off the control queue (bounded: any local user may ask).
    private var healthInFlight = 0
    private let healthQueue = DispatchQueue(label: "sensorkitd.reader.health")
    /// Participant deletions being carried out by the store off the control queue (bounded: each
    /// rewrites chunks on the store's writer, which must keep up with recording).
    private var erasuresInFlight = 0
    private let erasureQueue = DispatchQueue(label: "sensorkitd.reader.erasure")
    /// Every catalog sensor with why no driver produces it (nil: one does); drivers are fixed at start.
    private let unrecordable: [(SRSensor, String?)]
    /// Log lines any local user can make the daemon write (a refused hello, a connection closed
    /// for a protocol error, a consent request): the first of each kind per uid or app at once,
    /// the rest counted in one summary line a minute, so a flood cannot fill the journal.
    private let outsiderLines: RecurringProblems
    /// Who may see which apps are installed and what records (docs/protocol.md §1.2).
    private let administrators = Administrators.ofThisProcess
    /// Connections told when an app's consent requests become pending or are answered (§3.10).
    private var consentWatchers = ConsentWatchers()
    /// Since when each sensor has been wanted by no app (`health`'s `unwantedSince`).
    private var unwanted = UnwantedSensors()

    public init(_ dependencies: Dependencies) throws {
        self.dependencies = dependencies
        fetchAdmission = FetchAdmission(total: dependencies.maxFetches, perUser: dependencies.maxFetchesPerUser)
        ledger = try dependencies.storage.loadLedger()
        unrecordable = SensorCatalog.all.map { ($0.sensor, dependencies.drivers.availability(of: $0.sensor).reason) }
        outsiderLines = RecurringProblems(dependencies.log)
        // The store does not keep who decided: the file says which decisions are still the
        // configuration's own.
        if let path = dependencies.configuredGrantsFile {
            for entry in try ConfiguredGrants.load(path).entries {
                let key = ControlLedger.Key(app: entry.app, sensor: SRSensor(entry.sensor))
                if let decision = ledger.decisions[key], decision.status == .authorized, decision.decidedAt == entry.decidedAt {
                    ledger.decide(key, granted: true, at: entry.decidedAt, by: "config")
                }
            }
        }
        for key in dependencies.preGranted where ledger.status(key) == .notDetermined {
            let now = Self.srNow(dependencies)
            ledger.decide(key, granted: true, at: now, by: "config")
            try dependencies.storage.saveConsent(key, status: .authorized, at: now)
        }
        revokeRemovedGrants(at: Self.srNow(dependencies), context: "start")
        recordWantedSensors()
    }

    /// SIGHUP (`Daemon.reload`): apps and pre-grants read again. Every connection bound to an app
    /// is checked against the new apps at once (`recheck`): an uninstalled app or a uid removed
    /// from its binding loses the connection's access, a sensor removed from the entitlement its
    /// fetches. A grant added here is decided once, like at start; a grant removed here that
    /// still stands as the configuration decided it is revoked (denied, its stake ended), and the
    /// app's connections get `authorizationChanged`. `done` runs on the control queue when the new
    /// set is in force.
    public func reload(registry: AppRegistry, preGranted: [ControlLedger.Key], done: @escaping @Sendable () -> Void) {
        queue.async {
            self.dependencies.registry = registry
            self.dependencies.preGranted = preGranted
            let now = self.now
            for key in preGranted where self.ledger.status(key) == .notDetermined {
                do {
                    try self.dependencies.storage.saveConsent(key, status: .authorized, at: now)
                    self.ledger.decide(key, granted: true, at: now, by: "config")
                } catch {
                    self.dependencies.log.error(
                        "reload: cannot store the configured grant of \(key.sensor.rawValue) to \(key.app): \(error)")
                }
            }
            self.revokeRemovedGrants(at: now, context: "reload")
            for session in self.sessions.values { self.recheck(session) }
            // A uid added to an app's Consenters hears of what already waits for an answer.
            for app in Set(self.ledger.pending.map(\.app)) { self.consentRequestsChanged(of: app) }
            self.recordWantedSensors()
            done()
        }
    }

    /// Revokes each grant the configuration made that it no longer makes and that still stands as
    /// it made it (denied, its stake ended, `authorizationChanged` to the app's connections), and
    /// remembers the configuration's grants (`configuredGrantsFile`). From `init` (before any
    /// other thread sees the service) or on the control queue.
    private func revokeRemovedGrants(at now: Int64, context: String) {
        let kept = Set(dependencies.preGranted)
        let removed = ledger.decisions.filter {
            $0.value.decidedBy == "config" && $0.value.status == .authorized && !kept.contains($0.key)
        }
        for key in removed.keys.sorted() {
            do {
                try dependencies.storage.saveConsent(key, status: .denied, at: now)
                if ledger.stakes[key]?.active == true { try dependencies.storage.saveStake(key, active: false, at: now) }
                ledger.decide(key, granted: false, at: now, by: "config (grant removed)")
                dependencies.log.notice(
                    "\(context): the configured grant of \(key.sensor.rawValue) to \(key.app) was removed; its consent is revoked"
                )
                var event = WireReply(event: WireReply.Event.authorizationChanged.rawValue)
                event.sensor = key.sensor.rawValue
                event.authorizationStatus = SRAuthorizationStatus.denied.rawValue
                broadcast(event, toApp: key.app)
            } catch {
                dependencies.log.error(
                    "\(context): cannot revoke the removed grant of \(key.sensor.rawValue) to \(key.app): \(error)")
            }
        }
        guard let path = dependencies.configuredGrantsFile else { return }
        do {
            try ConfiguredGrants(ledger.decisions).save(path)
        } catch {
            dependencies.log.error(
                "\(context): cannot remember the configured grants in \(path): \(error); a [grant] removed before the next start will not be revoked then"
            )
        }
    }

    /// Checks a connection's app against the apps installed now, and its fetches against the app's
    /// entitlement and consent now: what is no longer allowed ends (docs/protocol.md §3.6).
    private func recheck(_ session: Session) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let bound = session.app, session.withdrawn == nil else { return }
        let manifest: AppManifest
        do {
            manifest = try dependencies.registry.rebind(bound, peer: session.connection.peer)
        } catch {
            let why =
                switch error {
                case .unknownApp: "app '\(bound.bundleID)' was uninstalled"
                case .userNotBound(_, let uid): "uid \(uid) was removed from the binding of app '\(bound.bundleID)'"
                case .wrongExecutable(_, let expected, _): "app '\(bound.bundleID)' may now only be run as \(expected)"
                }
            return withdraw(
                session,
                WireError(error.isUnknownApp ? .unknownApp : .notPermitted, why + "; this connection may no longer act as it"))
        }
        session.app = manifest
        for (_, live) in session.subscriptions {
            if let error = refusal(of: live.sensor, to: manifest) { live.subscription.revoke(error) }
        }
        for (id, sensor) in session.fetchSensors {
            if !manifest.entitledSensors.contains(sensor) {
                session.fetches[id]?.revoke(
                    WireError(
                        .invalidEntitlement,
                        "\(manifest.bundleID)'s entitlement \(AppManifest.entitlementKey) no longer lists \(sensor.rawValue); the fetch ended"
                    ))
            } else if ledger.status(.init(app: manifest.bundleID, sensor: sensor)) != .authorized {
                session.fetches[id]?.revoke(
                    WireError(
                        .noAuthorization, "\(manifest.bundleID) is no longer authorized for \(sensor.rawValue); the fetch ended"))
            }
        }
    }

    /// The connection's app was withdrawn: its fetches end and its waiting consent requests are
    /// answered with `error`, and so is every later study operation.
    private func withdraw(_ session: Session, _ error: WireError) {
        dispatchPrecondition(condition: .onQueue(queue))
        session.withdrawn = error
        for fetch in session.fetches.values { fetch.revoke(error) }
        for live in session.subscriptions.values { live.subscription.revoke(error) }
        for id in session.waitingConsent.keys.sorted() { send(.failure(id, error), to: session) }
        session.waitingConsent = [:]
        dependencies.log.notice("connection \(session.connection.id) (uid \(session.connection.peer.uid)): \(error.message)")
    }

    /// Answers on the control queue (the watchdog's probe).
    public func probe(_ answer: @escaping @Sendable () -> Void) { queue.async(execute: answer) }

    private static func srNow(_ dependencies: Dependencies) -> Int64 {
        dependencies.timeline().srNanoseconds(of: dependencies.clock.now()) ?? 0
    }
    private var now: Int64 { Self.srNow(dependencies) }

    /// Tells the recorder which sensors the stakes want, and notes when a sensor stops being
    /// wanted. From `init` or on the control queue, after every change of stakes or consent.
    private func recordWantedSensors() {
        let wanted = ledger.sensorsToRecord
        unwanted.update(wanted: wanted, everWanted: Set(ledger.stakes.keys.map(\.sensor)), at: now)
        dependencies.recorder.record(wanted)
    }

    /// The timers' scheduler, for the connections too.
    var scheduler: any Scheduler { dependencies.scheduler }

    // MARK: connections

    func attach(_ connection: ClientConnection) {
        queue.async {
            self.sessions[connection.id] = Session(connection: connection)
            connection.start(
                onFrame: { [weak self] frame in
                    guard let self else { return }
                    self.queue.async { self.receive(frame, from: connection.id) }
                },
                onClose: { [weak self] reason in
                    guard let self else { return }
                    self.queue.async { self.detach(connection.id, reason: reason) }
                })
        }
    }

    private func detach(_ id: Int, reason: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let session = sessions.removeValue(forKey: id) else { return }
        dependencies.usageAgents.close(connection: id, now: dependencies.clock.boottimeNanoseconds())
        consentWatchers.remove(connection: id)
        if session.heldFrames > 0 { held.removeAll { $0.connection == id } }
        for fetch in session.fetches.values { fetch.cancel(silently: true) }
        for live in session.subscriptions.values { live.subscription.cancel(silently: true) }
        if reason != "client closed the connection" {
            // One line per uid and kind of reason (the text before its first colon, which
            // carries no outside value), the rest counted.
            let uid = session.connection.peer.uid
            let kind = reason.prefix { $0 != ":" }.prefix(80)
            outsiderLines.report(
                "connections of uid \(uid) closed (\(kind))",
                "<6>\(LogMessage("connection \(id) (uid \(uid)) closed: \(reason)"))")
        }
    }

    private func send(_ reply: WireReply, to session: Session) {
        session.connection.send(WireJSON.boundedFrame(reply).encoded())
    }

    private func fail(_ id: UInt32?, _ code: WireErrorCode, _ message: String, _ session: Session) {
        send(.failure(id, WireError(code, message)), to: session)
    }

    private func receive(_ frame: Frame, from connectionID: Int) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let session = sessions[connectionID] else { return }
        if session.heldFrames > 0 || (saving && (savingFor == connectionID || Self.changesLedger(frame))) {
            held.append((connectionID, frame))
            session.heldFrames += 1
            return
        }
        handle(frame, session)
    }

    /// Whether a frame asks for a change of consent or stakes (decoded again only while a save runs).
    private static func changesLedger(_ frame: Frame) -> Bool {
        guard frame.kind == .message, let request = try? WireRequest.decode(frame.payload) else { return false }
        switch request.operation {
        case .startRecording, .stopRecording, .consentDecide, .requestAuthorization: return true
        default: return false
        }
    }

    /// A ledger change was saved (or failed, and was answered): the frames held behind it go on,
    /// in order, until one starts another save.
    private func saved(_ session: Session) {
        dispatchPrecondition(condition: .onQueue(queue))
        saving = false
        savingFor = nil
        session.connection.requestAnswered()
        while !saving, !held.isEmpty {
            let (connectionID, frame) = held.removeFirst()
            guard let waiting = sessions[connectionID] else { continue }
            waiting.heldFrames -= 1
            handle(frame, waiting)
        }
    }

    private func handle(_ frame: Frame, _ session: Session) {
        dispatchPrecondition(condition: .onQueue(queue))
        // Its replies are queued on the connection by now (same order of async hops); a request
        // that started a save is answered when the save is done (`saved`).
        let wasSaving = saving
        defer { if wasSaving || !saving { session.connection.requestAnswered() } }
        guard frame.kind == .message else {
            return fail(nil, .malformedRequest, "clients send JSON message frames only (kind 1)", session)
        }
        let request: WireRequest
        do {
            request = try WireRequest.decode(frame.payload)
        } catch {
            return fail(nil, .malformedRequest, "not a request: \(error)", session)
        }
        guard let operation = request.operation else {
            return fail(request.id, .unknownOperation, "unknown operation '\(request.op)'", session)
        }
        if operation != .hello && !session.helloDone {
            // ack and cancel never get a reply (docs/protocol.md §3.4), not even this one.
            if operation == .ack || operation == .cancel { return }
            return fail(request.id, .malformedRequest, "send hello first", session)
        }
        if operation.isAdministrative, session.app != nil, !WireRequest.Operation.allowedInAppSessions.contains(operation) {
            return fail(
                request.id, .notPermitted,
                "an app session may call only \(WireRequest.Operation.allowedInAppSessions.map(\.rawValue).sorted().joined(separator: ", ")) of the administrative operations; \(operation.rawValue) needs an admin session (hello without app)",
                session)
        }
        // The app may have been uninstalled or its binding changed since the last request.
        if session.app != nil { recheck(session) }
        switch operation {
        case .hello: hello(request, session)
        case .status: status(request, session)
        case .requestAuthorization: requestAuthorization(request, session)
        case .startRecording, .stopRecording: changeStake(request, session, start: operation == .startRecording)
        case .fetchDevices: fetchDevices(request, session)
        case .fetch: fetch(request, session)
        case .subscribe: subscribe(request, session)
        case .cancel:
            if let target = request.target, let stream = session.fetches[target] { stream.cancel(silently: false) }
            if let target = request.target, let live = session.subscriptions[target] { live.subscription.cancel(silently: false) }
        case .ack:
            if let target = request.target, let stream = session.fetches[target] { stream.acknowledge(request.batches ?? 1) }
            if let target = request.target, let live = session.subscriptions[target] {
                live.subscription.acknowledge(request.batches ?? 1)
            }
        case .daemonStatus, .sensors, .devices, .apps, .consentList, .consentDecide, .stakes, .deleteData:
            administer(operation, request, session)
        case .health:
            health(request, session)
        case .agent, .usage:
            agent(operation, request, session)
        case .watchConsent:
            watchConsent(request, session)
        }
    }

    // MARK: the session agent

    private func agent(_ operation: WireRequest.Operation, _ request: WireRequest, _ session: Session) {
        guard session.app == nil else {
            return fail(request.id, .notPermitted, "\(operation.rawValue) needs an admin session (hello without app)", session)
        }
        let (door, now, uid) = (dependencies.usageAgents, dependencies.clock.boottimeNanoseconds(), session.connection.peer.uid)
        let refusal =
            operation == .agent
            ? door.open(connection: session.connection.id, uid: uid, now: now)
            : door.usage(connection: session.connection.id, events: request.events ?? [], now: now)
        if let refusal {
            if operation == .agent {
                outsiderLines.report(
                    "refused agents of uid \(uid)", "<5>\(LogMessage("refused session agent of uid \(uid): \(refusal.message)"))")
            }
            return send(.failure(request.id, refusal), to: session)
        }
        send(WireReply(id: request.id, ok: true), to: session)
    }

    /// Where the device-usage driver's sink is handed to the session agents' door.
    public func admitUsageAgents(to sink: any UsageAgentSink) { dependencies.usageAgents.attach(sink) }

    /// Where the visits driver's sink is handed to the session agents' door.
    public func admitVisits(to sink: any VisitAgentSink) { dependencies.usageAgents.attach(visits: sink) }

    // MARK: study-app operations

    private func hello(_ request: WireRequest, _ session: Session) {
        guard !session.helloDone else {
            return fail(
                request.id, .malformedRequest,
                "hello was already answered on this connection; open a new one to act as another app", session)
        }
        guard request.v == WireLimits.version else {
            return fail(
                request.id, .unsupportedVersion,
                "protocol version \(request.v.map(String.init) ?? "missing") is not supported; this daemon speaks \(WireLimits.version)",
                session)
        }
        if let app = request.app {
            do {
                session.app = try dependencies.registry.authenticate(app: app, peer: session.connection.peer)
            } catch {
                let peer = session.connection.peer
                outsiderLines.report(
                    "refused hellos of uid \(peer.uid)",
                    "<5>\(LogMessage("refused connection from uid \(peer.uid) pid \(peer.pid): \(error)"))")
                // A uid that administers nothing learns the same for an app that is not installed
                // and one that does not bind it: which apps are installed is not its business.
                if !error.isWrongExecutable, !administrators.include(peer, in: dependencies.registry, app: app) {
                    fail(
                        request.id, .unknownApp,
                        "uid \(peer.uid) may not act as app '\(app)': no such app is installed for this user", session)
                } else {
                    fail(request.id, error.isUnknownApp ? .unknownApp : .notPermitted, error.description, session)
                }
                let connection = session.connection
                connection.queue.async { connection.close(reason: "refused: \(error)", flushFirst: true) }
                return
            }
        }
        session.helloDone = true
        var reply = WireReply(id: request.id, ok: true)
        reply.version = WireLimits.version
        reply.app = session.app?.bundleID
        let timeline = dependencies.timeline()
        if let boot = timeline.currentBoot, let anchor = timeline.anchors[boot] {
            reply.timeline = WireTimeline(origin: timeline.origin, boot: boot.rawValue, anchor: anchor)
        }
        send(reply, to: session)
    }

    /// The app and sensor of an app request, checked for entitlement; nil after replying an error.
    /// `needsDriver`: the sensor must have a driver here (every operation but stopRecording, which
    /// must stay able to drop a stake recorded before).
    private func entitledSensor(_ request: WireRequest, _ session: Session, needsDriver: Bool = true) -> (AppManifest, SRSensor)?
    {
        guard let app = boundApp(request, session) else { return nil }
        guard let raw = request.sensor else {
            fail(request.id, .malformedRequest, "the request needs a sensor", session)
            return nil
        }
        let sensor = SRSensor(raw)
        let recorded = sensor.parentOfDeletionRecords ?? sensor
        guard app.entitledSensors.contains(recorded) else {
            fail(
                request.id, .invalidEntitlement,
                "\(app.bundleID)'s entitlement \(AppManifest.entitlementKey) does not list \(SensorCatalog.descriptor(for: recorded)?.entitlement ?? recorded.rawValue)",
                session)
            return nil
        }
        if case .unsupported(let reason) = SensorCatalog.support(for: sensor) {
            fail(request.id, .unsupportedSensor, reason, session)
            return nil
        }
        if needsDriver, let reason = dependencies.drivers.availability(of: recorded).reason {
            fail(request.id, .unsupportedSensor, reason, session)
            return nil
        }
        return (app, recorded)
    }

    /// The app of an app session, or nil after replying an error (an admin session, or an app
    /// withdrawn by a reload).
    private func boundApp(_ request: WireRequest, _ session: Session) -> AppManifest? {
        if let withdrawn = session.withdrawn {
            fail(request.id, withdrawn.code, withdrawn.message, session)
            return nil
        }
        guard let app = session.app else {
            fail(request.id, .notPermitted, "this connection did not say which app it is (hello with app)", session)
            return nil
        }
        return app
    }

    private func status(_ request: WireRequest, _ session: Session) {
        guard let app = boundApp(request, session) else { return }
        let sensors = request.sensor.map { [SRSensor($0)] } ?? app.entitledSensors.sorted { $0.rawValue < $1.rawValue }
        var reply = WireReply(id: request.id, ok: true)
        reply.states = sensors.map { sensor in
            let key = ControlLedger.Key(app: app.bundleID, sensor: sensor)
            let stake = ledger.stakes[key]
            return WireSensorState(
                sensor: sensor.rawValue, authorizationStatus: ledger.status(key).rawValue,
                recording: stake?.active ?? false, firstRecording: stake?.firstStart)
        }
        send(reply, to: session)
    }

    private func requestAuthorization(_ request: WireRequest, _ session: Session) {
        guard let app = boundApp(request, session) else { return }
        let sensors = Set((request.sensors ?? []).map(SRSensor.init(rawValue:)))
        guard !sensors.isEmpty else { return fail(request.id, .malformedRequest, "requestAuthorization needs sensors", session) }
        guard session.openRequests < WireLimits.maxOpenRequests else {
            return fail(
                request.id, .tooManyRequests, "at most \(WireLimits.maxOpenRequests) open requests per connection", session)
        }
        let notEntitled = sensors.filter { !app.entitledSensors.contains($0) }
        guard notEntitled.isEmpty else {
            return fail(
                request.id, .invalidEntitlement,
                "\(app.bundleID) is not entitled to \(notEntitled.map(\.rawValue).sorted().joined(separator: ", "))", session)
        }
        let undecided = sensors.filter { ledger.status(.init(app: app.bundleID, sensor: $0)) == .notDetermined }
        guard !undecided.isEmpty else {
            // Apple: when every sensor was already decided no prompt is shown and the completion
            // gets an error; the statuses are unchanged.
            return fail(
                request.id, .promptDeclined,
                "no prompt shown: every requested sensor was already decided (sensorkitctl consent changes decisions)", session)
        }
        let time = now
        for sensor in undecided { ledger.request(ControlLedger.Key(app: app.bundleID, sensor: sensor)) }
        let log = dependencies.log
        dependencies.storage.persist(
            undecided.map { .consent(ControlLedger.Key(app: app.bundleID, sensor: $0), .notDetermined, at: time) }
        ) { _, failure in
            if let failure { log.error("could not save the consent request of \(app.bundleID): \(failure)") }
        }
        session.waitingConsent[request.id] = undecided
        consentRequestsChanged(of: app.bundleID)
        outsiderLines.report(
            "consent requests of \(app.bundleID)",
            "<6>\(LogMessage("\(app.bundleID) asks for consent to \(undecided.map { SensorCatalog.descriptor(for: $0)?.name ?? $0.rawValue }.sorted().joined(separator: ", ")); answer with: sensorkitctl consent \(app.bundleID)"))"
        )
    }

    private func changeStake(_ request: WireRequest, _ session: Session, start: Bool) {
        guard let (app, sensor) = entitledSensor(request, session, needsDriver: start) else { return }
        guard SRSensor(request.sensor!).parentOfDeletionRecords == nil else {
            return fail(
                request.id, .malformedRequest, "deletion-record streams are fetched, never recorded; record \(sensor.rawValue)",
                session)
        }
        let key = ControlLedger.Key(app: app.bundleID, sensor: sensor)
        guard ledger.status(key) == .authorized else {
            return fail(
                request.id, .noAuthorization,
                "\(app.bundleID) is not authorized for \(sensor.rawValue) (status \(ledger.status(key)))", session)
        }
        let time = now
        saving = true
        savingFor = session.connection.id
        dependencies.storage.persist([.stake(key, active: start, at: time)]) { [self] _, failure in
            queue.async { [self] in
                defer { saved(session) }
                if let failure { return fail(request.id, .internalError, "could not save the stake: \(failure)", session) }
                stakeSaved(request, session, app: app, sensor: sensor, key: key, start: start, at: time)
            }
        }
    }

    private func stakeSaved(
        _ request: WireRequest, _ session: Session, app: AppManifest, sensor: SRSensor,
        key: ControlLedger.Key, start: Bool, at time: Int64
    ) {
        if start { ledger.startRecording(key, at: time) } else { ledger.stopRecording(key) }
        recordWantedSensors()
        send(WireReply(id: request.id, ok: true), to: session)
        var event = WireReply(event: (start ? WireReply.Event.recordingStarted : .recordingStopped).rawValue)
        event.sensor = sensor.rawValue
        broadcast(event, toApp: app.bundleID)
    }

    private func fetchDevices(_ request: WireRequest, _ session: Session) {
        guard let (app, sensor) = entitledSensor(request, session) else { return }
        guard ledger.status(.init(app: app.bundleID, sensor: sensor)) == .authorized else {
            return fail(request.id, .noAuthorization, "\(app.bundleID) is not authorized for \(sensor.rawValue)", session)
        }
        var reply = WireReply(id: request.id, ok: true)
        reply.devices = dependencies.archive.devices(for: sensor).map(WireDevice.init)
        send(reply, to: session)
    }

    private func fetch(_ request: WireRequest, _ session: Session) {
        guard let (app, recorded) = entitledSensor(request, session) else { return }
        let sensor = SRSensor(request.sensor!)
        let key = ControlLedger.Key(app: app.bundleID, sensor: recorded)
        guard ledger.status(key) == .authorized else {
            return fail(request.id, .noAuthorization, "\(app.bundleID) is not authorized for \(recorded.rawValue)", session)
        }
        guard let from = request.from, let to = request.to else {
            return fail(request.id, .fetchRequestInvalid, "the fetch request's from and to must both be set", session)
        }
        guard to >= from else {
            return fail(
                request.id, .fetchRequestInvalid, "the fetch request's range is inverted: to (\(to)) is before from (\(from))",
                session)
        }
        guard session.fetches[request.id] == nil, session.fetches.count < WireLimits.maxConcurrentFetches,
            session.openRequests < WireLimits.maxOpenRequests
        else {
            return fail(
                request.id, .tooManyRequests,
                "at most \(WireLimits.maxConcurrentFetches) fetches at once per connection, each with its own id", session)
        }
        guard BatchLayout.of(sensor) != nil else {
            return fail(request.id, .unsupportedSensor, "\(sensor.rawValue) has no sample layout", session)
        }
        let retention = dependencies.archive.retention(for: recorded)
        // Deletion records explain data that is gone and outlive it by one window (docs/store.md):
        // held to the samples' window, the `ageLimit` record of a purge — whose data is older than
        // the window by definition — could never be fetched.
        let window =
            sensor.parentOfDeletionRecords == nil ? retention.window : retention.window.multipliedSaturating(by: 2)
        let verdict = FetchPolicy.decide(
            from: from, to: to, now: now, hold: retention.hold, window: window,
            firstStart: ledger.stakes[key]?.firstStart)
        switch verdict {
        case .empty(let notice):
            var done = WireReply(id: request.id, ok: true)
            done.count = 0
            done.notice = notice
            send(done, to: session)
        case .read(let from, let to, let notBefore):
            let uid = session.connection.peer.uid
            if let refusal = fetchAdmission.admit(uid) { return fail(request.id, .tooManyRequests, refusal, session) }
            let cursor: any FetchCursor
            do {
                let formats = Set((request.chunkFormats ?? []).compactMap { UInt8(exactly: $0) })
                cursor = try dependencies.archive.cursor(
                    sensor: sensor, device: request.device ?? SRDevice.hostIdentifier,
                    from: from, to: to, notBefore: notBefore, chunkFormats: formats)
            } catch {
                fetchAdmission.release(uid)
                return fail(request.id, .dataInaccessible, "the store cannot be read: \(error)", session)
            }
            let connectionID = session.connection.id
            let stream = FetchStream(
                requestID: request.id, cursor: cursor, connection: session.connection,
                window: max(1, min(request.window ?? WireLimits.defaultFetchWindow, WireLimits.maxFetchWindow)), notice: nil,
                idleTimeout: dependencies.fetchIdleTimeout, scheduler: dependencies.scheduler,
                maxSamples: WireLimits.samplesPerBatch(columns: BatchLayout.of(sensor)?.columns.count ?? 0),
                onFinish: { [weak self] id in
                    guard let self else { return }
                    self.queue.async {
                        self.sessions[connectionID]?.fetches[id] = nil
                        self.sessions[connectionID]?.fetchSensors[id] = nil
                        self.fetchAdmission.release(uid)
                    }
                })
            session.fetches[request.id] = stream
            session.fetchSensors[request.id] = recorded
            // Samples the store's hand-over journal holds are readable once the writer folded
            // them; asked for without waiting, so a stalled writer stalls this fetch alone.
            dependencies.archive.whenReadable(through: to) { stream.start() }
        }
    }

    /// `subscribe` (docs/protocol.md §3.9): the batches of one sensor as they are recorded, to an
    /// app entitled and authorized for it, or to an administrator in an admin session; released
    /// data only, so refused while the sensor has a hold.
    private func subscribe(_ request: WireRequest, _ session: Session) {
        guard let live = dependencies.live else {
            return fail(request.id, .unsupportedSensor, "this daemon has no live feed", session)
        }
        let recorded: SRSensor
        if session.app != nil {
            guard let (app, sensor) = entitledSensor(request, session) else { return }
            if let error = refusal(of: sensor, to: app) { return fail(request.id, error.code, error.message, session) }
            recorded = sensor
        } else {
            guard administrators.include(session.connection.peer, in: dependencies.registry) else {
                return fail(
                    request.id, .notPermitted,
                    "a live subscription in an admin session is for administrators (root, the daemon's user or group, a study's Consenters)",
                    session)
            }
            guard let raw = request.sensor else {
                return fail(request.id, .malformedRequest, "the request needs a sensor", session)
            }
            recorded = SRSensor(raw)
            if let reason = dependencies.drivers.availability(of: recorded).reason {
                return fail(request.id, .unsupportedSensor, reason, session)
            }
        }
        guard recorded.parentOfDeletionRecords == nil, SRSensor(request.sensor!).parentOfDeletionRecords == nil,
            BatchLayout.of(recorded) != nil
        else {
            return fail(
                request.id, .unsupportedSensor,
                "deletion records are not subscribed to: a subscription to the sensor gets its gaps as gap events", session)
        }
        let hold = dependencies.archive.retention(for: recorded).hold
        guard hold <= 0 else {
            return fail(
                request.id, .fetchRequestInvalid,
                "\(recorded.rawValue) is held for \(FetchPolicy.describe(hold)) before release; a live subscription delivers released data only, so it needs a hold of 0 (the lab profile, docs/live.md)",
                session)
        }
        guard session.subscriptions[request.id] == nil, session.fetches[request.id] == nil,
            session.subscriptions.count < LiveSubscription.maxPerConnection, session.openRequests < WireLimits.maxOpenRequests
        else {
            return fail(
                request.id, .tooManyRequests,
                "at most \(LiveSubscription.maxPerConnection) subscriptions per connection, each with its own id", session)
        }
        let device = request.device ?? SRDevice.hostIdentifier
        let connectionID = session.connection.id
        let subscription = LiveSubscription(
            requestID: request.id, sensor: recorded.rawValue, device: device,
            window: max(1, min(request.window ?? WireLimits.defaultFetchWindow, WireLimits.maxFetchWindow)),
            connection: session.connection,
            onFinish: { [weak self] id in
                guard let self else { return }
                self.queue.async {
                    guard let ended = self.sessions[connectionID]?.subscriptions.removeValue(forKey: id) else { return }
                    live.remove(ended.subscription, sensor: ended.sensor, device: ended.device)
                }
            })
        session.subscriptions[request.id] = (subscription, recorded, device)
        let recording = dependencies.recorder.sources().contains {
            $0.sensor == recorded.rawValue && $0.device == device && $0.recording
        }
        // Registered before the `subscribed` event is queued: every batch recorded after the
        // client reads the event reaches it.
        live.add(subscription, sensor: recorded, device: device)
        subscription.start(
            notice: recording
                ? nil : "\(recorded.rawValue) on \(device) is not recording now; batches arrive once an app records it")
    }

    /// Why an app may no longer receive `sensor` live (its entitlement or consent is gone), or nil.
    private func refusal(of sensor: SRSensor, to app: AppManifest) -> WireError? {
        if !app.entitledSensors.contains(sensor) {
            return WireError(
                .invalidEntitlement,
                "\(app.bundleID)'s entitlement \(AppManifest.entitlementKey) does not list \(sensor.rawValue); the subscription ends"
            )
        }
        if ledger.status(.init(app: app.bundleID, sensor: sensor)) != .authorized {
            return WireError(.noAuthorization, "\(app.bundleID) is not authorized for \(sensor.rawValue); the subscription ends")
        }
        return nil
    }

    private func broadcast(_ event: WireReply, toApp app: String) {
        for session in sessions.values where session.app?.bundleID == app { send(event, to: session) }
    }

    // MARK: people and scripts (sensorkitctl)

    /// Apps whose consent and stakes this session may see and decide: none for an app's own
    /// connection (an app never sees another's, nor answers its own consent); all for root;
    /// otherwise the apps that name this uid among their `Consenters`.
    private func visibleApps(_ session: Session) -> [AppManifest] {
        guard session.app == nil else { return [] }
        return dependencies.registry.apps.values
            .filter { session.isRoot || $0.consenters.contains(session.connection.peer.uid) }
            .sorted { $0.bundleID < $1.bundleID }
    }

    private func administer(_ operation: WireRequest.Operation, _ request: WireRequest, _ session: Session) {
        var reply = WireReply(id: request.id, ok: true)
        // What records, which devices and how busy the daemon is are an administrator's to see,
        // in an admin session; an app session and a stranger's session get none of it.
        let seesActivity = session.app == nil && administrators.include(session.connection.peer, in: dependencies.registry)
        if !seesActivity, operation == .sensors || operation == .devices {
            return fail(
                request.id, .notPermitted,
                "\(operation.rawValue) is shown to administrators only (root, the daemon's user or group, a study's Consenters) in an admin session",
                session)
        }
        switch operation {
        case .daemonStatus:
            reply.info = [
                "version": DaemonCommand.version, "now": String(now),
                "boot": dependencies.clock.bootID.rawValue,
                "drivers": dependencies.drivers.drivers.map { "\($0.name)\($0.disabledBy == nil ? "" : " (disabled)")" }.joined(
                    separator: ","),
                "unrecordable": unrecordable.compactMap { sensor, reason in
                    SensorCatalog.descriptor(for: sensor)?.isSupportedOnLinux == true
                        ? reason.map { "\(sensor.rawValue): \($0)" } : nil
                }.joined(separator: "\n"),
            ]
            if seesActivity {
                // Bytes queued for clients that have not read them yet: bounded by credit and the
                // per-connection limit, whatever clients ask for.
                let backlogs = sessions.values.map { $0.connection.backlog }
                let queued = backlogs.reduce(0) { $0 + $1.0 }
                reply.info?["connections"] = String(sessions.count)
                reply.info?["fetches"] = String(sessions.values.reduce(0) { $0 + $1.fetches.count })
                reply.info?["queuedReplyBytes"] = String(queued)
                reply.info?["maxQueuedRequests"] = String(backlogs.map(\.1).max() ?? 0)
                reply.info?["recording"] = ledger.sensorsToRecord.map(\.rawValue).sorted().joined(separator: ",")
                // The daemon's own cost so far, every thread's, for an administrator (the battery
                // bench reads the process from outside instead: a call would wake the daemon). Not
                // for apps: switch counts polled often would time other sensors' events (keys).
                if let usage = ProcessUsage.current {
                    reply.info?["cpuMicroseconds"] = String(usage.cpuMicroseconds)
                    reply.info?["voluntarySwitches"] = String(usage.voluntarySwitches)
                    reply.info?["involuntarySwitches"] = String(usage.involuntarySwitches)
                }
            }
        case .sensors:
            let recording = ledger.sensorsToRecord
            reply.states = unrecordable.map { sensor, reason in
                var state = WireSensorState(
                    sensor: sensor.rawValue, authorizationStatus: 0,
                    recording: recording.contains(sensor), firstRecording: nil)
                state.recordable = reason == nil
                state.unrecordableReason = reason
                return state
            }
        case .devices:
            reply.sources = dependencies.recorder.sources()
        case .apps:
            reply.apps = visibleApps(session).map {
                WireApp(
                    app: $0.bundleID, purpose: $0.purpose, entitledSensors: $0.entitledSensors.map(\.rawValue).sorted(),
                    users: $0.users, executable: $0.executable)
            }
        case .consentList:
            reply.consent = visibleApps(session).filter { request.app == nil || $0.bundleID == request.app }.map(consentSheet)
        case .stakes:
            let visible = Set(visibleApps(session).map(\.bundleID))
            reply.stakes = ledger.stakes.filter { visible.contains($0.key.app) }.sorted { $0.key < $1.key }.map {
                WireStake(
                    app: $0.key.app, sensor: $0.key.sensor.rawValue, active: $0.value.active, firstRecording: $0.value.firstStart)
            }
        case .consentDecide:
            return decide(request, session)
        case .deleteData:
            return deleteData(request, session)
        default:
            return fail(request.id, .unknownOperation, "not an administrative operation", session)
        }
        send(reply, to: session)
    }

    /// `health` (docs/protocol.md §3.5): root sees every stream; another uid the streams of the
    /// sensors its visible apps are entitled to. Read from the store off the control queue, at
    /// most a few at a time daemon-wide.
    private func health(_ request: WireRequest, _ session: Session) {
        let now = self.now
        let to = request.to ?? now
        let from = request.from ?? to.subtractingSaturating(86_400_000_000_000)
        guard to > from, to.subtractingSaturating(from) <= WireHealth.maxRange else {
            return fail(
                request.id, .malformedRequest,
                "health needs from < to, at most \(WireHealth.maxRange / 86_400_000_000_000) days apart", session)
        }
        guard healthInFlight < 4 else {
            return fail(request.id, .tooManyRequests, "the daemon is already answering 4 health requests; ask again", session)
        }
        healthInFlight += 1
        let sensors: Set<SRSensor>? = session.isRoot ? nil : Set(visibleApps(session).flatMap(\.entitledSensors))
        let recording = ledger.sensorsToRecord
        // Like `recording`, a fact about the sensor: when any app first wanted it.
        let wantedSince = Dictionary(
            ledger.stakes.map { ($0.key.sensor.rawValue, $0.value.firstStart) }, uniquingKeysWith: { min($0, $1) })
        let unwantedSince = Dictionary(uniqueKeysWithValues: unwanted.since.map { ($0.key.rawValue, $0.value) })
        let rates = Dictionary(
            dependencies.recorder.sources().compactMap { source in
                ExpectedRate.of(source.details).map { (source.sensor + "\u{0}" + source.device, $0) }
            }, uniquingKeysWith: { first, _ in first })
        let archive = dependencies.archive
        let id = request.id, connection = session.connection
        let queue = healthQueue
        let compute: @Sendable () -> Void = {
            var reply = WireReply(id: id, ok: true)
            do {
                var health = try archive.health(now: now, from: from, to: to, sensors: sensors)
                for i in health.streams.indices {
                    let stream = health.streams[i]
                    health.streams[i].recording = recording.contains(SRSensor(stream.sensor))
                    health.streams[i].expectedRate = rates[stream.sensor + "\u{0}" + stream.device]
                    health.streams[i].wantedSince = wantedSince[stream.sensor]
                    health.streams[i].unwantedSince = unwantedSince[stream.sensor]
                }
                reply.health = health
            } catch {
                reply = .failure(id, WireError(.dataInaccessible, "the store cannot be read: \(error)"))
            }
            connection.send(WireJSON.boundedFrame(reply).encoded())
            self.queue.async { self.healthInFlight -= 1 }
        }
        // The catalog shows what the journal holds once the writer folded it: asked for without
        // waiting, so a stalled writer delays this answer alone.
        archive.whenReadable(through: max(to, now)) { queue.async(execute: compute) }
    }

    private func consentSheet(_ app: AppManifest) -> WireConsentRequest {
        let items = app.entitledSensors.sorted { $0.rawValue < $1.rawValue }.map { sensor in
            let detail = app.usageDetail(for: sensor)
            return WireConsentRequest.Item(
                sensor: sensor.rawValue, name: SensorCatalog.descriptor(for: sensor)?.name ?? sensor.rawValue,
                description: detail?.description, required: detail?.required ?? false,
                status: ledger.status(.init(app: app.bundleID, sensor: sensor)).rawValue,
                pending: ledger.pending.contains(.init(app: app.bundleID, sensor: sensor)))
        }
        return WireConsentRequest(app: app.bundleID, purpose: app.purpose, privacyPolicyURL: app.privacyPolicyURL, items: items)
    }

    private func decide(_ request: WireRequest, _ session: Session) {
        guard let bundleID = request.app, let decisions = request.decisions, !decisions.isEmpty else {
            return fail(request.id, .malformedRequest, "consentDecide needs app and decisions", session)
        }
        guard let app = visibleApps(session).first(where: { $0.bundleID == bundleID }) else {
            return fail(request.id, .notPermitted, "uid \(session.connection.peer.uid) may not decide for '\(bundleID)'", session)
        }
        let notEntitled = decisions.keys.filter { !app.entitledSensors.contains(SRSensor($0)) }.sorted()
        guard notEntitled.isEmpty else {
            return fail(
                request.id, .invalidEntitlement,
                "\(bundleID) is not entitled to \(notEntitled.joined(separator: ", ")); nothing was changed", session)
        }
        // Each decision is one or two writes (a denial also ends an active stake); the ledger
        // takes the decisions whose writes were all saved, in order, as it did when it waited.
        let time = now
        var writes: [ControlWrite] = []
        var decided: [(key: ControlLedger.Key, granted: Bool, writesUpTo: Int)] = []
        for (raw, granted) in decisions.sorted(by: { $0.key < $1.key }) {
            let key = ControlLedger.Key(app: bundleID, sensor: SRSensor(raw))
            writes.append(.consent(key, granted ? .authorized : .denied, at: time))
            if !granted, ledger.stakes[key]?.active == true { writes.append(.stake(key, active: false, at: time)) }
            decided.append((key, granted, writes.count))
        }
        saving = true
        savingFor = session.connection.id
        dependencies.storage.persist(writes) { [self, decided] saved, failure in
            queue.async { [self] in
                defer { self.saved(session) }
                var changed: [(SRSensor, SRAuthorizationStatus)] = []
                for decision in decided where decision.writesUpTo <= saved {
                    ledger.decide(decision.key, granted: decision.granted, at: time, by: "uid \(session.connection.peer.uid)")
                    changed.append((decision.key.sensor, ledger.status(decision.key)))
                }
                if let failure { return fail(request.id, .internalError, "could not save the decision: \(failure)", session) }
                decisionsSaved(request, session, app: app, changed: changed)
            }
        }
    }

    private func decisionsSaved(
        _ request: WireRequest, _ session: Session, app: AppManifest, changed: [(SRSensor, SRAuthorizationStatus)]
    ) {
        let bundleID = app.bundleID
        // A fetch or subscription in flight ends with the consent it was started under, before
        // the recording it watches stops (a subscription would otherwise end as if the source did).
        for session in sessions.values where session.app?.bundleID == bundleID { recheck(session) }
        recordWantedSensors()
        let declinedRequired = changed.filter { $0.1 == .denied && app.usageDetail(for: $0.0)?.required == true }
        var reply = WireReply(id: request.id, ok: true)
        if !declinedRequired.isEmpty {
            reply.notice =
                "declined sensors the study marks Required: \(declinedRequired.map { $0.0.rawValue }.joined(separator: ", ")); the study may not be able to continue"
        }
        send(reply, to: session)
        for (sensor, status) in changed {
            var event = WireReply(event: WireReply.Event.authorizationChanged.rawValue)
            event.sensor = sensor.rawValue
            event.authorizationStatus = status.rawValue
            broadcast(event, toApp: bundleID)
        }
        answerWaitingRequests(of: bundleID)
        consentRequestsChanged(of: bundleID)
    }

    // MARK: consent watches (docs/protocol.md §3.10)

    /// Whether `uid` may hear of `app`'s consent requests: root, and the app's Consenters.
    private func mayAnswer(_ app: String, uid: UInt32) -> Bool {
        uid == 0 || dependencies.registry.apps[app]?.consenters.contains(uid) == true
    }

    /// `watchConsent`: from now on the connection is told whenever what an app it may answer for
    /// waits for changes, starting with what waits now. A uid that answers for no installed app
    /// is refused, so strangers hold none of the daemon's watches (and learn nothing they could
    /// not learn from an empty `consentList`).
    private func watchConsent(_ request: WireRequest, _ session: Session) {
        let uid = session.connection.peer.uid
        guard uid == 0 || !visibleApps(session).isEmpty else {
            return fail(
                request.id, .notPermitted,
                "uid \(uid) answers the consent of no installed app (only root and a study's Consenters may watch)", session)
        }
        if let refusal = consentWatchers.admit(connection: session.connection.id, target: request.id, uid: uid) {
            return send(.failure(request.id, refusal), to: session)
        }
        send(WireReply(id: request.id, ok: true), to: session)
        for app in Set(ledger.pending.map(\.app)) where mayAnswer(app, uid: uid) {
            consentWatchers.tell(session.connection.id, about: app)
        }
        tellConsentWatch(session.connection.id)
    }

    /// `app`'s pending requests changed: every watch that may hear of it is told.
    private func consentRequestsChanged(of app: String) {
        consentWatchers.changed(app) { mayAnswer(app, uid: $0) }
        for connection in consentWatchers.watches.keys { tellConsentWatch(connection) }
    }

    /// Sends the connection's next `consentPending` event unless one is still on its way; the
    /// next goes once the socket took it, so a watcher that does not read holds one frame.
    private func tellConsentWatch(_ connection: Int) {
        guard let session = sessions[connection],
            let (target, app) = consentWatchers.next(for: connection, mayKnow: { mayAnswer($0, uid: $1) })
        else { return }
        var event = WireReply(event: WireReply.Event.consentPending.rawValue)
        event.target = target
        event.app = app
        let entitled = dependencies.registry.apps[app]?.entitledSensors ?? []
        event.sensors = ledger.pending.filter { $0.app == app && entitled.contains($0.sensor) }.map(\.sensor.rawValue).sorted()
        let bytes = WireJSON.boundedFrame(event).encoded()
        session.connection.send(bytes, count: bytes.count) { [weak self] _ in
            guard let self else { return }
            self.queue.async {
                self.consentWatchers.written(connection: connection)
                self.tellConsentWatch(connection)
            }
        }
    }

    /// `deleteData` (docs/protocol.md §3.8): a participant deletes what was recorded of an app's
    /// sensors over a range they pick. Recorded data belongs to the sensor, not to one app, so
    /// every app loses it and fetches the `userInitiated` records that say so. Only the people
    /// who answer the app's consent (its `Consenters`) and root may; the store does the work off
    /// the control queue, at most two deletions at a time daemon-wide.
    private func deleteData(_ request: WireRequest, _ session: Session) {
        guard let bundleID = request.app, let from = request.from, let to = request.to else {
            return fail(request.id, .malformedRequest, "deleteData needs app, from and to", session)
        }
        let uid = session.connection.peer.uid
        guard let app = visibleApps(session).first(where: { $0.bundleID == bundleID }) else {
            return fail(
                request.id, .notPermitted,
                "uid \(uid) may not delete the data of '\(bundleID)': only its Consenters and root may", session)
        }
        let sensors = request.sensors.map { $0.map { SRSensor($0) } } ?? app.entitledSensors.sorted { $0.rawValue < $1.rawValue }
        let notEntitled = sensors.filter { !app.entitledSensors.contains($0) }.map(\.rawValue).sorted()
        guard !sensors.isEmpty, notEntitled.isEmpty else {
            return fail(
                request.id, .invalidEntitlement,
                sensors.isEmpty
                    ? "name at least one sensor of \(bundleID)"
                    : "\(bundleID) is not entitled to \(notEntitled.joined(separator: ", ")); nothing was deleted", session)
        }
        // Nothing can be deleted before it is recorded: the range ends now at the latest.
        let through = min(to, now)
        guard from < through, through.subtractingSaturating(from) <= WireHealth.maxRange else {
            return fail(
                request.id, .malformedRequest,
                "deleteData needs from < to (to at most now), at most \(WireHealth.maxRange / 86_400_000_000_000) days apart",
                session)
        }
        guard erasuresInFlight < 2 else {
            return fail(request.id, .tooManyRequests, "the daemon is already carrying out 2 deletions; ask again", session)
        }
        erasuresInFlight += 1
        dependencies.log.notice(
            LogMessage(
                "uid \(uid) deletes the data of \(sensors.map(\.rawValue).joined(separator: ", ")) recorded in (\(from), \(through)] (for \(bundleID))"
            ))
        let archive = dependencies.archive
        let id = request.id, connection = session.connection
        erasureQueue.async {
            var reply = WireReply(id: id, ok: true)
            do {
                var removed = 0
                var overwritten = true
                for sensor in sensors {
                    let erased = try archive.erase(sensor: sensor, after: from, through: through)
                    removed = removed.addingSaturating(erased.samples)
                    overwritten = overwritten && erased.overwritten
                }
                reply.count = removed
                if !overwritten {
                    reply.notice =
                        "the data is deleted; a reader of the store still held the old pages, so their bytes are overwritten at the next checkpoint"
                }
            } catch {
                reply = .failure(id, WireError(.internalError, "the store could not delete the data: \(error)"))
            }
            connection.send(WireJSON.boundedFrame(reply).encoded())
            self.queue.async { self.erasuresInFlight -= 1 }
        }
    }

    /// Completes `requestAuthorization` requests whose sensors all have an answer now.
    private func answerWaitingRequests(of app: String) {
        for session in sessions.values where session.app?.bundleID == app {
            for (id, sensors) in session.waitingConsent
            where sensors.allSatisfy({ ledger.status(.init(app: app, sensor: $0)) != .notDetermined }) {
                session.waitingConsent[id] = nil
                send(WireReply(id: id, ok: true), to: session)
            }
        }
    }
}

extension AppRegistry.Refusal {
    var isUnknownApp: Bool {
        if case .unknownApp = self { return true }
        return false
    }
    /// Only a bound uid hears this one: it already knows the app is installed.
    var isWrongExecutable: Bool {
        if case .wrongExecutable = self { return true }
        return false
    }
}
