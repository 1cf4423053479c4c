import Dispatch
import Foundation
import ModemBridge
import SensorKitModel
import SensorSimulation
import SensorSystem
import SensorTestKit
import Synchronization
import SystemBus
import Testing

/// The recorder against a ModemManager stand-in that misbehaves: a call whose properties have the
/// wrong types, and more calls than the bridge follows. Nothing traps, the malformed call counts
/// no direction and no contact, and what is followed stops at the bound.
@Suite(.serialized) struct HostileModemManagerTests {
    static let template = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/dbus/modemmanager_voice.py").path
    static let service = "org.freedesktop.ModemManager1"

    @Test(
        .timeLimit(.minutes(3)),
        .needs(
            .tools([
                (PrivateBus.daemonPath, "dbus-daemon"), (TestEnvironment.python, "python3"), ("/usr/bin/timeout", "coreutils"),
            ])))
    func malformedAndTooManyCallsAreBoundedAndNeverTrap() throws {
        let bus = try PrivateBus(seconds: 60)
        defer { bus.close() }
        try bus.spawn(
            [
                "/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)", TestEnvironment.python, "-m", "dbusmock", "--system",
                "--template", Self.template,
            ],
            log: "modemmanager")
        let script = try DBusConnection(.address(bus.address), description: "modem-script")
        defer { script.close() }
        #expect(
            Self.eventually {
                (try? Self.call(
                    script, "/", DBusStandard.bus, "NameHasOwner", [.string(Self.service)], destination: DBusStandard.bus)) == [
                        .boolean(true)
                    ]
            })

        let logged = Mutex<[String]>([])
        let events = Mutex<[SourceEvent]>([])
        let settings = ModemSettings(intervalNanoseconds: 3_600_000_000_000)
        let recorder = ModemUsageRecorder(
            bus: .address(bus.address), settings: settings, clock: LinuxSystemClock(),
            log: { message in logged.withLock { $0.append(message.text) } })
        recorder.start(.phone, descriptor: ModemUsageSamples.descriptor(.phone, settings: settings)) { event in
            events.withLock { $0.append(event) }
        }

        let root = "/org/freedesktop/ModemManager1"
        let modem = try Self.call(script, root, "org.freedesktop.DBus.Mock", "AddModem", [.uint32(0)])
        guard case .objectPath(let modemPath)? = modem.first else { throw TestFailure("no modem path") }
        #expect(Self.eventually { logged.withLock { $0.contains { $0.contains("modem: \(modemPath.rawValue) ") } } })

        // A call whose Direction is a string and whose Number is a number, announced by CallAdded.
        let hostile = "\(root)/Call/100"
        try Self.call(
            script, root, "org.freedesktop.DBus.Mock", "AddObject",
            [
                .string(hostile), .string("org.freedesktop.ModemManager1.Call"),
                .dictionary(
                    key: .string, value: .variant,
                    [
                        DBusDictionaryEntry(.string("State"), .variant(.int32(3))),
                        DBusDictionaryEntry(.string("Direction"), .variant(.string("incoming"))),
                        DBusDictionaryEntry(.string("Number"), .variant(.int64(447_700_900_461))),
                    ]),
                .array(.structure([.string, .string, .string, .string]), []),
            ])
        try Self.call(
            script, modemPath.rawValue, "org.freedesktop.DBus.Mock", "EmitSignal",
            [
                .string("org.freedesktop.ModemManager1.Modem.Voice"), .string("CallAdded"), .string("o"),
                .array(.variant, [.variant(.objectPath(try DBusObjectPath(hostile)))]),
            ])
        // Then more calls than the bridge follows, each from its own number.
        for index in 1...(ModemManagerWatcher.maximumCalls + 6) {
            try Self.call(
                script, root, "org.freedesktop.DBus.Mock", "AddCall",
                [.objectPath(modemPath), .uint32(UInt32(index)), .int32(1), .int32(3), .string("+4930\(100_000 + index)")])
        }
        let reads = { bus.logText().components(separatedBy: "GetAll \(root)/Call/").count - 1 }
        #expect(Self.eventually { reads() == ModemManagerWatcher.maximumCalls }, "\(reads()) calls read")
        recorder.stop(.phone)

        let reports = events.withLock { $0 }.compactMap { event -> SourceBatch? in
            if case .samples(let batch) = event { batch } else { nil }
        }
        #expect(reports.count == 1)
        let columns = reports.first?.columns ?? []
        // Stored order: duration, incoming, outgoing, call duration, unique contacts.
        #expect(columns.count == 5)
        if columns.count == 5 {
            #expect(columns[1] == [Int64(ModemManagerWatcher.maximumCalls - 1)], "the malformed call has no direction")
            #expect(columns[2] == [0])
            #expect(columns[4] == [Int64(ModemManagerWatcher.maximumCalls - 1)], "the malformed call has no number")
        }
        #expect(!logged.withLock { $0.joined() }.contains("4930"), "a number reached the log")
    }

    @discardableResult
    static func call(
        _ connection: DBusConnection, _ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue],
        destination: String = service
    ) throws -> [DBusValue] {
        let outcome = Mutex<Result<[DBusValue], DBusError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        connection.call(
            destination: destination, path: try DBusObjectPath(path), interface: interface, member: member, arguments: arguments,
            timeout: .seconds(10), queue: DispatchQueue(label: "test.call")
        ) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try outcome.withLock { $0! }.get()
    }

    static func eventually(_ seconds: Double = 15, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            guard Date() < deadline else { return false }
            usleep(10_000)
        }
        return true
    }

    struct TestFailure: Error { let description: String; init(_ description: String) { self.description = description } }
}
