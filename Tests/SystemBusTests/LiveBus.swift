import Dispatch
import Foundation
import SensorSimulation
import SensorSystem
import SensorTestKit
import Synchronization
import SystemBus

/// The live tests' rig: a private broker (`PrivateBus`), the Python test service
/// (`Tests/Fixtures/dbus/test_service.py`) on it, and a connection of ours.
final class LiveBus {
    static let service = "org.sensorkit.Test"
    static let object = try! DBusObjectPath("/org/sensorkit/Test")
    static let interface = "org.sensorkit.Test"
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/dbus/test_service.py").path

    static let needs = TestEnvironment.Need.tools([
        (PrivateBus.daemonPath, "dbus-daemon"), ("/usr/bin/timeout", "coreutils"), (TestEnvironment.python, "python3"),
    ])

    let bus: PrivateBus
    private(set) var service: ChildProcess?
    let connection: DBusConnection

    init(limits: DBusLimits = DBusLimits(), onLost: @escaping @Sendable (DBusError) -> Void = { _ in }) async throws {
        try TestEnvironment.require(Self.needs)
        bus = try PrivateBus(seconds: 60)
        connection = try DBusConnection(.address(bus.address), description: "tests", limits: limits, onLost: onLost)
        try await startService()
    }

    deinit {
        connection.close()
        bus.close()
    }

    func startService() async throws {
        service = try bus.spawn([TestEnvironment.python, Self.script, bus.address], log: "service")
        try await waitForName(Self.service, present: true)
    }

    func stopService() {
        if let service { bus.stop(service) }
        service = nil
    }

    func waitForName(_ name: String, present: Bool, seconds: Double = 10) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while try await connection.nameHasOwner(name) != present {
            guard Date() < deadline else { throw Timeout(what: "\(name) \(present ? "on" : "off") the bus\n\(bus.logText())") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func call(_ member: String, _ arguments: [DBusValue] = [], timeout: Duration = .seconds(10)) async throws(DBusError) -> [DBusValue] {
        try await connection.call(destination: Self.service, path: Self.object, interface: Self.interface, member: member,
                                  arguments: arguments, timeout: timeout)
    }

    struct Timeout: Error, CustomStringConvertible { let what: String; var description: String { "timed out waiting for \(what)" } }
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

    func wait(_ what: String, seconds: Double = 10, until condition: ([DBusSignalEvent]) -> Bool) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition(all) {
            guard Date() < deadline else { throw LiveBus.Timeout(what: "\(what); got \(all)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
