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
@Suite(.timeLimit(.minutes(3))) struct DBusConnectionLiveTests {
    static let queue = DispatchQueue(label: "test.results")

    @Test func callsCarryEveryBasicTypeBothWays() throws {
        let rig = try LiveBus()
        let arguments: [DBusValue] = [
            .array(.byte, [.byte(0), .byte(255)]), .byte(7), .boolean(true), .int16(-32768), .uint16(65535), .int32(-1),
            .uint32(4_000_000_000), .int64(Int64.min), .uint64(UInt64.max), .double(-0.5), .string("grüß ✓"),
            .objectPath(try DBusObjectPath("/a/b")), .signature(try DBusSignature("a{sv}")),
        ]
        #expect(try rig.call("Types", arguments) == [.string("ok")] + arguments)
    }

    @Test func nestedContainersRoundTripThroughAVariant() throws {
        let rig = try LiveBus()
        let value = DBusValue.structure([
            .dictionary(
                key: .string, value: .variant,
                [
                    DBusDictionaryEntry(.string("n"), .variant(.int32(3))),
                    DBusDictionaryEntry(.string("l"), .variant(.array(.string, [.string("x")]))),
                ]),
            .array(.structure([.string, .uint32]), [.structure([.string("a"), .uint32(1)])]),
            .array(.string, []),
        ])
        #expect(try rig.call("Echo", [.variant(value)]) == [.variant(value)])
    }

    @Test func aSlowReplyTimesOutAndTheConnectionGoesOn() throws {
        let rig = try LiveBus()
        let started = Date()
        #expect(throws: DBusError.timedOut) { try rig.call("Sleep", [.double(3)], timeout: .milliseconds(200)) }
        let waited = Date().timeIntervalSince(started)
        #expect(waited >= 0.2 && waited < 2, "timed out after \(waited) s")
        #expect(try rig.call("Echo", [.variant(.byte(1))]) == [.variant(.byte(1))])
    }

    @Test func anErrorReplyKeepsItsName() throws {
        let rig = try LiveBus()
        #expect(throws: DBusError.remote(name: "org.sensorkit.Error.Refused", message: "not now\\x0a")) {
            try rig.call("Fail", [.string("org.sensorkit.Error.Refused"), .string("not now\n")])
        }
        #expect(
            throws: DBusError.remote(
                name: "org.freedesktop.DBus.Error.ServiceUnknown",
                message: "The name org.sensorkit.Nobody was not provided by any .service files")
        ) {
            try LiveBus.wait { queue, completion in
                rig.connection.call(
                    destination: "org.sensorkit.Nobody", path: LiveBus.object, interface: "x.Y", member: "Z",
                    queue: queue, completion: completion)
            }
        }
        #expect(throws: DBusError.self) {
            try LiveBus.wait { queue, completion in
                rig.connection.call(
                    destination: LiveBus.service, path: LiveBus.object, interface: "not an interface", member: "Z",
                    queue: queue, completion: completion)
            }
        }
    }

    @Test func signalsArriveInOrderOnTheSubscribersQueue() throws {
        let rig = try LiveBus()
        let log = EventLog()
        let subscription = try rig.subscribe(DBusMatch(interface: LiveBus.interface, member: "Ping"), log)
        _ = try rig.call("Emit", [.string("hello"), .uint32(5)])
        try log.wait("five pings") { $0.count == 5 }
        #expect(log.signals.map(\.arguments) == (0..<5).map { [.string("hello"), .uint32(UInt32($0))] })
        #expect(log.signals.allSatisfy { $0.path == LiveBus.object && $0.member == "Ping" && $0.sender?.hasPrefix(":") == true })
        subscription.cancel()
        _ = try rig.call("Emit", [.string("late"), .uint32(1)])
        usleep(100_000)
        log.queue.sync {}
        #expect(log.all.count == 5)
    }

    @Test func propertiesReadAndChangesArrive() throws {
        let rig = try LiveBus()
        let connection = rig.connection
        #expect(
            try LiveBus.wait {
                connection.property(
                    destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface, name: "Count",
                    queue: $0, completion: $1)
            } == .uint32(0))
        #expect(
            try LiveBus.wait {
                connection.properties(
                    destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface, queue: $0, completion: $1)
            } == ["Count": .uint32(0), "Label": .string("start")])
        #expect(throws: DBusError.remote(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no such property")) {
            try LiveBus.wait {
                connection.property(
                    destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface, name: "Nope",
                    queue: $0, completion: $1)
            }
        }
        let log = EventLog()
        let subscription = try rig.subscribe(DBusPropertiesChanged.match(path: LiveBus.object, interface: LiveBus.interface), log)
        defer { subscription.cancel() }
        try LiveBus.wait {
            connection.setProperty(
                destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface, name: "Label",
                value: .string("moved"), queue: $0, completion: $1)
        }
        try log.wait("PropertiesChanged") { !$0.isEmpty }
        let change = try DBusPropertiesChanged(log.signals[0])
        #expect(change.path == LiveBus.object && change.interface == LiveBus.interface)
        #expect(change.changed == ["Label": .string("moved")] && change.invalidated.isEmpty)
    }

    @Test func objectManagerReportsObjectsComingAndGoing() throws {
        let rig = try LiveBus()
        let connection = rig.connection
        func objects() throws(DBusError) -> DBusManagedObjects {
            try LiveBus.wait {
                connection.managedObjects(destination: LiveBus.service, path: LiveBus.object, queue: $0, completion: $1)
            }
        }
        #expect(try objects().isEmpty)
        let log = EventLog()
        let added = try rig.subscribe(DBusInterfacesAdded.match(sender: LiveBus.service), log)
        let removed = try rig.subscribe(DBusInterfacesRemoved.match(sender: LiveBus.service), log)
        defer { added.cancel(); removed.cancel() }
        let path = try DBusObjectPath("/org/sensorkit/Test/things/strap")
        #expect(try rig.call("AddThing", [.string("strap")]) == [.objectPath(path)])
        try log.wait("InterfacesAdded") { !$0.isEmpty }
        let appeared = try DBusInterfacesAdded(log.signals[0])
        #expect(
            appeared.object == path
                && appeared.interfaces == ["org.sensorkit.Thing": ["Name": .string("strap"), "Level": .int16(-3)]])
        #expect(try objects() == [path: ["org.sensorkit.Thing": ["Name": .string("strap"), "Level": .int16(-3)]]])
        _ = try rig.call("RemoveThing", [.string("strap")])
        try log.wait("InterfacesRemoved") { $0.count == 2 }
        let gone = try DBusInterfacesRemoved(log.signals[1])
        #expect(gone.object == path && gone.interfaces == ["org.sensorkit.Thing"])
    }

    @Test func anFdInAReplyIsOursToReadAndCloses() throws {
        let rig = try LiveBus()
        let reply = try rig.call("OpenPipe", [.string("bytes through a pipe")])
        let descriptor = try expectArguments(reply, "h")[0].as(DBusFileDescriptor.self)
        let number = try #require(descriptor.descriptor)
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = try buffer.withUnsafeMutableBytes { try SystemCalls.read(number, into: $0) }
        #expect(String(decoding: buffer[..<count], as: UTF8.self) == "bytes through a pipe")
        descriptor.close()
        descriptor.close()
        #expect(descriptor.descriptor == nil)
    }

    @Test func anFdSentInACallReachesTheServiceAndStaysOurs() throws {
        let rig = try LiveBus()
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        let reader = DBusFileDescriptor(owning: ends[0])
        let text = Array("bytes the other way".utf8)
        #expect(try text.withUnsafeBytes { try SystemCalls.write(ends[1], $0) } == text.count)
        SystemCalls.close(ends[1])
        #expect(try rig.call("ReadFd", [.unixFD(reader)]) == [.string("bytes the other way")])
        // sd-bus sent a duplicate: ours is still open, and still ours to close.
        let number = try #require(reader.descriptor)
        #expect(fcntl(number, F_GETFD) != -1)
        reader.close()
        #expect(throws: DBusError.invalidArgument("a closed fd")) { try rig.call("ReadFd", [.unixFD(reader)]) }
    }

    @Test func aServiceThatVanishesAndReturnsIsSeen() throws {
        let rig = try LiveBus()
        let log = EventLog()
        let owners = try rig.subscribe(DBusNameOwnerChanged.match(name: LiveBus.service), log)
        defer { owners.cancel() }
        rig.stopService()
        try log.wait("the name released") { $0.count == 1 }
        let gone = try DBusNameOwnerChanged(log.signals[0])
        #expect(gone.name == LiveBus.service && gone.oldOwner != nil && gone.newOwner == nil)
        #expect(throws: DBusError.self) { try rig.call("Echo", [.variant(.byte(1))]) }
        try rig.startService()
        try log.wait("the name taken again") { $0.count == 2 }
        let back = try DBusNameOwnerChanged(log.signals[1])
        #expect(back.oldOwner == nil && back.newOwner != nil && back.newOwner != gone.oldOwner)
        #expect(try rig.call("Echo", [.variant(.byte(2))]) == [.variant(.byte(2))])
    }

    @Test func aDeadBrokerIsReportedAndAFreshConnectionWorks() throws {
        let lost = Mutex<[DBusError]>([])
        let rig = try LiveBus(onLost: { error in lost.withLock { $0.append(error) } })
        let log = EventLog()
        let pings = try rig.subscribe(DBusMatch(member: "Ping"), log)
        let pending = Mutex<Result<[DBusValue], DBusError>?>(nil)
        rig.connection.call(
            destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface, member: "Sleep",
            arguments: [.double(30)], timeout: .seconds(60), queue: Self.queue
        ) { result in pending.withLock { $0 = result } }
        _ = try rig.call("Echo", [.variant(.byte(0))])  // the Sleep call reached the service
        rig.bus.kill()
        try log.wait("the subscription ended") { $0 == [.ended] }
        let deadline = Date().addingTimeInterval(LiveBus.patience)
        while (lost.withLock({ $0.isEmpty }) || pending.withLock({ $0 == nil })) && Date() < deadline { usleep(10_000) }
        #expect(throws: DBusError.disconnected) { try pending.withLock { $0 }?.get() }
        #expect(lost.withLock { $0 } == [.disconnected])
        #expect(!rig.connection.isOpen)
        #expect(throws: DBusError.disconnected) { try rig.call("Echo", [.variant(.byte(1))]) }
        pings.cancel()

        try rig.bus.start()
        let fresh = try DBusConnection(.address(rig.bus.address))
        defer { fresh.close() }
        #expect(try LiveBus.wait { fresh.nameHasOwner("org.freedesktop.DBus", queue: $0, completion: $1) })
    }

    @Test func repliesPastTheBoundsAreRefusedNotTrapped() throws {
        var limits = DBusLimits()
        limits.valuesPerMessage = 1000
        limits.textBytesPerMessage = 10_000
        limits.depth = 8
        let rig = try LiveBus(limits: limits)
        #expect(try rig.call("Huge", [.uint32(500)]).first.map { try $0.as([String].self).count } == 500)
        #expect(throws: DBusError.malformed("more text than 10000 bytes in a message")) { try rig.call("Huge", [.uint32(700)]) }
        let bytes = DBusValue.array(.byte, Array(repeating: .byte(1), count: 2000))
        #expect(throws: DBusError.malformed("more than the value budget in one message")) {
            try rig.call("Echo", [.variant(bytes)])
        }
        #expect(try rig.call("Deep", [.uint32(3)]).count == 1)
        #expect(throws: DBusError.malformed("containers nested deeper than 8")) { try rig.call("Deep", [.uint32(10)]) }
        #expect(try rig.call("Echo", [.variant(.byte(3))]) == [.variant(.byte(3))])
    }

    @Test func pendingCallsAreBounded() throws {
        var limits = DBusLimits()
        limits.pendingCalls = 2
        let rig = try LiveBus(limits: limits)
        let slow = Mutex<[Result<[DBusValue], DBusError>]>([])
        for _ in 0..<2 {
            rig.connection.call(
                destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface, member: "Sleep",
                arguments: [.double(1)], queue: Self.queue
            ) { result in slow.withLock { $0.append(result) } }
        }
        // Requests reach the bus thread in order: both Sleeps are pending when this one arrives.
        #expect(throws: DBusError.limitReached("2 calls pending")) { try rig.call("Echo", [.variant(.byte(1))]) }
        let deadline = Date().addingTimeInterval(LiveBus.patience)
        while slow.withLock({ $0.count }) < 2 && Date() < deadline { usleep(10_000) }
        #expect(slow.withLock { $0.map { try? $0.get() } } == [[.string("slept")], [.string("slept")]])
        #expect(try rig.call("Echo", [.variant(.byte(1))]) == [.variant(.byte(1))])
    }

    @Test func aSlowSubscriberLosesSignalsCountedNotQueuedWithoutBound() throws {
        var limits = DBusLimits()
        limits.queuedSignalsPerSubscriber = 4
        let rig = try LiveBus(limits: limits)
        let log = EventLog()
        let subscription = try rig.subscribe(DBusMatch(member: "Ping"), log)
        defer { subscription.cancel() }
        log.queue.suspend()
        // The reply comes after the service's 50 signals, and the bus thread handles messages in
        // order: by the time it is here, all 50 have been offered to the subscriber.
        _ = try rig.call("Emit", [.string("flood"), .uint32(50)])
        log.queue.resume()
        try log.wait("four signals and the count of the rest") { $0.count == 5 }
        #expect(log.signals.map { $0.arguments[1] } == (0..<4).map { .uint32(UInt32($0)) })
        #expect(log.all.last == .lost(46))
    }

    @Test func callsFromManyThreadsAllComeBack() throws {
        let rig = try LiveBus()
        let connection = rig.connection
        let results = Mutex<[Int32]>([])
        let failures = Mutex<[DBusError]>([])
        let group = DispatchGroup()
        DispatchQueue.concurrentPerform(iterations: 100) { index in
            group.enter()
            connection.call(
                destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface, member: "Echo",
                arguments: [.variant(.int32(Int32(index)))], queue: Self.queue
            ) { result in
                do throws(DBusError) {
                    let value = try result.get()[0].unwrappingVariant().as(Int32.self)
                    results.withLock { $0.append(value) }
                } catch {
                    failures.withLock { $0.append(error) }
                }
                group.leave()
            }
        }
        #expect(group.wait(timeout: .now() + LiveBus.patience) == .success)
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(results.withLock { $0 }.sorted() == (0..<100).map(Int32.init))
    }

    /// The bus thread sleeps until sd-bus's absolute deadline (rounded up), so a connection with
    /// a call pending for seconds neither wakes nor spins while it waits (docs/dbus.md §4).
    @Test func anIdleConnectionSleepsWithACallPending() throws {
        let rig = try LiveBus(description: "idle-probe")
        let task = try #require(Self.thread(named: "dbus idle-probe"))
        rig.connection.call(
            destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface, member: "Sleep",
            arguments: [.double(5)], timeout: .seconds(20), queue: Self.queue
        ) { _ in }
        usleep(200_000)
        let before = try Self.usage(task)
        sleep(1)
        let after = try Self.usage(task)
        #expect(after.wakeUps - before.wakeUps <= 2, "the bus thread woke \(after.wakeUps - before.wakeUps) times in 1 s")
        #expect(after.cpuTicks - before.cpuTicks <= 5, "the bus thread ran \(after.cpuTicks - before.cpuTicks) ticks in 1 s")
    }

    static func thread(named name: String) -> String? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.first { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.trimmingCharacters(in: .newlines)
                == name
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
        #expect(throws: DBusError.invalidArgument("bus address with a NUL byte")) {
            try DBusConnection(.address("unix:path=/a\u{0}b"))
        }
    }
}

