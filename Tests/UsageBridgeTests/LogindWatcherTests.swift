import Foundation
import SensorKitModel
import SensorSimulation
import SensorSystem
import SensorTestKit
import Synchronization
import SystemBus
import Testing

@testable import UsageBridge

/// `LogindWatcher` against python-dbusmock's `logind` template on a private bus: the active
/// session's owner, its `LockedHint`, `IdleHint` and `Lock`/`Unlock` become usage events.
@Suite(.timeLimit(.minutes(3))) struct LogindWatcherTests {
    static let needs = TestEnvironment.Need.tools([
        (PrivateBus.daemonPath, "dbus-daemon"), ("/usr/bin/busctl", "systemd"), (TestEnvironment.python, "python3"),
    ])

    static func busctl(_ address: String, _ arguments: String...) throws {
        let (status, output) = try CommandOutput.run(
            ["/usr/bin/timeout", "10", "/usr/bin/busctl", "--address=" + address] + arguments)
        guard status == 0 else { throw BusctlFailed(output: "busctl \(arguments): \(output)") }
    }

    static func eventually(_ seconds: Double = 15, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    @Test(.needs(Self.needs)) func theActiveSessionsLockAndIdleStateBecomeEvents() throws {
        let bus = try PrivateBus(seconds: 60)
        defer { bus.close() }
        try bus.spawn(
            [
                "/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)", TestEnvironment.python, "-m", "dbusmock", "--system",
                "--template", "logind",
            ], log: "logind")
        let manager = "/org/freedesktop/login1"
        #expect(
            Self.eventually {
                (try? Self.busctl(
                    bus.address, "call", LogindWatcher.service, manager, "org.freedesktop.DBus.Mock", "AddSession", "ssusb", "c7",
                    "seat0", "1234", "person", "true")) != nil
            }, "\(bus.logText())")
        let events = Mutex<[UsageEvent]>([])
        let watcher = LogindWatcher(clock: LinuxSystemClock(), journal: .discard) { event in events.withLock { $0.append(event) }
        }
        #expect(watcher.start(bus: .address(bus.address)))
        defer { watcher.stop() }
        #expect(Self.eventually { watcher.activeUser == 1234 }, "\(bus.logText())")
        #expect(
            Self.eventually {
                events.withLock { $0.contains { if case .watching(.logindLockedHint, true, _) = $0 { true } else { false } } }
            })

        let session = "/org/freedesktop/login1/session/c7"
        let interface = LogindWatcher.sessionInterface
        try Self.busctl(bus.address, "call", LogindWatcher.service, session, interface, "SetLockedHint", "b", "true")
        try Self.busctl(bus.address, "call", LogindWatcher.service, session, interface, "Unlock")
        try Self.busctl(bus.address, "set-property", LogindWatcher.service, session, interface, "IdleHint", "b", "true")
        let wanted: [String] = [
            "locked true logind-locked-hint", "locked false logind-lock-signal", "screen false logind-idle-hint",
        ]
        func seen() -> [String] {
            events.withLock { list in
                list.compactMap { event in
                    switch event {
                    case .locked(let on, _, let source): "locked \(on) \(source.name)"
                    case .screen(let on, _, let source): "screen \(on) \(source.name)"
                    default: nil
                    }
                }
            }
        }
        #expect(Self.eventually { wanted.allSatisfy(seen().contains) }, "\(seen())\n\(bus.logText())")
        // The properties read at the start (unlocked, not idle) come first.
        #expect(seen().prefix(2) == ["locked false logind-locked-hint", "screen true logind-idle-hint"])
    }

    struct BusctlFailed: Error { let output: String }

    @Test func aSessionsPropertiesOfTheWrongTypeAreIgnored() {
        #expect(LogindWatcher.events(["LockedHint": .string("yes"), "IdleHint": .uint32(1)], at: 0).isEmpty)
        #expect(LogindWatcher.events(["LockedHint": .boolean(true)], at: 5) == [.locked(true, at: 5, from: .logindLockedHint)])
    }
}
