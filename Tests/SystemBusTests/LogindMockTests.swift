import Foundation
import SensorSimulation
import SensorTestKit
import SystemBus
import Testing

/// A realistic service: python-dbusmock's `logind` template (what 14/17 reads for the screen
/// lock), on a private broker. The session's properties come back typed, `GetSession` and
/// `ListSessions` decode, and `SetLockedHint` arrives as PropertiesChanged.
@Suite(.timeLimit(.minutes(3))) struct LogindMockTests {
    static let login1 = "org.freedesktop.login1"
    static let session = "org.freedesktop.login1.Session"

    @Test func readsASessionAndSeesItsLockedHintChange() throws {
        let rig = try LiveBus(service: false)
        try rig.bus.spawn(
            [
                "/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=\(rig.bus.address)", TestEnvironment.python, "-m", "dbusmock",
                "--system", "--template", "logind",
            ], log: "logind")
        try rig.waitForName(Self.login1, present: true)
        let connection = rig.connection
        func call(_ path: DBusObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = []) throws(DBusError)
            -> [DBusValue]
        {
            try LiveBus.wait { queue, completion in
                connection.call(
                    destination: Self.login1, path: path, interface: interface, member: member, arguments: arguments,
                    queue: queue, completion: completion)
            }
        }
        let manager = try DBusObjectPath("/org/freedesktop/login1")
        let added = try call(
            manager, "org.freedesktop.DBus.Mock", "AddSession",
            [.string("c1"), .string("seat0"), .uint32(1000), .string("alice"), .boolean(true)])
        // dbusmock's AddSession answers the path as a string (`s`), not an object path.
        let path = try DBusObjectPath(try expectArguments(added, "s")[0].as(String.self))
        #expect(path.rawValue == "/org/freedesktop/login1/session/c1")

        #expect(
            try LiveBus.wait {
                connection.property(
                    destination: Self.login1, path: path, interface: Self.session, name: "Active", queue: $0, completion: $1)
            } == .boolean(true))
        let properties = try LiveBus.wait {
            connection.properties(destination: Self.login1, path: path, interface: Self.session, queue: $0, completion: $1)
        }
        #expect(try properties["Name"]?.as(String.self) == "alice")
        #expect(properties["LockedHint"] == .boolean(false))
        #expect(
            properties["User"]
                == .structure([.uint32(1000), .objectPath(try DBusObjectPath("/org/freedesktop/login1/user/1000"))]))
        #expect(
            properties["Seat"]
                == .structure([.string("seat0"), .objectPath(try DBusObjectPath("/org/freedesktop/login1/seat/seat0"))]))

        let found = try call(manager, "org.freedesktop.login1.Manager", "GetSession", [.string("c1")])
        #expect(try expectArguments(found, "o")[0].as(DBusObjectPath.self) == path)
        let sessions = try call(manager, "org.freedesktop.login1.Manager", "ListSessions")
        #expect(
            try expectArguments(sessions, "a(susso)")[0]
                == .array(
                    .structure([.string, .uint32, .string, .string, .objectPath]),
                    [
                        .structure([.string("c1"), .uint32(1000), .string("alice"), .string("seat0"), .objectPath(path)])
                    ]))

        let log = EventLog()
        let subscription = try rig.subscribe(
            DBusPropertiesChanged.match(sender: Self.login1, path: path, interface: Self.session), log)
        defer { subscription.cancel() }
        _ = try call(path, Self.session, "SetLockedHint", [.boolean(true)])
        try log.wait("LockedHint's PropertiesChanged") { !$0.isEmpty }
        let change = try DBusPropertiesChanged(log.signals[0])
        #expect(change.path == path && change.changed["LockedHint"] == .boolean(true))
    }
}