/// The `async` forms are thin wrappers of the callbacks; one test runs each. It needs Swift's
/// cooperative pool, which the rest of the suite's blocking tests can hold for a long while,
/// hence no wall-clock deadline of its own: every call carries a timeout, so it ends.
@Suite(.timeLimit(.minutes(3))) struct DBusAsyncFormTests {
    @Test func theAsyncFormsWrapTheCallbacks() async throws {
        let rig = try LiveBus()
        let connection = rig.connection
        #expect(try await connection.nameHasOwner(LiveBus.service))
        #expect(
            try await connection.call(
                destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface,
                member: "Echo", arguments: [.variant(.byte(9))]) == [.variant(.byte(9))])
        await #expect(throws: DBusError.remote(name: "org.sensorkit.Error.No", message: "no")) {
            try await connection.call(
                destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface, member: "Fail",
                arguments: [.string("org.sensorkit.Error.No"), .string("no")])
        }
        #expect(
            try await connection.property(
                destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface,
                name: "Count") == .uint32(0))
        let log = EventLog()
        let subscription = try await connection.subscribe(
            DBusPropertiesChanged.match(path: LiveBus.object), queue: log.queue,
            handler: log.record)
        defer { subscription.cancel() }
        try await connection.setProperty(
            destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface,
            name: "Count", value: .uint32(4))
        #expect(
            try await connection.properties(destination: LiveBus.service, path: LiveBus.object, interface: LiveBus.interface)
                == ["Count": .uint32(4), "Label": .string("start")])
        #expect(try await connection.managedObjects(destination: LiveBus.service, path: LiveBus.object).isEmpty)
        // The reply to GetAll came after the service's PropertiesChanged: it has been offered.
        log.queue.sync {}
        #expect(try log.signals.map { try DBusPropertiesChanged($0).changed } == [["Count": .uint32(4)]])
    }
}
