import CSystemdBus
import Dispatch
import Foundation
import Glibc
import SensorSystem
import Synchronization

/// Which bus to connect to.
public enum DBusBus: Sendable, Equatable {
    /// `$DBUS_SYSTEM_BUS_ADDRESS`, else `/run/dbus/system_bus_socket`.
    case system
    /// `$DBUS_SESSION_BUS_ADDRESS`, else the user's bus under `$XDG_RUNTIME_DIR`.
    case session
    /// A broker at this address (`unix:path=…`), as a bus client.
    case address(String)
}

/// One connection to a D-Bus broker, the one way the daemon speaks D-Bus (docs/dbus.md).
///
/// This is the only file that calls sd-bus. An `sd_bus` object is not thread-safe, so each
/// connection owns a thread of its own that opens the bus, polls its fd (with the events and the
/// absolute `CLOCK_MONOTONIC` deadline sd-bus asks for) and an eventfd, runs `sd_bus_process`,
/// and closes it. Every public method may be called from any thread: it queues a request for
/// the bus thread and wakes it; results arrive on the `DispatchQueue` the caller names.
///
/// A lost connection (the broker died, the socket closed) fails every pending call with
/// `.disconnected`, ends every subscription with `.ended`, and calls `onLost` once. The
/// object is then finished: open a new one to reconnect and subscribe again.
public final class DBusConnection: Sendable {
    public let limits: DBusLimits
    private let inbox: Mutex<Inbox>
    private let wakeDescriptor: Int32
    private let finished = DispatchGroup()

    private struct Inbox: ~Copyable {
        var requests: [@Sendable (BusThread) -> Void] = []
        var closing = false
        var ended = false
    }

    /// Opens the connection and starts its thread. Blocks until sd-bus has connected the socket
    /// (the `Hello` handshake completes asynchronously); throws when it cannot.
    /// `onLost` runs on `queue` once if the connection is lost rather than closed.
    public convenience init(
        _ bus: DBusBus, description: String = "sensorkitd", limits: DBusLimits = DBusLimits(),
        queue: DispatchQueue = DispatchQueue(label: "dbus.lost"),
        onLost: @escaping @Sendable (DBusError) -> Void = { _ in }
    ) throws(DBusError) {
        try self.init(bus, description: description, limits: limits, monitor: nil, queue: queue, onLost: onLost)
    }

    /// A monitor of `bus` (`org.freedesktop.DBus.Monitoring.BecomeMonitor` with `monitor.rules`):
    /// a connection that sends nothing after that call and sees every message matching the rules
    /// — calls, replies, errors and signals between other peers — on `monitor.queue`, each with
    /// only the arguments `monitor.select` asks for read (the others are skipped unread).
    /// The broker allows it to the bus's own user and root only. Blocks until the broker has
    /// answered; throws when it refused.
    public convenience init(
        monitoring bus: DBusBus, _ monitor: DBusMonitor, description: String = "monitor", limits: DBusLimits = DBusLimits(),
        queue: DispatchQueue = DispatchQueue(label: "dbus.lost"), onLost: @escaping @Sendable (DBusError) -> Void = { _ in }
    ) throws(DBusError) {
        try self.init(bus, description: description, limits: limits, monitor: monitor, queue: queue, onLost: onLost)
    }

    private init(
        _ bus: DBusBus, description: String, limits: DBusLimits, monitor: DBusMonitor?, queue: DispatchQueue,
        onLost: @escaping @Sendable (DBusError) -> Void
    ) throws(DBusError) {
        self.limits = limits
        inbox = Mutex(Inbox())
        do {
            wakeDescriptor = try SystemCalls.wakeCounter()
        } catch {
            throw .failed("eventfd", errno: error.errno)
        }
        let opened = Mutex<Result<Void, DBusError>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        finished.enter()
        let wake = wakeDescriptor
        let thread = Thread { [self] in
            // "dbus " and the description's first 10 bytes: the kernel keeps 15 (`ps -L`, /proc).
            SystemCalls.nameThisThread("dbus " + String(decoding: description.utf8.prefix(10), as: UTF8.self))
            let state: BusThread
            do throws(DBusError) {
                state = try BusThread(bus, description: description, limits: limits, monitor: monitor)
                opened.withLock { $0 = .success(()) }
                ready.signal()
            } catch {
                opened.withLock { $0 = .failure(error) }
                ready.signal()
                inbox.withLock { $0.ended = true }
                finished.leave()
                return
            }
            let lost = run(state, wake: wake)
            state.tearDown(lost: lost != nil)
            if let lost { queue.async { onLost(lost) } }
            finished.leave()
        }
        thread.start()
        ready.wait()
        if case let .failure(error) = opened.withLock({ $0 }) { throw error }
    }

    deinit {
        close()
        SystemCalls.close(wakeDescriptor)
    }

    /// Closes the connection: pending calls fail with `.disconnected`, subscriptions end.
    /// Waits for the bus thread to leave (never call it from a result handler's queue if that
    /// queue's work is what the thread waits for — it does not wait for any queue). Idempotent.
    public func close() {
        inbox.withLock { $0.closing = true }
        wakeBusThread()
        finished.wait()
    }

