import AppleStyleStudy
import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import SensorTestKit
import Testing

/// The real `sensorkitd` and the real `sensorkit-session` (docs/device-usage.md): logind served by
/// python-dbusmock's `logind` template on a private bus the daemon takes for its system bus, a
/// notification server (dbusmock's `notification_daemon`) on a private session bus the agent
/// monitors. A scripted stretch of use — a lock and an unlock, the screen idle and back, four
/// notifications with secret texts, one invoked, one expired, one dismissed, one closed by a call —
/// comes back as one report with exactly those counts; no byte the daemon or the agent wrote holds
/// the texts; an agent of another uid is refused.
@Suite(.serialized) struct DeviceUsageEndToEndTests {
    static let secrets = ["SECRET-SUMMARY-7f3a", "SECRET-BODY-91c2", "Secret Window Title 55e1"]
    static let login1 = "org.freedesktop.login1"
    static let session = "/org/freedesktop/login1/session/c1"
    static let notifications = "org.freedesktop.Notifications"
    static var agentBinary: String { (IIODaemonRun.daemonBinary as NSString).deletingLastPathComponent + "/sensorkit-session" }

    @Test(
        .needs(
            .tools([
                (PrivateBus.daemonPath, "dbus-daemon"), ("/usr/bin/busctl", "systemd"), (TestEnvironment.python, "python3"),
                ("/usr/bin/setpriv", "util-linux"),
            ])), .timeLimit(.minutes(3)))
    func aScriptedStretchOfUseComesBackAsItsReportAndNoTextIsAnywhere() throws {
        let rig = try DeviceUsageRig(sessionUID: getuid())
        defer { rig.stop() }
        let run = rig.run
        let app = try run.connect()
        defer { app.close() }
        let (startSR, _) = try run.timeline(app)
        try run.startRecording(app, .deviceUsageReport)
        #expect(IIODaemonRun.eventually(15) { run.log.contains("seat0's active session is") }, "\(run.log)")
        let (agent, agentLog) = try rig.startAgent()
        let agentLogText = { (try? String(contentsOfFile: agentLog, encoding: .utf8)) ?? "" }
        #expect(
            IIODaemonRun.eventually(15) { agentLogText().contains("watching the session bus") },
            "\(agentLogText())\n\(run.log)")
        #expect(agent.isRunning)

        // logind: locked, unlocked (one unlock); idle, then active (one screen wake).
        let session = "org.freedesktop.login1.Session"
        try rig.system("call", Self.login1, Self.session, session, "SetLockedHint", "b", "true")
        try rig.system("call", Self.login1, Self.session, session, "SetLockedHint", "b", "false")
        for idle in ["true", "false"] {
            try rig.system("set-property", Self.login1, Self.session, session, "IdleHint", "b", idle)
        }
        // Four notifications of Maps with secret texts (ids 1…4), then what becomes of them.
        for _ in 0..<4 {
            try rig.session(
                "call", Self.notifications, "/org/freedesktop/Notifications", Self.notifications, "Notify", "susssasa{sv}i",
                "gnome-maps", "0", "", Self.secrets[0], Self.secrets[1], "0", "1", "desktop-entry", "s", "org.gnome.Maps",
                "-1")
        }
        let mock = "org.freedesktop.DBus.Mock"
        try rig.session(
            "call", Self.notifications, "/org/freedesktop/Notifications", mock, "EmitSignal", "sssav", Self.notifications,
            "ActionInvoked", "us", "2", "u", "1", "s", "default")
        // The template's CloseNotification closes with reason 1 (expired).
        try rig.session(
            "call", Self.notifications, "/org/freedesktop/Notifications", Self.notifications, "CloseNotification", "i", "2")
        for (id, reason) in [("3", "2"), ("4", "3")] {
            try rig.session(
                "call", Self.notifications, "/org/freedesktop/Notifications", mock, "EmitSignal", "sssav", Self.notifications,
                "NotificationClosed", "uu", "2", "u", id, "u", reason)
        }

