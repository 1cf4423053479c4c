import Dispatch
import Foundation
import Glibc
import SensorSimulation
import SensorSystem
import SensorTestKit
import Synchronization
import SystemBus

/// The live tests' rig: a private broker (`PrivateBus`), the Python test service
/// (`Tests/Fixtures/dbus/test_service.py`) on it, and a connection of ours.
///
/// The tests are synchronous and wait on the callback API: results arrive on Dispatch queues,
/// so a test keeps going while the rest of the suite's tests occupy Swift's cooperative pool
/// (the async forms are checked by one test, `theAsyncFormsWrapTheCallbacks`).
final class LiveBus {
    static let service = "org.sensorkit.Test"
    static let object = try! DBusObjectPath("/org/sensorkit/Test")
    static let interface = "org.sensorkit.Test"
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/dbus/test_service.py").path
    /// Generous: the whole suite on two busy cores can hold a process back for seconds.
    static let patience: Double = 45

    static let needs = TestEnvironment.Need.tools([
        (PrivateBus.daemonPath, "dbus-daemon"), ("/usr/bin/timeout", "coreutils"), (TestEnvironment.python, "python3"),
    ])

    let bus: PrivateBus
    private(set) var service: ChildProcess?
    let connection: DBusConnection

    init(
        limits: DBusLimits = DBusLimits(), description: String = "tests", service: Bool = true,
        onLost: @escaping @Sendable (DBusError) -> Void = { _ in }
    ) throws {
        try TestEnvironment.require(Self.needs)
        // Outlives the three-minute limit: the async test's continuations can wait minutes for
        // the cooperative pool behind the suite's blocking tests (CI: resumed after the bus, then
        // 120 s, had ended), and only the test's own limit should decide that it took too long.
        bus = try PrivateBus(seconds: 200)
        connection = try DBusConnection(.address(bus.address), description: description, limits: limits, onLost: onLost)
        if service { try startService() }
    }

    deinit {
        connection.close()
        bus.close()
    }

    func startService() throws {
        service = try bus.spawn([TestEnvironment.python, Self.script, bus.address], log: "service")
        try waitForName(Self.service, present: true)
    }

    func stopService() {
        if let service { bus.stop(service) }
        service = nil
    }

    func waitForName(_ name: String, present: Bool) throws {
        let deadline = Date().addingTimeInterval(Self.patience)
        while try Self.wait({ connection.nameHasOwner(name, queue: $0, completion: $1) }) != present {
            guard Date() < deadline else { throw Timeout(what: "\(name) \(present ? "on" : "off") the bus\n\(bus.logText())") }
            usleep(20_000)
        }
    }

    func call(_ member: String, _ arguments: [DBusValue] = [], timeout: Duration = .seconds(10)) throws(DBusError) -> [DBusValue]
    {
        try Self.wait { queue, completion in
            connection.call(
                destination: Self.service, path: Self.object, interface: Self.interface, member: member,
                arguments: arguments, timeout: timeout, queue: queue, completion: completion)
        }
    }

    /// Subscribes and returns once the broker installed the match.
    func subscribe(_ match: DBusMatch, _ log: EventLog) throws -> DBusSubscription {
        let installed = Mutex<DBusError??>(nil)
        let done = DispatchSemaphore(value: 0)
        let subscription = connection.subscribe(
            match, queue: log.queue,
            installed: { refusal in
                installed.withLock { $0 = .some(refusal) }
                done.signal()
            }, handler: log.record)
        guard done.wait(timeout: .now() + Self.patience) == .success else { throw Timeout(what: "AddMatch \(match.rule)") }
        if let refusal = installed.withLock({ $0 }) ?? nil { throw refusal }
        return subscription
    }

    /// Starts an operation of the callback API and waits for its result (every call has a
    /// timeout of its own, so this ends).
    static func wait<T: Sendable>(_ start: (DispatchQueue, @escaping @Sendable (Result<T, DBusError>) -> Void) -> Void)
        throws(DBusError) -> T
    {
        let outcome = Mutex<Result<T, DBusError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        start(DispatchQueue(label: "test.results")) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try outcome.withLock { $0! }.get()
    }

    struct Timeout: Error, CustomStringConvertible {
        let what: String; var description: String { "timed out waiting for \(what)" }
    }
}

/// Collects a subscription's events; `wait` polls until a condition holds or fails the test.
final class EventLog: Sendable {
    private let events = Mutex<[DBusSignalEvent]>([])
    let queue = DispatchQueue(label: "test.events")

    func record(_ event: DBusSignalEvent) { events.withLock { $0.append(event) } }

    var all: [DBusSignalEvent] { events.withLock { $0 } }

    var signals: [DBusMessage] {
        all.compactMap { if case let .signal(message) = $0 { return message } else { return nil } }
    }

    func wait(_ what: String, until condition: ([DBusSignalEvent]) -> Bool) throws {
        let deadline = Date().addingTimeInterval(LiveBus.patience)
        while !condition(all) {
            guard Date() < deadline else { throw LiveBus.Timeout(what: "\(what); got \(all)") }
            usleep(10_000)
        }
    }
}
