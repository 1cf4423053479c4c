import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorTestKit
import Testing

/// The report's other sources through the real daemon and agent: the screen's wakes from a
/// compositor's output power (the stand-in compositor, since Debian 12's cannot power a headless
/// output off: docs/wayland.md §7), and unlocks from `org.gnome.ScreenSaver` where logind's
/// `LockedHint` is never set (Phosh 0.24).
extension DeviceUsageEndToEndTests {
    static var outputPowerCompositor: String {
        (IIODaemonRun.daemonBinary as NSString).deletingLastPathComponent + "/output-power-compositor"
    }

    @Test(
        .needs(
            .tools([
                (PrivateBus.daemonPath, "dbus-daemon"), ("/usr/bin/busctl", "systemd"), (TestEnvironment.python, "python3"),
                ("/usr/bin/timeout", "coreutils"),
            ])), .timeLimit(.minutes(3)))
    func aCompositorsOutputPoweringOffAndOnIsOneWake() throws {
        let compositor = try OutputPowerStandIn(binary: Self.outputPowerCompositor)
        defer { compositor.close() }
        let rig = try DeviceUsageRig(sessionUID: getuid())
        defer { rig.stop() }
        let run = rig.run
        let recording = try rig.recordWithAgent(waylandDisplay: compositor.display)
        let (app, startSR, agentLogText, details) = (recording.app, recording.startSR, recording.agentLog, recording.details)
        defer { app.close() }
        #expect(
            IIODaemonRun.eventually(15) { (details()["watching"] ?? "").contains("compositor") },
            "\(details())\n\(agentLogText())\n\(run.log)")
        let before = Int(details()["events"] ?? "") ?? 0
        #expect(compositor.send("off"))
        #expect(IIODaemonRun.eventually(15) { Int(details()["events"] ?? "") ?? 0 > before }, "\(details())")
        // logind's idle hint going idle and back meanwhile is no second wake: the compositor outranks it.
        let session = "org.freedesktop.login1.Session"
        for idle in ["true", "false"] {
            try rig.system("set-property", Self.login1, Self.session, session, "IdleHint", "b", idle)
        }
        #expect(compositor.send("on"))
        #expect(IIODaemonRun.eventually(15) { Int(details()["events"] ?? "") ?? 0 >= before + 4 }, "\(details())")
        let report = try Self.stopAndFetchLastReport(app, run: run, from: startSR, log: agentLogText)
        #expect(report.totalScreenWakes == 1, "\(report.totalScreenWakes)")
        #expect(report.version.hasPrefix("linux-1 wakes=compositor "), "\(report.version)")
    }

    @Test(
        .needs(
            .tools([
                (PrivateBus.daemonPath, "dbus-daemon"), ("/usr/bin/busctl", "systemd"), (TestEnvironment.python, "python3"),
            ])), .timeLimit(.minutes(3)))
    func theScreenSaverUnlocksWhereLogindSetsNoLockedHint() throws {
        let rig = try DeviceUsageRig(sessionUID: getuid())
        defer { rig.stop() }
        let screenSaver = "org.gnome.ScreenSaver"
        try rig.sessionBus.spawn(
            [
                "/usr/bin/env", "DBUS_SESSION_BUS_ADDRESS=\(rig.sessionBus.address)", TestEnvironment.python, "-m", "dbusmock",
                screenSaver, "/org/gnome/ScreenSaver", screenSaver,
            ], log: "screensaver")
        let sessionAddress = rig.sessionBus.address
        #expect(IIODaemonRun.eventually(20) { BLEBlueZEndToEndTests.owned(screenSaver, on: sessionAddress) })
        let run = rig.run
        let recording = try rig.recordWithAgent()
        let (app, startSR, agentLogText, details) = (recording.app, recording.startSR, recording.agentLog, recording.details)
        defer { app.close() }
        #expect(
            IIODaemonRun.eventually(15) { (details()["watching"] ?? "").contains("screensaver") },
            "\(details())\n\(agentLogText())\n\(run.log)")
        let before = Int(details()["events"] ?? "") ?? 0
        // The shell's screen saver comes on (locking the session) and goes off 1.5 s later; logind's
        // LockedHint stays false throughout.
        let emit = { (active: String) throws -> Void in
            try rig.session(
                "call", screenSaver, "/org/gnome/ScreenSaver", "org.freedesktop.DBus.Mock", "EmitSignal", "sssav", screenSaver,
                "ActiveChanged", "b", "1", "b", active)
        }
        let lockedAt = Date()
        try emit("true")
        Thread.sleep(forTimeInterval: 1.5)
        try emit("false")
        let locked = Date().timeIntervalSince(lockedAt)
        #expect(IIODaemonRun.eventually(15) { Int(details()["events"] ?? "") ?? 0 >= before + 2 }, "\(details())")
        let report = try Self.stopAndFetchLastReport(app, run: run, from: startSR, log: agentLogText)
        #expect(report.totalUnlocks == 1, "\(report.totalUnlocks)")
        #expect(report.version.hasSuffix(" unlocks=screensaver"), "\(report.version)")
        // Unlocked all the report long but the 1.5 s the screen saver was on (the emits' own time aside).
        #expect(
            abs(report.totalUnlockDuration - (report.duration - locked)) <= ScriptedDay.tolerance,
            "\(report.totalUnlockDuration) of \(report.duration) s, locked \(locked) s")
    }

    /// Stops recording `deviceUsageReport` and fetches the report the stop closed.
    static func stopAndFetchLastReport(
        _ app: ReaderConnection, run: IIODaemonRun, from: Int64, log: () -> String = { "" }
    ) throws
        -> SRDeviceUsageReport
    {
        let stop = app.call(.stopRecording) { $0.sensor = SRSensor.deviceUsageReport.rawValue }
        #expect(stop.error == nil, "\(stop)")
        var report: SRDeviceUsageReport?
        #expect(
            IIODaemonRun.eventually(15) {
                report = (try? fetchReports(app, from: from, run: run))?.last
                return report != nil
            }, "no report was fetched\n\(run.log)\n\(log())")
        return try #require(report)
    }
}