        // The interval closes when recording stops: its report is then stored.
        var report: SRDeviceUsageReport?
        let expected: [SRDeviceUsageReport.NotificationUsage.Event] = [
            .received, .received, .received, .received, .defaultAction, .expired, .clear, .removed,
        ]
        // Every event reached the daemon's recorder (its counts in `sensorkitctl devices`).
        #expect(
            IIODaemonRun.eventually(15) {
                let details = (try? run.devices())?.first { $0.source == "session:device-usage" }?.details ?? [:]
                return details["notificationEvents"] == "\(expected.count)" && Int(details["events"] ?? "") ?? 0 >= 12
            }, "\((try? run.devices()) ?? [])\n\(agentLogText())\n\(run.log)")
        let stop = app.call(.stopRecording) { $0.sensor = SRSensor.deviceUsageReport.rawValue }
        #expect(stop.error == nil, "\(stop)")
        #expect(
            IIODaemonRun.eventually(15) {
                report = (try? Self.fetchReports(app, from: startSR, run: run))?.last
                return report != nil
            }, "no report was fetched\n\(run.log)\n\(agentLogText())")
        let fetched = try #require(report)
        #expect(fetched.totalUnlocks == 1, "\(fetched.totalUnlocks)")
        #expect(fetched.totalScreenWakes == 1, "\(fetched.totalScreenWakes)")
        #expect(fetched.totalUnlockDuration > 0)
        #expect(fetched.version == "linux-1 wakes=logind-idle-hint unlocks=logind-locked-hint", "\(fetched.version)")
        #expect(fetched.webUsageByCategory.isEmpty)
        #expect(fetched.notificationUsageByCategory.keys.map(\.rawValue) == [SRDeviceUsageReport.CategoryKey.navigation.rawValue])
        #expect(Self.events(of: fetched).sorted { $0.rawValue < $1.rawValue } == expected.sorted { $0.rawValue < $1.rawValue })
        #expect(
            fetched.notificationUsageByCategory[.navigation]?.allSatisfy { $0.bundleIdentifier == "org.gnome.Maps" } == true)
        // The study code as Apple's documentation writes it fetches and prints the same wakes and unlocks.
        let printed = try StudyApp(run: run).fetchLastHour(.deviceUsageReport)
        #expect(printed.last == StudyRecorder.line(for: fetched), "\(printed)")
        #expect(printed.last?.hasPrefix("screen wakes: 1, unlocks: 1") == true, "\(printed)")
        // No compositor: beside the report, deletion records over its interval, the stretch after
        // the agent came lacking only the app in front (the daemon's log says which part).
        try Self.expectDeletionRecordsCover(fetched, app, run: run, from: startSR)
        #expect(
            run.log.contains("(not observed: the app in front (no session agent, or a compositor without the wlr protocols));"),
            "\(run.log)")

        // Every byte written: the store, the daemon's log, the agent's log.
        rig.stop()
        var written: [(String, [UInt8])] = []
        let state = run.folder + "/state"
        for file in FileManager.default.enumerator(atPath: state)?.compactMap({ $0 as? String }) ?? [] {
            var isDirectory: ObjCBool = false
            let path = state + "/" + file
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
                continue
            }
            written.append((path, Array(try Data(contentsOf: URL(fileURLWithPath: path)))))
        }
        written.append((run.logPath, Array(try Data(contentsOf: URL(fileURLWithPath: run.logPath)))))
        written.append((agentLog, Array(try Data(contentsOf: URL(fileURLWithPath: agentLog)))))
        #expect(written.count >= 4)
        for (name, bytes) in written {
            for secret in Self.secrets where KeyboardEndToEndTests.contains(bytes, Array(secret.utf8)) {
                Issue.record("\(name) holds \(secret)")
            }
        }
    }

    @Test(
        .needs(
            .tools([
                (PrivateBus.daemonPath, "dbus-daemon"), ("/usr/bin/busctl", "systemd"), (TestEnvironment.python, "python3"),
                ("/usr/bin/setpriv", "util-linux"),
            ])), .timeLimit(.minutes(3)))
    func anAgentOfAnotherUidOrWithoutTheActiveSessionIsRefused() throws {
        // The active session belongs to uid 4242: neither this uid nor nobody holds it.
        let rig = try DeviceUsageRig(sessionUID: 4242)
        defer { rig.stop() }
        let run = rig.run
        #expect(IIODaemonRun.eventually(15) { run.log.contains("seat0's active session is") }, "\(run.log)")
        for asNobody in [false, true] {
            let (agent, log) = try rig.startAgent(asNobody: asNobody)
            #expect(IIODaemonRun.eventually(15) { !agent.isRunning }, "the agent was not refused")
            #expect(agent.exitStatus == 1)
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            #expect(text.contains("cannot act as this session's agent"), "\(text)")
        }
        #expect(run.log.contains("refused session agent of uid"), "\(run.log)")
    }

    /// The real agent watching a real compositor: headless sway with `foot` windows whose focus
    /// the test moves. The apps in front come back by category with their desktop ids, the
    /// screen wakes say they came from the compositor, and no window title is anywhere.
    @Test(
        .needs(
            .tools(
                HeadlessSway.tools + [
                    (PrivateBus.daemonPath, "dbus-daemon"), ("/usr/bin/busctl", "systemd"), (TestEnvironment.python, "python3"),
                ])), .needs(.root("sway runs as nobody in a runtime folder handed over with chown")), .timeLimit(.minutes(3)))
    func theAppsInFrontUnderARealCompositorComeBackByCategory() throws {
        let sway = try HeadlessSway()
        defer { sway.close() }
        let rig = try DeviceUsageRig(sessionUID: getuid())
        defer { rig.stop() }
        let run = rig.run
        let recording = try rig.recordWithAgent(waylandDisplay: sway.display)
        let (app, startSR, agentLogText) = (recording.app, recording.startSR, recording.agentLog)
        defer { app.close() }
        #expect(
            IIODaemonRun.eventually(15) { agentLogText().contains("watching the compositor") },
            "\(agentLogText())\n\(run.log)")

        let title = "Secret window title 4711"
        try sway.open(appID: "org.gnome.Maps", title: title)
        Thread.sleep(forTimeInterval: 1.2)
        try sway.open(appID: "im.dino.Dino", title: title)
        Thread.sleep(forTimeInterval: 1.2)
        try sway.swaymsg(["[app_id=\"org.gnome.Maps\"] focus"])
        // Every focus change reached the daemon's recorder before the interval is closed.
        #expect(
            IIODaemonRun.eventually(15) {
                let details = (try? run.devices())?.first { $0.source == "session:device-usage" }?.details ?? [:]
                return Int(details["events"] ?? "") ?? 0 >= 6
            }, "\((try? run.devices()) ?? [])\n\(agentLogText())")
        Thread.sleep(forTimeInterval: 0.5)
        let stop = app.call(.stopRecording) { $0.sensor = SRSensor.deviceUsageReport.rawValue }
        #expect(stop.error == nil, "\(stop)")
        var report: SRDeviceUsageReport?
        #expect(
            IIODaemonRun.eventually(15) {
                report = (try? Self.fetchReports(app, from: startSR, run: run))?.last
                return report != nil
            }, "no report was fetched\n\(run.log)\n\(agentLogText())")
        let fetched = try #require(report)
        let byCategory = fetched.applicationUsageByCategory
        #expect(
            Set(byCategory.keys.map(\.rawValue)) == [
                SRDeviceUsageReport.CategoryKey.navigation.rawValue, SRDeviceUsageReport.CategoryKey.socialNetworking.rawValue,
            ], "\(byCategory)")
        let maps = try #require(byCategory[.navigation]?.first)
        let chat = try #require(byCategory[.socialNetworking]?.first)
        #expect(maps.bundleIdentifier == "org.gnome.Maps")
        #expect(chat.bundleIdentifier == "im.dino.Dino")
        // Maps was in front twice (≥ 1.2 s and ≥ 0.5 s), the chat once (≥ 1.2 s).
        #expect(maps.usageTime >= 1.5, "\(maps.usageTime)")
        #expect(chat.usageTime >= 1.0, "\(chat.usageTime)")
        #expect(maps.relativeStartTime < chat.relativeStartTime)
        #expect(fetched.version.contains("wakes=compositor"), "\(fetched.version)")
        // The study code as Apple's documentation writes it prints the same time per category.
        let printed = try StudyApp(run: run).fetchLastHour(.deviceUsageReport).last ?? ""
        #expect(printed == StudyRecorder.line(for: fetched))
        for (category, app) in [(SRDeviceUsageReport.CategoryKey.navigation, maps), (.socialNetworking, chat)] {
            #expect(printed.contains("\(category.rawValue): \(Int(app.usageTime)) s in 1 apps"), "\(printed)")
        }

        rig.stop()
        var written: [(String, [UInt8])] = [
            (run.logPath, Array(try Data(contentsOf: URL(fileURLWithPath: run.logPath)))),
            (recording.agentLogPath, Array(try Data(contentsOf: URL(fileURLWithPath: recording.agentLogPath)))),
        ]
        let state = run.folder + "/state"
        for file in FileManager.default.enumerator(atPath: state)?.compactMap({ $0 as? String }) ?? [] {
            let path = state + "/" + file
            if let data = FileManager.default.contents(atPath: path) { written.append((path, Array(data))) }
        }
        for (name, bytes) in written where KeyboardEndToEndTests.contains(bytes, Array("Secret window".utf8)) {
            Issue.record("\(name) holds the window title")
        }
    }

    /// `systemInitiated` deletion records leave no stretch of `report`'s interval (the last
    /// stored) uncovered: a part of it went unobserved throughout (the store joins records that
    /// follow one another).
    static func expectDeletionRecordsCover(
        _ report: SRDeviceUsageReport, _ app: ReaderConnection, run: IIODaemonRun, from: Int64
    ) throws {
        var records: [Rig.Record] = []
        var reportEnd: Int64 = 0
        let recorded = try IIODaemonRun.eventually(15) {
            let (now, _) = try run.timeline(app)
            let (reports, _) = DaemonHarness.fetchAll(app, sensor: .deviceUsageReport, from: from, to: now, timeout: 10)
            reportEnd = reports.flatMap(\.sensorTimes).max() ?? 0
            let (batches, _) = DaemonHarness.fetchAll(
                app, sensor: SRSensor.deviceUsageReport.deletionRecordSensor!, from: from, to: now, timeout: 10)
            records = Rig.records(in: batches).sorted { $0.start < $1.start }
            return reportEnd > 0 && records.last.map { abs($0.end - reportEnd) < 1_000_000 } == true
        }
        #expect(recorded, "no deletion record up to the report's end \(reportEnd): \(records)\n\(run.log)")
        let reportStart = reportEnd - Int64(report.duration * 1e9)
        #expect(records.first.map { $0.start <= reportStart + 1_000_000 } == true, "\(reportStart): \(records)")
        #expect(records.allSatisfy { $0.reason == .systemInitiated }, "\(records)")
        #expect(zip(records, records.dropFirst()).allSatisfy { abs($1.start - $0.end) < 1_000_000 }, "\(records)")
    }

    static func events(of report: SRDeviceUsageReport?) -> [SRDeviceUsageReport.NotificationUsage.Event] {
        report?.notificationUsageByCategory.values.flatMap { $0.map(\.event) } ?? []
    }

    /// Reports a day long, so no quarter hour splits a test's few seconds into two (the rig's
    /// default).
    static let oneReport = "[device-usage]\ninterval = 1d\n"

    /// The reports stored so far, built by the family as the SensorKit client builds them.
    static func fetchReports(_ app: ReaderConnection, from: Int64, run: IIODaemonRun) throws
        -> [SRDeviceUsageReport]
    {
        let (now, _) = try run.timeline(app)
        let (batches, _) = DaemonHarness.fetchAll(app, sensor: .deviceUsageReport, from: from, to: now, timeout: 10)
        var reports = Reports()
        for batch in batches {
            SensorFamilies.results(batch, sensor: .deviceUsageReport, dates: SampleDates(cfOffset: 0, anchor: 0), into: &reports)
        }
        return reports.reports
    }

    struct Reports: FetchResultBuilder {
        var reports: [SRDeviceUsageReport] = []
        mutating func each(_ make: (Int) -> AnyObject) {}
        mutating func batch(_ samples: SampleList) {}
        mutating func groups(_ runs: [Range<Int>], _ make: (Range<Int>) -> AnyObject) {
            reports += runs.compactMap { make($0) as? SRDeviceUsageReport }
        }
    }
}

