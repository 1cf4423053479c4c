import Dispatch
import Foundation
import Glibc
import SensorSimulation
import SensorSystem
import SensorTestKit
import Synchronization
import Testing
@testable import SystemBus

/// The connection against a real `dbus-daemon` and a Python service, each test on a private bus
/// of its own (docs/dbus.md §6). Every process runs under `timeout`; each test under a time limit.
@Suite(.timeLimit(.minutes(1))) struct DBusConnectionLiveTests {
    @Test func callsCarryEveryBasicTypeBothWays() async throws {
        let rig = try await LiveBus()
        let arguments: [DBusValue] = [
            .array(.byte, [.byte(0), .byte(255)]), .byte(7), .boolean(true), .int16(-32768), .uint16(65535), .int32(-1),
            .uint32(4_000_000_000), .int64(Int64.min), .uint64(UInt64.max), .double(-0.5), .string("grüß ✓"),
            .objectPath(try DBusObjectPath("/a/b")), .signature(try DBusSignature("a{sv}")),
        ]
        let reply = try await rig.call("Types", arguments)
        #expect(reply == [.string("ok")] + arguments)
    }

    @Test func nestedContainersRoundTripThroughAVariant() async throws {
        let rig = try await LiveBus()
        let value = DBusValue.structure([
            .dictionary(key: .string, value: .variant, [DBusDictionaryEntry(.string("n"), .variant(.int32(3))),
                                                        DBusDictionaryEntry(.string("l"), .variant(.array(.string, [.string("x")])))]),
            .array(.structure([.string, .uint32]), [.structure([.string("a"), .uint32(1)])]),
            .array(.string, []),
        ])
        let reply = try await rig.call("Echo", [.variant(value)])
        #expect(reply == [.variant(value)])
    }

    @Test func aSlowReplyTimesOutAndTheConnectionGoesOn() async throws {
        let rig = try await LiveBus()
        let started = Date()
        await #expect(throws: DBusError.timedOut) { try await rig.call("Sleep", [.double(3)], timeout: .milliseconds(200)) }
        let waited = Date().timeIntervalSince(started)
        #expect(waited >= 0.2 && waited < 1, "timed out after \(waited) s")
        #expect(try await rig.call("Echo", [.variant(.byte(1))]) == [.variant(.byte(1))])
    }

    @Test func anErrorReplyKeepsItsName() async throws {
        let rig = try await LiveBus()
        await #expect(throws: DBusError.remote(name: "org.sensorkit.Error.Refused", message: "not now\\x0a")) {
            try await rig.call("Fail", [.string("org.sensorkit.Error.Refused"), .string("not now\n")])
        }
        await #expect(throws: DBusError.remote(name: "org.freedesktop.DBus.Error.ServiceUnknown",
                                               message: "The name org.sensorkit.Nobody was not provided by any .service files")) {
            try await rig.connection.call(destination: "org.sensorkit.Nobody", path: LiveBus.object, interface: "x.Y", member: "Z")
        }
        await #expect(throws: DBusError.self) {
            try await rig.connection.call(destination: LiveBus.service, path: LiveBus.object, interface: "not an interface", member: "Z")
        }
    }

    @Test func signalsArriveInOrderOnTheSubscribersQueue() async throws {
        let rig = try await LiveBus()
        let log = EventLog()
        let subscription = try await rig.connection.subscribe(DBusMatch(interface: LiveBus.interface, member: "Ping"), queue: log.queue) {
            dispatchPrecondition(condition: .onQueue(log.queue))
            log.record($0)
        }
        _ = try await rig.call("Emit", [.string("hello"), .uint32(5)])
        try await log.wait("five pings") { $0.count == 5 }
        #expect(log.signals.map(\.arguments) == (0..<5).map { [.string("hello"), .uint32(UInt32($0))] })
        #expect(log.signals.allSatisfy { $0.path == LiveBus.object && $0.member == "Ping" && $0.sender?.hasPrefix(":") == true })
        subscription.cancel()
        _ = try await rig.call("Emit", [.string("late"), .uint32(1)])
        try await Task.sleep(for: .milliseconds(100))
        #expect(log.all.count == 5)
    }

    @Test func propertiesReadAndChangesArrive() async throws {
        let rig = try await LiveBus()
        #expect(try await rig.connection.property(destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface,
                                                  name: "Count") == .uint32(0))
        #expect(try await rig.connection.properties(destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface)
            == ["Count": .uint32(0), "Label": .string("start")])
        await #expect(throws: DBusError.remote(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no such property")) {
            try await rig.connection.property(destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface, name: "Nope")
        }
        let log = EventLog()
        let match = DBusPropertiesChanged.match(path: LiveBus.object, interface: LiveBus.interface)
        let subscription = try await rig.connection.subscribe(match, queue: log.queue, handler: log.record)
        defer { subscription.cancel() }
        try await rig.connection.setProperty(destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface,
                                             name: "Label", value: .string("moved"))
        try await log.wait("PropertiesChanged") { !$0.isEmpty }
        let change = try DBusPropertiesChanged(log.signals[0])
        #expect(change.path == LiveBus.object && change.interface == LiveBus.interface)
        #expect(change.changed == ["Label": .string("moved")] && change.invalidated.isEmpty)
    }

    @Test func objectManagerReportsObjectsComingAndGoing() async throws {
        let rig = try await LiveBus()
        #expect(try await rig.connection.managedObjects(destination: LiveBus.service, path: LiveBus.object).isEmpty)
        let log = EventLog()
        let added = try await rig.connection.subscribe(DBusInterfacesAdded.match(sender: LiveBus.service), queue: log.queue, handler: log.record)
        let removed = try await rig.connection.subscribe(DBusInterfacesRemoved.match(sender: LiveBus.service), queue: log.queue,
                                                         handler: log.record)
        defer { added.cancel(); removed.cancel() }
        let reply = try await rig.call("AddThing", [.string("strap")])
        let path = try DBusObjectPath("/org/sensorkit/Test/things/strap")
        #expect(reply == [.objectPath(path)])
        try await log.wait("InterfacesAdded") { !$0.isEmpty }
        let appeared = try DBusInterfacesAdded(log.signals[0])
        #expect(appeared.object == path && appeared.interfaces == ["org.sensorkit.Thing": ["Name": .string("strap"), "Level": .int16(-3)]])
        #expect(try await rig.connection.managedObjects(destination: LiveBus.service, path: LiveBus.object)
            == [path: ["org.sensorkit.Thing": ["Name": .string("strap"), "Level": .int16(-3)]]])
        _ = try await rig.call("RemoveThing", [.string("strap")])
        try await log.wait("InterfacesRemoved") { $0.count == 2 }
        let gone = try DBusInterfacesRemoved(log.signals[1])
        #expect(gone.object == path && gone.interfaces == ["org.sensorkit.Thing"])
    }

    @Test func anFdInAReplyIsOursToReadAndCloses() async throws {
        let rig = try await LiveBus()
        let reply = try await rig.call("OpenPipe", [.string("bytes through a pipe")])
        let descriptor = try expectArguments(reply, "h")[0].as(DBusFileDescriptor.self)
        let number = try #require(descriptor.descriptor)
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = try buffer.withUnsafeMutableBytes { try SystemCalls.read(number, into: $0) }
        #expect(String(decoding: buffer[..<count], as: UTF8.self) == "bytes through a pipe")
        descriptor.close()
        descriptor.close()
        #expect(descriptor.descriptor == nil)
        #expect(fcntl(number, F_GETFD) == -1 || !isPipe(number))
    }

    private func isPipe(_ descriptor: Int32) -> Bool {
        var status = stat()
        return fstat(descriptor, &status) == 0 && (status.st_mode & S_IFMT) == S_IFIFO
    }

    @Test func aServiceThatVanishesAndReturnsIsSeen() async throws {
        let rig = try await LiveBus()
        let log = EventLog()
        let owners = try await rig.connection.subscribe(DBusNameOwnerChanged.match(name: LiveBus.service), queue: log.queue, handler: log.record)
        defer { owners.cancel() }
        rig.stopService()
        try await log.wait("the name released") { $0.count == 1 }
        let gone = try DBusNameOwnerChanged(log.signals[0])
        #expect(gone.name == LiveBus.service && gone.oldOwner != nil && gone.newOwner == nil)
        await #expect(throws: DBusError.self) { try await rig.call("Echo", [.variant(.byte(1))]) }
        try await rig.startService()
        try await log.wait("the name taken again") { $0.count == 2 }
        let back = try DBusNameOwnerChanged(log.signals[1])
        #expect(back.oldOwner == nil && back.newOwner != nil && back.newOwner != gone.oldOwner)
        #expect(try await rig.call("Echo", [.variant(.byte(2))]) == [.variant(.byte(2))])
    }

    @Test func aDeadBrokerIsReportedAndAFreshConnectionWorks() async throws {
        let lost = Mutex<[DBusError]>([])
        let rig = try await LiveBus(onLost: { error in lost.withLock { $0.append(error) } })
        let log = EventLog()
        let pings = try await rig.connection.subscribe(DBusMatch(member: "Ping"), queue: log.queue, handler: log.record)
        let connection = rig.connection
        let pending = Task {
            try await connection.call(destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface, member: "Sleep",
                                      arguments: [.double(20)], timeout: .seconds(30))
        }
        try await Task.sleep(for: .milliseconds(100))
        rig.bus.kill()
        let outcome = await pending.result
        #expect(throws: DBusError.disconnected) { try outcome.get() }
        try await log.wait("the subscription ended") { $0 == [.ended] }
        let deadline = Date().addingTimeInterval(5)
        while lost.withLock({ $0.isEmpty }) && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(lost.withLock { $0 } == [.disconnected])
        #expect(!rig.connection.isOpen)
        await #expect(throws: DBusError.disconnected) { try await rig.call("Echo", [.variant(.byte(1))]) }
        pings.cancel()

        try rig.bus.start()
        let fresh = try DBusConnection(.address(rig.bus.address))
        defer { fresh.close() }
        #expect(try await fresh.nameHasOwner("org.freedesktop.DBus"))
    }

    @Test func repliesPastTheBoundsAreRefusedNotTrapped() async throws {
        var limits = DBusLimits()
        limits.valuesPerMessage = 1000
        limits.depth = 8
        let rig = try await LiveBus(limits: limits)
        #expect(try await rig.call("Huge", [.uint32(900)]).first.map { try $0.as([String].self).count } == 900)
        await #expect(throws: DBusError.malformed("more than the value budget in one message")) {
            try await rig.call("Huge", [.uint32(100_000)])
        }
        let shallow = try await rig.call("Deep", [.uint32(3)])
        #expect(shallow.count == 1)
        await #expect(throws: DBusError.malformed("containers nested deeper than 8")) { try await rig.call("Deep", [.uint32(10)]) }
        #expect(try await rig.call("Echo", [.variant(.byte(3))]) == [.variant(.byte(3))])
    }

    @Test func pendingCallsAreBounded() async throws {
        var limits = DBusLimits()
        limits.pendingCalls = 2
        let rig = try await LiveBus(limits: limits)
        let connection = rig.connection
        let slow = (0..<2).map { _ in
            Task {
                try await connection.call(destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface, member: "Sleep",
                                          arguments: [.double(0.5)])
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        await #expect(throws: DBusError.limitReached("2 calls pending")) { try await rig.call("Echo", [.variant(.byte(1))]) }
        for call in slow { #expect(try await call.value == [.string("slept")]) }
        #expect(try await rig.call("Echo", [.variant(.byte(1))]) == [.variant(.byte(1))])
    }

    @Test func aSlowSubscriberLosesSignalsCountedNotQueuedWithoutBound() async throws {
        var limits = DBusLimits()
        limits.queuedSignalsPerSubscriber = 4
        let rig = try await LiveBus(limits: limits)
        let log = EventLog()
        let subscription = try await rig.connection.subscribe(DBusMatch(member: "Ping"), queue: log.queue, handler: log.record)
        defer { subscription.cancel() }
        log.queue.suspend()
        // The reply comes after the service's 50 signals, and the bus thread handles messages in
        // order: by the time it is here, all 50 have been offered to the subscriber.
        _ = try await rig.call("Emit", [.string("flood"), .uint32(50)])
        log.queue.resume()
        try await log.wait("four signals and the count of the rest") { $0.count == 5 }
        #expect(log.signals.map { $0.arguments[1] } == (0..<4).map { .uint32(UInt32($0)) })
        #expect(log.all.last == .lost(46))
    }

    @Test func callsFromManyThreadsAllComeBack() async throws {
        let rig = try await LiveBus()
        let connection = rig.connection
        let results = try await withThrowingTaskGroup(of: Int32.self) { group in
            for index in 0..<100 {
                group.addTask {
                    let reply = try await connection.call(destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface,
                                                          member: "Echo", arguments: [.variant(.int32(Int32(index)))])
                    return try reply[0].unwrappingVariant().as(Int32.self)
                }
            }
            return try await group.reduce(into: [Int32]()) { $0.append($1) }
        }
        #expect(results.sorted() == (0..<100).map(Int32.init))
    }

    /// The bus thread sleeps until sd-bus's absolute deadline (rounded up), so a connection with
    /// a call pending for seconds neither wakes nor spins while it waits (docs/dbus.md §4).
    @Test func anIdleConnectionSleepsWithACallPending() async throws {
        let bus = try PrivateBus(seconds: 60)
        defer { bus.close() }
        try bus.spawn([TestEnvironment.python, LiveBus.script, bus.address], log: "service")
        let connection = try DBusConnection(.address(bus.address), description: "idle-probe")
        defer { connection.close() }
        let deadline = Date().addingTimeInterval(10)
        while try await !connection.nameHasOwner(LiveBus.service) {
            guard Date() < deadline else { throw LiveBus.Timeout(what: "the service\n\(bus.logText())") }
            try await Task.sleep(for: .milliseconds(20))
        }
        let task = try #require(Self.thread(named: "dbus idle-probe"))
        connection.call(destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface, member: "Sleep",
                        arguments: [.double(5)], timeout: .seconds(20), queue: DispatchQueue(label: "ignored")) { _ in }
        try await Task.sleep(for: .milliseconds(200))
        let before = try Self.usage(task)
        try await Task.sleep(for: .seconds(1))
        let after = try Self.usage(task)
        #expect(after.wakeUps - before.wakeUps <= 2, "the bus thread woke \(after.wakeUps - before.wakeUps) times in 1 s")
        #expect(after.cpuTicks - before.cpuTicks <= 5, "the bus thread ran \(after.cpuTicks - before.cpuTicks) ticks in 1 s")
    }

    static func thread(named name: String) -> String? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.first { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.trimmingCharacters(in: .newlines) == name
        }
    }

    /// Voluntary context switches (sleeps) and CPU time (utime + stime, clock ticks) of a thread.
    static func usage(_ task: String) throws -> (wakeUps: Int, cpuTicks: Int) {
        let status = try String(contentsOfFile: "/proc/self/task/\(task)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") })
        let wakeUps = try #require(Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)))
        let stat = try String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8)
        // Fields after the parenthesised name: state is field 3, utime 14, stime 15.
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        let cpuTicks = try #require(Int(fields[11])) + (try #require(Int(fields[12])))
        return (wakeUps, cpuTicks)
    }

    @Test func aBrokerThatIsNotThereFailsToOpen() throws {
        #expect(throws: DBusError.self) { try DBusConnection(.address("unix:path=/nonexistent/sensorkit-test-bus")) }
        #expect(throws: DBusError.invalidArgument("bus address with a NUL byte")) { try DBusConnection(.address("unix:path=/a\u{0}b")) }
    }
}
