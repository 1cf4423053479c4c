import Foundation
import SensorSimulation
import SensorTestKit
import Testing
import SystemBus

/// A realistic service: python-dbusmock's `logind` template (what 14/17 reads for the screen
/// lock), on a private broker. The session's properties come back typed, `GetSession` and
/// `ListSessions` decode, and `SetLockedHint` arrives as PropertiesChanged.
@Suite(.timeLimit(.minutes(1))) struct LogindMockTests {
    static let login1 = "org.freedesktop.login1"
    static let session = "org.freedesktop.login1.Session"

    @Test func readsASessionAndSeesItsLockedHintChange() async throws {
        try TestEnvironment.require(LiveBus.needs)
        let bus = try PrivateBus(seconds: 60)
        defer { bus.close() }
        try bus.spawn(["/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)", TestEnvironment.python, "-m", "dbusmock", "--system",
                       "--template", "logind"], log: "logind")
        let connection = try DBusConnection(.address(bus.address))
        defer { connection.close() }
        let deadline = Date().addingTimeInterval(10)
        while try await !connection.nameHasOwner(Self.login1) {
            guard Date() < deadline else { throw LiveBus.Timeout(what: "dbusmock's logind\n\(bus.logText())") }
            try await Task.sleep(for: .milliseconds(20))
        }
        let manager = try DBusObjectPath("/org/freedesktop/login1")
        let added = try await connection.call(destination: Self.login1, path: manager, interface: "org.freedesktop.DBus.Mock",
                                              member: "AddSession",
                                              arguments: [.string("c1"), .string("seat0"), .uint32(1000), .string("alice"), .boolean(true)])
        // dbusmock's AddSession answers the path as a string (`s`), not an object path.
        let path = try DBusObjectPath(try expectArguments(added, "s")[0].as(String.self))
        #expect(path.rawValue == "/org/freedesktop/login1/session/c1")

        #expect(try await connection.property(destination: Self.login1, path: path, interface: Self.session, name: "Active") == .boolean(true))
        let properties = try await connection.properties(destination: Self.login1, path: path, interface: Self.session)
        #expect(try properties["Name"]?.as(String.self) == "alice")
        #expect(properties["LockedHint"] == .boolean(false))
        #expect(properties["User"] == .structure([.uint32(1000), .objectPath(try DBusObjectPath("/org/freedesktop/login1/user/1000"))]))
        #expect(properties["Seat"] == .structure([.string("seat0"), .objectPath(try DBusObjectPath("/org/freedesktop/login1/seat/seat0"))]))

        let found = try await connection.call(destination: Self.login1, path: manager, interface: "org.freedesktop.login1.Manager",
                                              member: "GetSession", arguments: [.string("c1")])
        #expect(try expectArguments(found, "o")[0].as(DBusObjectPath.self) == path)
        let sessions = try await connection.call(destination: Self.login1, path: manager, interface: "org.freedesktop.login1.Manager",
                                                 member: "ListSessions")
        #expect(try expectArguments(sessions, "a(susso)")[0] == .array(.structure([.string, .uint32, .string, .string, .objectPath]), [
            .structure([.string("c1"), .uint32(1000), .string("alice"), .string("seat0"), .objectPath(path)]),
        ]))

        let log = EventLog()
        let subscription = try await connection.subscribe(DBusPropertiesChanged.match(sender: Self.login1, path: path, interface: Self.session),
                                                          queue: log.queue, handler: log.record)
        defer { subscription.cancel() }
        _ = try await connection.call(destination: Self.login1, path: path, interface: Self.session, member: "SetLockedHint",
                                      arguments: [.boolean(true)])
        try await log.wait("LockedHint's PropertiesChanged") { !$0.isEmpty }
        let change = try DBusPropertiesChanged(log.signals[0])
        #expect(change.path == path && change.changed["LockedHint"] == .boolean(true))
    }
}