    /// True until the connection was closed or lost.
    public var isOpen: Bool { inbox.withLock { !$0.ended && !$0.closing } }

    /// Calls a method. `completion` runs once on `queue` with the reply's arguments or the error:
    /// `.remote` (an error reply and its name), `.timedOut`, `.disconnected`, `.limitReached`,
    /// `.invalidArgument`, `.malformed` (a reply that broke a decoding bound).
    public func call(
        destination: String, path: DBusObjectPath, interface: String, member: String,
        arguments: [DBusValue] = [], timeout: Duration = .seconds(25), queue: DispatchQueue,
        completion: @escaping @Sendable (Result<[DBusValue], DBusError>) -> Void
    ) {
        do {
            for argument in arguments { try argument.checkWellFormed() }
        } catch {
            queue.async { completion(.failure(error)) }
            return
        }
        let microseconds = Self.microseconds(timeout, limit: limits.maximumTimeoutMicroseconds)
        let request = CallRequest(
            destination: destination, path: path, interface: interface, member: member,
            arguments: arguments, timeout: microseconds, queue: queue, completion: completion)
        if let refused = submit({ $0.send(request) }) {
            queue.async { completion(.failure(refused)) }
        }
    }

    /// Subscribes to signals matching `match`. `installed` runs once on `queue` when the broker
    /// accepted the rule (nil) or refused it; from then on `handler` receives the matching
    /// signals on `queue` (a serial queue, for their order) until `cancel()` or the connection's
    /// end (`.ended`).
    @discardableResult
    public func subscribe(
        _ match: DBusMatch, queue: DispatchQueue,
        installed: @escaping @Sendable (DBusError?) -> Void = { _ in },
        handler: @escaping @Sendable (DBusSignalEvent) -> Void
    ) -> DBusSubscription {
        let subscriber = Subscriber(
            rule: match.rule, queue: queue, limits: limits,
            handler: handler, installed: installed)
        let subscription = DBusSubscription(connection: self, subscriber: subscriber)
        if let refused = submit({ $0.add(subscriber) }) {
            queue.async { installed(refused) }
        }
        return subscription
    }

    func cancel(_ subscriber: Subscriber) {
        _ = submit { $0.remove(subscriber) }
    }

    /// Exports an object: method calls to `path` on `interface` from other peers reach `handler`
    /// on `queue` (decoded within `limits`), which answers each exactly once through its `reply`
    /// closure (from any thread); calls on other interfaces are left to sd-bus (`UnknownMethod`).
    /// `installed` reports whether sd-bus took the path. The smallest export there is: no
    /// properties, no introspection data, no bus name — what a callback object such as BlueZ's
    /// `Agent1` needs. `DBusExport.cancel()` removes it; the connection's end does too.
    @discardableResult
    public func export(
        _ path: DBusObjectPath, interface: String, queue: DispatchQueue,
        installed: @escaping @Sendable (DBusError?) -> Void = { _ in },
        handler: @escaping @Sendable (DBusMethodCall, _ reply: @escaping @Sendable (DBusMethodReply) -> Void) -> Void
    ) -> DBusExport {
        let exporter = Exporter(path: path, interface: interface, queue: queue, limits: limits, handler: handler)
        let export = DBusExport(connection: self, exporter: exporter)
        exporter.connection = WeakConnection(self)
        if let refused = submit({ $0.add(exporter, installed: installed) }) {
            queue.async { installed(refused) }
        }
        return export
    }

    func unexport(_ exporter: Exporter) {
        _ = submit { $0.remove(exporter) }
    }

    func answer(_ token: UInt64, with reply: DBusMethodReply) {
        _ = submit { $0.answer(token, with: reply) }
    }

    /// This connection's unique name on the bus (`:1.42`), once the broker has answered `Hello`.
    public func uniqueName(queue: DispatchQueue, completion: @escaping @Sendable (String?) -> Void) {
        if submit({ thread in
            let name = thread.uniqueName()
            queue.async { completion(name) }
        }) != nil {
            queue.async { completion(nil) }
        }
    }

    /// Queues `request` for the bus thread; an error when the connection is finished or the
    /// queue is full.
    private func submit(_ request: @escaping @Sendable (BusThread) -> Void) -> DBusError? {
        let refusal: DBusError? = inbox.withLock { inbox in
            if inbox.ended || inbox.closing { return .disconnected }
            guard inbox.requests.count < limits.queuedRequests else {
                return .limitReached("\(limits.queuedRequests) requests queued for the bus thread")
            }
            inbox.requests.append(request)
            return nil
        }
        if refusal == nil { wakeBusThread() }
        return refusal
    }