/// The rig: both buses with their services, the daemon recording for the study app.
final class DeviceUsageRig {
    let system: PrivateBus
    let sessionBus: PrivateBus
    let run: IIODaemonRun
    let applications: String
    let sessionUID: UInt32
    var agents: [ChildProcess] = []
    private var logind: ChildProcess?

    /// `typing`: an evemu script the emulated keyboard types (umockdev) once its node is opened.
    /// `geoclue`: the GeoClue stand-in on the system bus too (docs/visits.md §4). `extraConfig`:
    /// more of sensorkitd.conf (`[device-usage] interval = 6s`, say); by default reports a day
    /// long (`DeviceUsageEndToEndTests.oneReport`), so a test that fetches the report its stop
    /// closed gets all it recorded even when a quarter hour falls inside it.
    init(
        sessionUID: UInt32, typing: String? = nil, entitlements: [String] = ["device-usage"],
        grants: String = "deviceUsageReport", geoclue: Bool = false,
        extraConfig: String = DeviceUsageEndToEndTests.oneReport
    ) throws {
        system = try PrivateBus(seconds: 90)
        sessionBus = try PrivateBus(seconds: 90)
        self.sessionUID = sessionUID
        try sessionBus.spawn(
            [
                "/usr/bin/env", "DBUS_SESSION_BUS_ADDRESS=\(sessionBus.address)", TestEnvironment.python, "-m", "dbusmock",
                "--template", "notification_daemon",
            ], log: "notifications")
        let sessionAddress = sessionBus.address
        #expect(
            IIODaemonRun.eventually(20) {
                BLEBlueZEndToEndTests.owned(DeviceUsageEndToEndTests.notifications, on: sessionAddress)
            })
        logind = try Self.startLogind(on: system, sessionUID: sessionUID)
        if geoclue {
            try system.spawn(
                [
                    "/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=\(system.address)", TestEnvironment.python, "-m", "dbusmock",
                    "--system", "--template", VisitsEndToEndTests.template,
                ], log: "geoclue")
            let systemAddress = system.address
            #expect(IIODaemonRun.eventually(20) { BLEBlueZEndToEndTests.owned("org.freedesktop.GeoClue2", on: systemAddress) })
        }
        run = try IIODaemonRun(extraConfig: extraConfig, entitlements: entitlements, grants: grants)
        applications = run.folder + "/share/applications"
        try FileManager.default.createDirectory(atPath: applications, withIntermediateDirectories: true)
        try "[Desktop Entry]\nName=Maps\nCategories=Utility;Maps;\n".write(
            toFile: applications + "/org.gnome.Maps.desktop", atomically: true, encoding: .utf8)
        try "[Desktop Entry]\nName=Chat\nCategories=Network;InstantMessaging;\n".write(
            toFile: applications + "/im.dino.Dino.desktop", atomically: true, encoding: .utf8)
        if let typing {
            let events = run.folder + "/typing.events"
            try typing.write(toFile: events, atomically: true, encoding: .utf8)
            try run.startUnderUmockdevRun(
                device: EvemuScript.fixtures + "/keyboard.umockdev", options: EvemuScript.umockdevOptions(events: events),
                environment: ["DBUS_SYSTEM_BUS_ADDRESS": system.address])
        } else {
            try run.startPlain(environment: ["DBUS_SYSTEM_BUS_ADDRESS": system.address])
        }
    }

    /// logind (dbusmock's template) on the system bus, with seat0's active session `c1`.
    static func startLogind(on system: PrivateBus, sessionUID: UInt32) throws -> ChildProcess {
        let logind = try system.spawn(
            [
                "/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=\(system.address)", TestEnvironment.python, "-m", "dbusmock",
                "--system", "--template", "logind",
            ], log: "logind")
        let systemAddress = system.address
        #expect(
            IIODaemonRun.eventually(20) {
                BLEBlueZEndToEndTests.owned(DeviceUsageEndToEndTests.login1, on: systemAddress)
            })
        try Self.busctl(
            system.address, "call", DeviceUsageEndToEndTests.login1, "/org/freedesktop/login1", "org.freedesktop.DBus.Mock",
            "AddSession", "ssusb",
            "c1", "seat0", String(sessionUID), "person", "true")
        return logind
    }

    /// Kills logind — and with `bus`, the system bus under it — and starts them again.
    func restartLogind(bus: Bool) throws {
        if let logind { system.stop(logind) }
        logind = nil
        if bus {
            system.kill()
            try system.start()
        } else {
            // The bus lets the name go only once it has seen the dead mock's socket close: until
            // then `startLogind` could take the old owner for the new one and call a mock that is
            // gone (a CI failure of 2026-12-07: "not provided by any .service files").
            let address = system.address
            #expect(IIODaemonRun.eventually(20) { !BLEBlueZEndToEndTests.owned(DeviceUsageEndToEndTests.login1, on: address) })
        }
        logind = try Self.startLogind(on: system, sessionUID: sessionUID)
    }

    func stop() {
        for agent in agents {
            if agent.isRunning { kill(-agent.pid, SIGTERM) }
            _ = IIODaemonRun.eventually(5) { !agent.isRunning }
            kill(-agent.pid, SIGKILL)
            agent.wait()
        }
        agents = []
        run.stop()
        system.close()
        sessionBus.close()
    }

    /// What the agent's end-to-end tests start from: an app recording `deviceUsageReport` (since
    /// `startSR`), then the agent, on `waylandDisplay` if given.
    struct Recording {
        let app: ReaderConnection
        let startSR: Int64
        /// Where the agent logs, and what it logged so far.
        let agentLogPath: String
        let agentLog: () -> String
        /// The device-usage source's status in `sensorkitctl devices` (`watching`, `events`, …).
        let details: () -> [String: String]
    }

    /// Waits until the device-usage source records: it starts a few queue hops after the stake's
    /// reply, and its `events` count only what arrives after that.
    func waitUntilRecording() throws {
        let source = { (try? self.run.devices())?.first { $0.source == "session:device-usage" } }
        guard IIODaemonRun.eventually(15, { source()?.recording == true }) else {
            throw TestFailure("the device-usage source is not recording 15 s after the stake: \(String(describing: source()))")
        }
    }

    /// Connects an app, starts it recording `deviceUsageReport` and starts the agent. The caller
    /// closes `app`.
    func recordWithAgent(waylandDisplay: String? = nil) throws -> Recording {
        let run = self.run
        let app = try run.connect()
        let (startSR, _) = try run.timeline(app)
        try run.startRecording(app, .deviceUsageReport)
        try waitUntilRecording()
        let (_, log) = try startAgent(waylandDisplay: waylandDisplay)
        return Recording(
            app: app, startSR: startSR, agentLogPath: log,
            agentLog: { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" },
            details: { (try? run.devices())?.first { $0.source == "session:device-usage" }?.details ?? [:] })
    }

    /// The agent, as this uid or as nobody; its log in the run's folder, its configuration
    /// (`XDG_CONFIG_HOME`) in `agent-config` there; `socket`: where it finds the daemon (a relay's).
    @discardableResult
    func startAgent(asNobody: Bool = false, waylandDisplay: String? = nil, socket: String? = nil) throws -> (
        ChildProcess, String
    ) {
        let log = run.folder + "/agent-\(agents.count).log"
        let output = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        let input = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer {
            Glibc.close(output)
            Glibc.close(input)
        }
        let who = asNobody ? ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] : []
        let binary =
            asNobody ? try Self.copyForNobody(DeviceUsageEndToEndTests.agentBinary) : DeviceUsageEndToEndTests.agentBinary
        let agent = try ChildProcess(
            ["/usr/bin/timeout", "-s", "KILL", "60"] + who + [
                "/usr/bin/env", "DBUS_SESSION_BUS_ADDRESS=\(sessionBus.address)", "XDG_DATA_DIRS=\(run.folder)/share",
                "XDG_DATA_HOME=/nonexistent", "DBUS_SYSTEM_BUS_ADDRESS=\(system.address)",
                "XDG_STATE_HOME=\(run.folder)/agent-state", "XDG_CONFIG_HOME=\(run.folder)/agent-config", "TZ=UTC",
            ] + (waylandDisplay.map { ["WAYLAND_DISPLAY=\($0)"] } ?? []) + [
                binary, "--socket", socket ?? run.socket,
            ], stdin: input, stdout: output, stderr: output)
        agents.append(agent)
        return (agent, log)
    }

    /// `binary` where nobody may run it (`ExecutableForOthers`), in a 0755 folder of /tmp.
    static func copyForNobody(_ binary: String) throws -> String {
        var template = Array("/tmp/skbin-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemError("mkdtemp", errno: errno) }
        let folder = String(cString: made)
        chmod(folder, 0o755)
        let copy = folder + "/" + (binary as NSString).lastPathComponent
        try ExecutableForOthers.place(binary, at: copy)
        return copy
    }

    @discardableResult
    func system(_ arguments: String...) throws -> String { try Self.busctl(system.address, arguments) }
    func systemLog() -> String { system.logText() }
    @discardableResult
    func session(_ arguments: String...) throws -> String { try Self.busctl(sessionBus.address, arguments) }

    @discardableResult
    static func busctl(_ address: String, _ arguments: String...) throws -> String { try busctl(address, arguments) }

    @discardableResult
    static func busctl(_ address: String, _ arguments: [String]) throws -> String {
        let (status, output) = try CommandOutput.run(
            ["/usr/bin/timeout", "10", "/usr/bin/busctl", "--address=" + address, "--"] + arguments)
        guard status == 0 else { throw TestFailure("busctl \(arguments.joined(separator: " ")): \(output)") }
        return output
    }
}
