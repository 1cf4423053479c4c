import Dispatch
import Foundation
import SensorSimulation
import SensorTestKit
import Synchronization
import SystemBus
import Testing

/// Exported objects: another peer's method calls reach the handler and its answer goes back,
/// once; other interfaces and cancelled exports are sd-bus's "unknown" answers.
@Suite(.timeLimit(.minutes(3))) struct DBusExportTests {
    static let path = try! DBusObjectPath("/org/sensorkit/Callback")
    static let interface = "org.sensorkit.Callback"

    @Test func callsReachTheHandlerAndAreAnsweredOnce() throws {
        let live = try LiveBus(service: false)
        let caller = try DBusConnection(.address(live.bus.address), description: "caller")
        defer { caller.close() }
        let seen = Mutex<[DBusMethodCall]>([])
        let installed = DispatchSemaphore(value: 0)
        let export = live.connection.export(
            Self.path, interface: Self.interface, queue: DispatchQueue(label: "test.export"),
            installed: { error in
                #expect(error == nil)
                installed.signal()
            }
        ) { call, reply in
            seen.withLock { $0.append(call) }
            switch call.member {
            case "Twice":
                reply(.values([.string("first")]))
                reply(.values([.string("second")]))
            case "Refuse": reply(.error(name: "org.bluez.Error.Rejected", message: "no"))
            default: reply(.values([.uint32(UInt32(call.arguments.count)), .string(call.member)]))
            }
        }
        #expect(installed.wait(timeout: .now() + LiveBus.patience) == .success)
        let name = try #require(
            try LiveBus.wait { queue, completion in
                live.connection.uniqueName(queue: queue) { completion(.success($0)) }
            } as String?)
        func call(_ member: String, _ arguments: [DBusValue] = [], interface: String = Self.interface) throws(DBusError)
            -> [DBusValue]
        {
            try LiveBus.wait { queue, completion in
                caller.call(
                    destination: name, path: Self.path, interface: interface, member: member, arguments: arguments,
                    timeout: .seconds(10), queue: queue, completion: completion)
            }
        }
        let device = try DBusObjectPath("/org/bluez/hci0/dev_C0_FF_EE_00_00_10")
        #expect(
            try call("RequestConfirmation", [.objectPath(device), .uint32(123_456)]) == [
                .uint32(2), .string("RequestConfirmation"),
            ])
        let first = try #require(seen.withLock { $0.first })
        #expect(first.arguments == [.objectPath(device), .uint32(123_456)])
        #expect(first.path == Self.path && first.interface == Self.interface)
        let callerName = try LiveBus.wait { queue, completion in caller.uniqueName(queue: queue) { completion(.success($0)) } }
        #expect(first.sender == callerName)
        #expect(try call("Twice") == [.string("first")])
        #expect(throws: DBusError.remote(name: "org.bluez.Error.Rejected", message: "no")) { try call("Refuse") }
        #expect {
            try call("Anything", interface: "org.sensorkit.Other")
        } throws: { ($0 as? DBusError)?.name == "org.freedesktop.DBus.Error.UnknownMethod" }
        export.cancel()
        #expect {
            try call("RequestConfirmation")
        } throws: { ($0 as? DBusError)?.name?.hasPrefix("org.freedesktop.DBus.Error.Unknown") == true }
        #expect(seen.withLock { $0.count } == 3)
    }
}