    private func wakeBusThread() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { bytes in try? SystemCalls.write(wakeDescriptor, bytes, "eventfd") }
    }

    static func microseconds(_ duration: Duration, limit: UInt64) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 else { return 1 }
        let whole = UInt64(clamping: seconds).multipliedReportingOverflow(by: 1_000_000)
        let fraction = UInt64(attoseconds / 1_000_000_000_000)
        let total = whole.partialValue.addingReportingOverflow(fraction)
        let value = whole.overflow || total.overflow ? UInt64.max : total.partialValue
        return min(max(value, 1), limit)
    }

    /// The bus thread's loop. Returns the reason when the connection was lost, nil when closed.
    private func run(_ state: BusThread, wake: Int32) -> DBusError? {
        var entries = [pollfd(fd: -1, events: 0, revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
        while true {
            let (requests, closing) = inbox.withLock { inbox in
                defer { inbox.requests.removeAll(keepingCapacity: true) }
                return (inbox.requests, inbox.closing)
            }
            for request in requests { request(state) }
            if closing {
                inbox.withLock { $0.ended = true }
                return nil
            }
            if let lost = state.process() {
                inbox.withLock { $0.ended = true }
                return lost
            }
            let wait = state.pollParameters()
            entries[0] = pollfd(fd: wait.descriptor, events: wait.events, revents: 0)
            entries[1].revents = 0
            do {
                _ = try SystemCalls.poll(&entries, timeoutMilliseconds: wait.milliseconds)
            } catch {
                inbox.withLock { $0.ended = true }
                return .failed("poll", errno: error.errno)
            }
            if entries[1].revents != 0 {
                var counter: UInt64 = 0
                _ = withUnsafeMutableBytes(of: &counter) { bytes in try? SystemCalls.read(wake, into: bytes, "eventfd") }
            }
        }
    }
}

/// A call as the caller asked for it, on its way to the bus thread.
struct CallRequest: Sendable {
    let destination: String
    let path: DBusObjectPath
    let interface: String
    let member: String
    let arguments: [DBusValue]
    let timeout: UInt64
    let queue: DispatchQueue
    let completion: @Sendable (Result<[DBusValue], DBusError>) -> Void
}

/// A call waiting for its reply; sd-bus holds an unretained pointer to it as userdata, the
/// bus thread's table holds the reference.
private final class PendingCall {
    let id: UInt64
    let request: CallRequest
    let thread: BusThread
    /// CLOCK_MONOTONIC µs after which a NoReply is this call's own timeout.
    let deadline: UInt64

    init(id: UInt64, request: CallRequest, thread: BusThread, deadline: UInt64) {
        self.id = id
        self.request = request
        self.thread = thread
        self.deadline = deadline
    }
}

/// Everything that touches sd-bus, confined to the connection's own thread.
final class BusThread {
    private let bus: OpaquePointer
    private let limits: DBusLimits
    private let owner = pthread_self()
    private var pending: [UInt64: PendingCall] = [:]
    private var nextCall: UInt64 = 0
    private var subscriptions: [ObjectIdentifier: (subscriber: Subscriber, slot: OpaquePointer?)] = [:]
    private var exports: [ObjectIdentifier: (exporter: Exporter, slot: OpaquePointer?)] = [:]
    /// Method calls to our objects not yet answered: the message, referenced until the reply.
    private var unanswered: [UInt64: OpaquePointer] = [:]
    private var nextAnswer: UInt64 = 0

    /// The monitor this connection is, kept alive while sd-bus holds it as the filter's userdata.
    private var monitor: DBusMonitor?
    private var monitorSlot: OpaquePointer?

    init(_ which: DBusBus, description: String, limits: DBusLimits, monitor: DBusMonitor? = nil) throws(DBusError) {
        self.limits = limits
        var bus: OpaquePointer?
        let result: Int32
        switch (which, monitor) {
        case (.system, nil): result = sd_bus_open_system_with_description(&bus, description)
        case (.session, nil): result = sd_bus_open_user_with_description(&bus, description)
        case (_, .some):
            guard let address = Self.address(of: which), !address.utf8.contains(0) else {
                throw .invalidArgument("no address for \(DBusText.escaped("\(which)"))")
            }
            var created = sd_bus_new(&bus)
            if created >= 0 { created = sd_bus_set_description(bus, description) }
            if created >= 0 { created = sd_bus_set_address(bus, address) }
            // A monitor exposes nothing and answers nothing; sd-bus hands it every message (busctl's order).
            if created >= 0 { created = sd_bus_set_monitor(bus, 1) }
            if created >= 0 { created = sd_bus_set_bus_client(bus, 1) }
            if created >= 0 { created = sd_bus_start(bus) }
            if created < 0, let bus { sd_bus_unref(bus) }
            result = created
        case (let .address(address), nil):
            guard !address.utf8.contains(0) else { throw .invalidArgument("bus address with a NUL byte") }
            var created = sd_bus_new(&bus)
            if created >= 0 { created = sd_bus_set_description(bus, description) }
            if created >= 0 { created = sd_bus_set_address(bus, address) }
            // Without this a bus made by sd_bus_new talks peer-to-peer and never sends Hello.
            if created >= 0 { created = sd_bus_set_bus_client(bus, 1) }
            if created >= 0 { created = sd_bus_negotiate_fds(bus, 1) }
            if created >= 0 { created = sd_bus_start(bus) }
            if created < 0, let bus { sd_bus_unref(bus) }
            result = created
        }
        guard result >= 0, let bus else { throw .failed("open bus \(DBusText.escaped("\(which)"))", errno: -result) }
        self.bus = bus
        if let monitor {
            do throws(DBusError) {
                try becomeMonitor(monitor)
            } catch {
                sd_bus_flush_close_unref(bus)
                throw error
            }
        }
    }

    /// The address sd-bus would use for a bus, for a connection it must build itself (a monitor).
    static func address(of bus: DBusBus) -> String? {
        let environment = ProcessInfo.processInfo.environment
        switch bus {
        case .address(let address): return address
        case .system: return environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "unix:path=/run/dbus/system_bus_socket"
        case .session:
            if let address = environment["DBUS_SESSION_BUS_ADDRESS"] { return address }
            return environment["XDG_RUNTIME_DIR"].map { "unix:path=\($0)/bus" }
        }
    }

    /// `BecomeMonitor(as rules, u 0)`, waited for on this thread (the connection is new: nothing
    /// else waits), then the filter that receives every message.
    private func becomeMonitor(_ monitor: DBusMonitor) throws(DBusError) {
        var call: OpaquePointer?
        var result = sd_bus_message_new_method_call(
            bus, &call, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Monitoring", "BecomeMonitor")
        guard result >= 0, let call else { throw .failed("sd_bus_message_new_method_call", errno: -result) }
        defer { sd_bus_message_unref(call) }
        try append(.array(.string, monitor.rules.map { .string($0) }), to: call)
        try append(.uint32(0), to: call)
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        result = sd_bus_call(bus, call, 10_000_000, &error, &reply)
        if let reply { sd_bus_message_unref(reply) }
        guard result >= 0 else {
            throw DBusError(
                name: error.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed",
                message: error.message.map { String(cString: $0) } ?? "BecomeMonitor failed (errno \(-result))")
        }
        self.monitor = monitor
        var slot: OpaquePointer?
        result = sd_bus_add_filter(
            bus, &slot,
            { message, userdata, _ in
                guard let message, let userdata else { return 0 }
                let monitor = Unmanaged<DBusMonitor>.fromOpaque(userdata).takeUnretainedValue()
                if let seen = BusThread.decodeMonitored(message, monitor: monitor) { monitor.deliver(seen) }
                // Consumed: otherwise sd-bus goes on to answer a monitored method call ("unknown
                // object"), and a monitor that sends is disconnected by the broker.
                return 1
            }, Unmanaged.passUnretained(monitor).toOpaque())
        guard result >= 0 else { throw .failed("sd_bus_add_filter", errno: -result) }
        monitorSlot = slot
    }

    /// A monitored message's header and the arguments its monitor selects; nil when one of
    /// those breaks a decoding bound.
    static func decodeMonitored(_ message: OpaquePointer, monitor: DBusMonitor) -> DBusMonitoredMessage? {
        var type: UInt8 = 0
        guard sd_bus_message_get_type(message, &type) >= 0,
            let kind = DBusMonitoredMessage.Kind(rawValue: type)
        else { return nil }
        var serial: UInt64 = 0
        _ = sd_bus_message_get_cookie(message, &serial)
        var replySerial: UInt64 = 0
        let hasReply = sd_bus_message_get_reply_cookie(message, &replySerial) >= 0
        var seen = DBusMonitoredMessage(
            kind: kind, serial: serial, replySerial: hasReply ? replySerial : nil,
            sender: sd_bus_message_get_sender(message).map { String(cString: $0) },
            destination: sd_bus_message_get_destination(message).map { String(cString: $0) },
            path: sd_bus_message_get_path(message).flatMap { try? DBusObjectPath(String(cString: $0)) },
            interface: sd_bus_message_get_interface(message).map { String(cString: $0) },
            member: sd_bus_message_get_member(message).map { String(cString: $0) }, arguments: [:])
        let wanted = monitor.select(seen)
        guard !wanted.isEmpty else { return seen }
        var reader = MessageReader(message: message, limits: monitor.limits)
        do { seen.arguments = try reader.readSelected(wanted) } catch { return nil }
        return seen
    }

    private func confined() { precondition(pthread_equal(owner, pthread_self()) != 0, "sd-bus used off its thread") }

    /// Runs `sd_bus_process` until it has nothing left, or at most 256 times so that a peer's
    /// flood cannot starve the requests of other threads (sd-bus then reports a timeout of 0 and
    /// the loop comes straight back); the reason when the connection is gone.
    func process() -> DBusError? {
        confined()
        for _ in 0..<256 {
            let result = sd_bus_process(bus, nil)
            if result < 0 {
                return result == -ECONNRESET || result == -ENOTCONN ? .disconnected : .failed("sd_bus_process", errno: -result)
            }
            if result == 0 { break }
        }
        return sd_bus_is_open(bus) > 0 ? nil : .disconnected
    }

    func pollParameters() -> (descriptor: Int32, events: Int16, milliseconds: Int32) {
        confined()
        let descriptor = sd_bus_get_fd(bus)
        let events = sd_bus_get_events(bus)
        var deadline: UInt64 = 0
        var milliseconds: Int32 = -1
        if sd_bus_get_timeout(bus, &deadline) >= 0, deadline != UInt64.max {
            // sd-bus gives an absolute CLOCK_MONOTONIC time in µs; rounded up so the loop never
            // wakes just before it and spins.
            let now = Self.monotonicMicroseconds()
            let left = deadline > now ? deadline - now : 0
            milliseconds = Int32(clamping: (left + 999) / 1000)
        }
        return (descriptor, Int16(truncatingIfNeeded: max(events, 0)), milliseconds)
    }

    static func monotonicMicroseconds() -> UInt64 { UInt64(clamping: LinuxSystemClock.read(CLOCK_MONOTONIC) / 1000) }

    func tearDown(lost: Bool) {
        confined()
        if let slot = monitorSlot { sd_bus_slot_unref(slot) }
        monitorSlot = nil
        monitor?.end()
        let calls = pending.values
        pending.removeAll()
        for call in calls {
            let request = call.request
            request.queue.async { request.completion(.failure(.disconnected)) }
        }
        let subscribers = subscriptions.values
        subscriptions.removeAll()
        for entry in subscribers {
            if let slot = entry.slot { sd_bus_slot_unref(slot) }
            entry.subscriber.end()
        }
        for entry in exports.values {
            if let slot = entry.slot { sd_bus_slot_unref(slot) }
        }
        exports.removeAll()
        for message in unanswered.values { sd_bus_message_unref(message) }
        unanswered.removeAll()
        if lost {
            sd_bus_close_unref(bus)
        } else {
            sd_bus_flush_close_unref(bus)
        }
    }

    // MARK: calls

    func send(_ request: CallRequest) {
        confined()
        guard pending.count < limits.pendingCalls else {
            let limit = limits.pendingCalls
            request.queue.async { request.completion(.failure(.limitReached("\(limit) calls pending"))) }
            return
        }
        var message: OpaquePointer?
        var result = sd_bus_message_new_method_call(
            bus, &message, request.destination, request.path.rawValue,
            request.interface, request.member)
        defer { if let message { sd_bus_message_unref(message) } }
        guard result >= 0, let message else {
            let result = result
            request.queue.async {
                request.completion(
                    .failure(.invalidArgument("method call \(DBusText.escaped(request.member)) (errno \(-result))")))
            }
            return
        }
        do {
            for argument in request.arguments { try append(argument, to: message) }
        } catch {
            request.queue.async { request.completion(.failure(error)) }
            return
        }
        nextCall &+= 1
        let call = PendingCall(
            id: nextCall, request: request, thread: self,
            deadline: Self.monotonicMicroseconds() &+ request.timeout)
        pending[call.id] = call
        // A floating slot (nil): sd-bus calls the handler exactly once — reply, error reply,
        // timeout or connection end — and the table entry goes then.
        result = sd_bus_call_async(
            bus, nil, message,
            { reply, userdata, _ in
                guard let userdata else { return 0 }
                let call = Unmanaged<PendingCall>.fromOpaque(userdata).takeUnretainedValue()
                call.thread.finish(call, reply: reply)
                return 0
            }, Unmanaged.passUnretained(call).toOpaque(), request.timeout)
        if result < 0 {
            pending[call.id] = nil
            let error: DBusError =
                result == -ENOTCONN || result == -ECONNRESET ? .disconnected : .failed("sd_bus_call_async", errno: -result)
            request.queue.async { request.completion(.failure(error)) }
        }
    }

    private func finish(_ call: PendingCall, reply: OpaquePointer?) {
        confined()
        guard pending.removeValue(forKey: call.id) != nil else { return }
        let outcome: Result<[DBusValue], DBusError>
        if let reply {
            if sd_bus_message_is_method_error(reply, nil) > 0 {
                let error = sd_bus_message_get_error(reply)
                let name = error?.pointee.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
                let text = error?.pointee.message.map { String(cString: $0) } ?? ""
                // sd-bus answers a call itself with NoReply when its timeout passes and when the
                // connection ends; a broker sends NoReply when the service left without replying.
                if name == "org.freedesktop.DBus.Error.NoReply", sd_bus_is_open(bus) <= 0 {
                    outcome = .failure(.disconnected)
                } else if name == "org.freedesktop.DBus.Error.NoReply", Self.monotonicMicroseconds() >= call.deadline {
                    outcome = .failure(.timedOut)
                } else {
                    outcome = .failure(DBusError(name: name, message: text))
                }
            } else {
                do { outcome = .success(try readArguments(reply)) } catch { outcome = .failure(error) }
            }
        } else {
            outcome = .failure(.disconnected)
        }
        let request = call.request
        request.queue.async { request.completion(outcome) }
    }

    // MARK: signals

    func add(_ subscriber: Subscriber) {
        confined()
        guard subscriptions.count < limits.subscriptions else {
            let limit = limits.subscriptions
            subscriber.queue.async { subscriber.installed(.limitReached("\(limit) subscriptions")) }
            return
        }
        var slot: OpaquePointer?
        let userdata = Unmanaged.passUnretained(subscriber).toOpaque()
        let result = sd_bus_add_match_async(
            bus, &slot, subscriber.rule,
            { message, userdata, _ in
                guard let message, let userdata else { return 0 }
                let subscriber = Unmanaged<Subscriber>.fromOpaque(userdata).takeUnretainedValue()
                subscriber.deliver(BusThread.decodeSignal(message, limits: subscriber.limits))
                return 0
            },
            { reply, userdata, _ in
                guard let userdata else { return 0 }
                let subscriber = Unmanaged<Subscriber>.fromOpaque(userdata).takeUnretainedValue()
                var refusal: DBusError?
                if let reply, sd_bus_message_is_method_error(reply, nil) > 0 {
                    let error = sd_bus_message_get_error(reply)
                    refusal = DBusError(
                        name: error?.pointee.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed",
                        message: error?.pointee.message.map { String(cString: $0) } ?? "")
                }
                // Returning 0 keeps the connection open when the broker refused the rule.
                let outcome = refusal
                subscriber.queue.async { subscriber.installed(outcome) }
                return 0
            }, userdata)
        guard result >= 0 else {
            subscriber.queue.async { subscriber.installed(.failed("sd_bus_add_match_async", errno: -result)) }
            return
        }
        subscriptions[ObjectIdentifier(subscriber)] = (subscriber, slot)
    }

    func remove(_ subscriber: Subscriber) {
        confined()
        guard let entry = subscriptions.removeValue(forKey: ObjectIdentifier(subscriber)) else { return }
        if let slot = entry.slot { sd_bus_slot_unref(slot) }
    }

    // MARK: exported objects

    func uniqueName() -> String? {
        confined()
        var name: UnsafePointer<CChar>?
        guard sd_bus_get_unique_name(bus, &name) >= 0, let name else { return nil }
        return String(cString: name)
    }

    func add(_ exporter: Exporter, installed: @escaping @Sendable (DBusError?) -> Void) {
        confined()
        guard exports.count < limits.subscriptions else {
            let limit = limits.subscriptions
            exporter.queue.async { installed(.limitReached("\(limit) exported objects")) }
            return
        }
        var slot: OpaquePointer?
        let result = sd_bus_add_object(
            bus, &slot, exporter.path.rawValue,
            { message, userdata, _ in
                guard let message, let userdata else { return 0 }
                let exporter = Unmanaged<Exporter>.fromOpaque(userdata).takeUnretainedValue()
                guard let thread = exporter.thread else { return 0 }
                return thread.dispatch(message, to: exporter)
            }, Unmanaged.passUnretained(exporter).toOpaque())
        guard result >= 0 else {
            exporter.queue.async { installed(.failed("sd_bus_add_object", errno: -result)) }
            return
        }
        exporter.thread = self
        exports[ObjectIdentifier(exporter)] = (exporter, slot)
        exporter.queue.async { installed(nil) }
    }

    func remove(_ exporter: Exporter) {
        confined()
        guard let entry = exports.removeValue(forKey: ObjectIdentifier(exporter)) else { return }
        if let slot = entry.slot { sd_bus_slot_unref(slot) }
        exporter.thread = nil
    }

    /// A message for an exported path: a method call on its interface goes to the handler
    /// (1: handled, the reply follows); anything else is left to sd-bus (0).
    private func dispatch(_ message: OpaquePointer, to exporter: Exporter) -> Int32 {
        confined()
        guard sd_bus_message_is_method_call(message, exporter.interface, nil) > 0, !exporter.cancelled.withLock({ $0 }) else {
            return 0
        }
        guard unanswered.count < limits.pendingCalls else {
            reply(message, error: "org.freedesktop.DBus.Error.LimitsExceeded", text: "too many calls waiting for an answer")
            return 1
        }
        let arguments: [DBusValue]
        var reader = MessageReader(message: message, limits: limits)
        do {
            arguments = try reader.readAll()
        } catch {
            reply(message, error: "org.freedesktop.DBus.Error.InvalidArgs", text: "\(error)")
            return 1
        }
        let call = DBusMethodCall(
            sender: sd_bus_message_get_sender(message).map { String(cString: $0) }, path: exporter.path,
            interface: exporter.interface, member: sd_bus_message_get_member(message).map { String(cString: $0) } ?? "",
            arguments: arguments)
        nextAnswer &+= 1
        let token = nextAnswer
        unanswered[token] = sd_bus_message_ref(message)
        let connection = exporter.connection
        let once = AnswerOnce()
        exporter.queue.async {
            exporter.handler(call) { reply in
                // Exactly once: a second answer is ignored.
                guard once.first() else { return }
                connection?.value?.answer(token, with: reply)
            }
        }
        return 1
    }

    func answer(_ token: UInt64, with answer: DBusMethodReply) {
        confined()
        guard let message = unanswered.removeValue(forKey: token) else { return }
        defer { sd_bus_message_unref(message) }
        switch answer {
        case .error(let name, let text):
            reply(message, error: name, text: text)
        case .values(let values):
            var reply: OpaquePointer?
            guard sd_bus_message_new_method_return(message, &reply) >= 0, let reply else { return }
            defer { sd_bus_message_unref(reply) }
            do {
                for value in values {
                    try value.checkWellFormed()
                    try append(value, to: reply)
                }
            } catch {
                self.reply(message, error: "org.freedesktop.DBus.Error.Failed", text: "the reply could not be built")
                return
            }
            _ = sd_bus_send(bus, reply, nil)
        }
    }

    private func reply(_ message: OpaquePointer, error name: String, text: String) {
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { sd_bus_error_free(&error) }
        // sd-bus checks the name; a malformed one becomes its own generic error.
        _ = sd_bus_error_set(&error, name, text)
        _ = sd_bus_reply_method_error(message, &error)
    }

    static func decodeSignal(_ message: OpaquePointer, limits: DBusLimits) -> DBusMessage? {
        let arguments: [DBusValue]
        var reader = MessageReader(message: message, limits: limits)
        do { arguments = try reader.readAll() } catch { return nil }
        return DBusMessage(
            sender: sd_bus_message_get_sender(message).map { String(cString: $0) },
            path: sd_bus_message_get_path(message).flatMap { try? DBusObjectPath(String(cString: $0)) },
            interface: sd_bus_message_get_interface(message).map { String(cString: $0) },
            member: sd_bus_message_get_member(message).map { String(cString: $0) },
            arguments: arguments)
    }

    private func readArguments(_ message: OpaquePointer) throws(DBusError) -> [DBusValue] {
        var reader = MessageReader(message: message, limits: limits)
        return try reader.readAll()
    }

    // MARK: marshalling

    private func append(_ value: DBusValue, to message: OpaquePointer) throws(DBusError) {
        func check(_ result: Int32, _ what: String) throws(DBusError) {
            if result < 0 { throw .invalidArgument("\(what) (errno \(-result))") }
        }
        func basic<T: BitwiseCopyable>(_ code: Character, _ value: T) throws(DBusError) {
            var copy = value
            try check(sd_bus_message_append_basic(message, CChar(code.asciiValue!), &copy), "append \(code)")
        }
        func text(_ code: Character, _ value: String) throws(DBusError) {
            try check(value.withCString { sd_bus_message_append_basic(message, CChar(code.asciiValue!), $0) }, "append \(code)")
        }
        func open(_ code: Character, _ contents: String) throws(DBusError) {
            try check(sd_bus_message_open_container(message, CChar(code.asciiValue!), contents), "open \(code)\(contents)")
        }
        func close() throws(DBusError) { try check(sd_bus_message_close_container(message), "close container") }
        switch value {
        case let .byte(number): try basic("y", number)
        case let .boolean(flag): try basic("b", Int32(flag ? 1 : 0))
        case let .int16(number): try basic("n", number)
        case let .uint16(number): try basic("q", number)
        case let .int32(number): try basic("i", number)
        case let .uint32(number): try basic("u", number)
        case let .int64(number): try basic("x", number)
        case let .uint64(number): try basic("t", number)
        case let .double(number): try basic("d", number)
        case let .string(string): try text("s", string)
        case let .objectPath(path): try text("o", path.rawValue)
        case let .signature(signature): try text("g", signature.description)
        case let .unixFD(descriptor):
            // sd-bus duplicates the fd into the message; ours stays open and owned here.
            guard let number = descriptor.descriptor else { throw .invalidArgument("a closed fd") }
            try basic("h", number)
        case let .array(element, values):
            try open("a", element.description)
            for value in values { try append(value, to: message) }
            try close()
        case let .dictionary(key, valueType, entries):
            let entry = "\(key)\(valueType)"
            try open("a", "{\(entry)}")
            for item in entries {
                try open("e", entry)
                try append(item.key, to: message)
                try append(item.value, to: message)
                try close()
            }
            try close()
        case let .structure(fields):
            try open("r", fields.map(\.type.description).joined())
            for field in fields { try append(field, to: message) }
            try close()
        case let .variant(inner):
            try open("v", inner.type.description)
            try append(inner, to: message)
            try close()
        }
    }
}

/// Reads a message's arguments into values, within the limits: every element counts against
/// the value budget, every string against the byte budget, every container against the depth.
private struct MessageReader {
    let message: OpaquePointer
    var values: Int
    var textBytes: Int
    let limits: DBusLimits
    let depth: Int

    init(message: OpaquePointer, limits: DBusLimits) {
        self.message = message
        values = limits.valuesPerMessage
        textBytes = limits.textBytesPerMessage
        depth = limits.depth
        self.limits = limits
    }

    mutating func readAll() throws(DBusError) -> [DBusValue] {
        var arguments: [DBusValue] = []
        while let value = try next(level: 0) { arguments.append(value) }
        return arguments
    }

    /// The top-level arguments at `positions`; every other one is skipped without being read
    /// into a value (`sd_bus_message_skip`).
    mutating func readSelected(_ positions: Set<Int>) throws(DBusError) -> [Int: DBusValue] {
        var selected: [Int: DBusValue] = [:]
        var position = 0
        while position <= (positions.max() ?? -1) {
            if positions.contains(position) {
                guard let value = try next(level: 0) else { break }
                selected[position] = value
            } else {
                var code: CChar = 0
                var contents: UnsafePointer<CChar>?
                let peeked = sd_bus_message_peek_type(message, &code, &contents)
                try check(peeked, "peek")
                if peeked == 0 { break }
                try check(sd_bus_message_skip(message, nil), "skip")
            }
            position += 1
        }
        return selected
    }

    private func check(_ result: Int32, _ what: String) throws(DBusError) {
        if result < 0 { throw .malformed("\(what) (errno \(-result))") }
    }

    private func basic<T: BitwiseCopyable>(_ code: CChar, _ initial: T) throws(DBusError) -> T {
        var value = initial
        try check(sd_bus_message_read_basic(message, code, &value), "read \(UnicodeScalar(UInt8(bitPattern: code)))")
        return value
    }

    private mutating func text(_ code: CChar) throws(DBusError) -> String {
        var pointer: UnsafePointer<CChar>?
        try check(sd_bus_message_read_basic(message, code, &pointer), "read text")
        guard let pointer else { throw .malformed("text without bytes") }
        let length = strlen(pointer)
        textBytes -= length
        guard textBytes >= 0 else { throw .malformed("more text than \(limits.textBytesPerMessage) bytes in a message") }
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self)
    }

    /// The next value at this level, or nil at the end of the enclosing container.
    private mutating func next(level: Int) throws(DBusError) -> DBusValue? {
        var code: CChar = 0
        var contentsPointer: UnsafePointer<CChar>?
        let peeked = sd_bus_message_peek_type(message, &code, &contentsPointer)
        try check(peeked, "peek")
        if peeked == 0 { return nil }
        values -= 1
        guard values >= 0 else { throw .malformed("more than the value budget in one message") }
        let contents = contentsPointer.map { String(cString: $0) } ?? ""
        switch UInt8(bitPattern: code) {
        case UInt8(ascii: "y"): return .byte(try basic(code, UInt8(0)))
        case UInt8(ascii: "b"): return .boolean(try basic(code, Int32(0)) != 0)
        case UInt8(ascii: "n"): return .int16(try basic(code, Int16(0)))
        case UInt8(ascii: "q"): return .uint16(try basic(code, UInt16(0)))
        case UInt8(ascii: "i"): return .int32(try basic(code, Int32(0)))
        case UInt8(ascii: "u"): return .uint32(try basic(code, UInt32(0)))
        case UInt8(ascii: "x"): return .int64(try basic(code, Int64(0)))
        case UInt8(ascii: "t"): return .uint64(try basic(code, UInt64(0)))
        case UInt8(ascii: "d"): return .double(try basic(code, Double(0)))
        case UInt8(ascii: "s"): return .string(try text(code))
        case UInt8(ascii: "o"): return .objectPath(try DBusObjectPath(try text(code)))
        case UInt8(ascii: "g"):
            let signature = try text(code)
            do { return .signature(try DBusSignature(signature)) } catch { throw .malformed("signature: \(error)") }
        case UInt8(ascii: "h"):
            let borrowed = try basic(code, Int32(-1))
            // The message owns its fd; a duplicate outlives it.
            let owned: Int32
            do throws(SystemError) { owned = try SystemCalls.duplicate(borrowed) } catch {
                throw .failed(error.call, errno: error.errno)
            }
            return .unixFD(DBusFileDescriptor(owning: owned))
        case UInt8(ascii: "a"):
            let type: DBusType
            do { type = try DBusSignature.single("a" + contents) } catch { throw .malformed("array signature: \(error)") }
            var elements: [DBusValue] = []
            try enter(code, contents, level: level)
            while let element = try next(level: level + 1) { elements.append(element) }
            try exit()
            switch type {
            case let .dictionary(key, value):
                var entries: [DBusDictionaryEntry] = []
                entries.reserveCapacity(elements.count)
                for element in elements {
                    guard case let .structure(pair) = element, pair.count == 2 else { throw .malformed("dictionary entry") }
                    entries.append(DBusDictionaryEntry(pair[0], pair[1]))
                }
                return .dictionary(key: key, value: value, entries)
            case let .array(element):
                return .array(element, elements)
            default:
                throw .malformed("array signature")
            }
        case UInt8(ascii: "e"), UInt8(ascii: "r"):
            var fields: [DBusValue] = []
            try enter(code, contents, level: level)
            while let field = try next(level: level + 1) { fields.append(field) }
            try exit()
            return .structure(fields)
        case UInt8(ascii: "v"):
            try enter(code, contents, level: level)
            guard let inner = try next(level: level + 1) else { throw .malformed("empty variant") }
            try exit()
            return .variant(inner)
        default:
            throw .malformed("type code \(code)")
        }
    }

    private func enter(_ code: CChar, _ contents: String, level: Int) throws(DBusError) {
        guard level + 1 <= depth else { throw .malformed("containers nested deeper than \(depth)") }
        try check(sd_bus_message_enter_container(message, code, contents), "enter container")
    }

    private func exit() throws(DBusError) {
        try check(sd_bus_message_exit_container(message), "exit container")
    }
}
