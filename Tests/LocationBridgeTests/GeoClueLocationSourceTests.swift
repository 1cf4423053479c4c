import Dispatch
import Foundation
import LocationBridge
import SensorKitModel
import SensorSimulation
import SensorSystem
import SensorTestKit
import Synchronization
import SystemBus
import Testing

/// The GeoClue2 client against a stand-in serving GeoClue's documented client interfaces
/// (`Tests/Fixtures/dbus/geoclue2_standin.py`) on a private bus: it sets its desktop id before
/// starting (GeoClue refuses `Start` without one), and the scripted day replayed fix by fix
/// through `LocationUpdated` comes back as exactly the visits the pure run finds, with no
/// coordinate in anything logged.
@Suite(.serialized) struct GeoClueLocationSourceTests {
    static let template = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/dbus/geoclue2_standin.py").path

    @Test(
        .timeLimit(.minutes(3)),
        .needs(
            .tools([
                (PrivateBus.daemonPath, "dbus-daemon"), (TestEnvironment.python, "python3"), ("/usr/bin/timeout", "coreutils"),
            ])))
    func theScriptedDayThroughGeoClueBecomesTheSameVisits() throws {
        let bus = try PrivateBus(seconds: 60)
        defer { bus.close() }
        try bus.spawn(
            [
                "/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)", TestEnvironment.python, "-m", "dbusmock", "--system",
                "--template", Self.template,
            ],
            log: "geoclue")
        let script = try DBusConnection(.address(bus.address), description: "geoclue-script")
        defer { script.close() }
        #expect(
            Self.eventually {
                (try? Self.wait { script.nameHasOwner(GeoClueLocationSource.service, queue: $0, completion: $1) }) == true
            }, "\(bus.logText())")

        let logged = Mutex<[String]>([])
        let fixes = Mutex<[LocationFix]>([])
        let source = try GeoClueLocationSource(
            bus: .address(bus.address), desktopID: "org.sensorkit.Session",
            log: { message in logged.withLock { $0.append(message.text) } },
            onFix: { fix in fixes.withLock { $0.append(fix) } })
        try Self.wait { queue, completion in source.start { result in queue.async { completion(result) } } }
        #expect(bus.logText().contains("DesktopId"), "the desktop id was set before Start")

        let day = ScriptedDay()
        for (index, fix) in day.fixes.enumerated() {
            let accepted = try Self.wait {
                script.call(
                    destination: GeoClueLocationSource.service, path: GeoClueLocationSource.manager,
                    interface: "org.freedesktop.DBus.Mock",
                    member: "Fix",
                    arguments: [
                        .double(fix.latitude), .double(fix.longitude), .double(fix.accuracy),
                        .uint64(UInt64(fix.time / 1_000_000_000)),
                        .uint64(UInt64(fix.time % 1_000_000_000 / 1_000)),
                    ], queue: $0, completion: $1)
            }
            #expect(accepted == [.boolean(true)], "the client was not active")
            // One at a time: the client reads at most a few updates at once, as a flood is dropped.
            #expect(Self.eventually { fixes.withLock { $0.count } == index + 1 }, "fix \(index) did not arrive")
        }
        source.stop()

        let received = fixes.withLock { $0 }
        #expect(received == day.fixes, "the fixes changed on the way")
        var tracker = VisitTracker(key: VisitTrackerTests.key, labels: ScriptedDay.labels)
        let visits = received.compactMap { tracker.add($0) }
        #expect(visits == VisitTrackerTests.run(day))
        #expect(visits.count == 4)
        let log = logged.withLock { $0.joined(separator: "\n") }
        for place in [ScriptedDay.home, ScriptedDay.work, ScriptedDay.gym] {
            #expect(
                !log.contains(String(format: "%.2f", place.latitude)) && !log.contains(String(format: "%.2f", place.longitude)))
        }
    }

    @Test func aLocationObjectIsReadOnlyWhenWholeAndPlausible() {
        let stamp = DBusValue.structure([.uint64(1_796_083_200), .uint64(250_000)])
        let good: DBusProperties = [
            "Latitude": .double(52.52), "Longitude": .double(13.405), "Accuracy": .double(8), "Timestamp": stamp,
        ]
        #expect(
            GeoClueLocationSource.fix(good)
                == LocationFix(latitude: 52.52, longitude: 13.405, accuracy: 8, time: 1_796_083_200_250_000_000))
        var broken = good
        broken["Latitude"] = .string("52.52")
        #expect(GeoClueLocationSource.fix(broken) == nil)
        broken = good
        broken["Latitude"] = .double(.nan)
        #expect(GeoClueLocationSource.fix(broken) == nil)
        broken = good
        broken["Timestamp"] = .structure([.uint64(.max), .uint64(0)])
        #expect(GeoClueLocationSource.fix(broken) == nil)
        broken["Timestamp"] = nil
        #expect(GeoClueLocationSource.fix(broken) == nil)
    }

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

    static func eventually(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            guard Date() < deadline else { return false }
            usleep(5_000)
        }
        return true
    }
}
