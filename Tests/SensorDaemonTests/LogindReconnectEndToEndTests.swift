import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import SensorTestKit
import Testing

/// The daemon keeps watching logind across restarts (docs/device-usage.md, "logind going
/// away"): python-dbusmock's `logind` template on a private bus the daemon takes for its system
/// bus is killed mid-recording — first logind alone, then the bus under it — and started again;
/// the locks and unlocks after each restart are counted in the report, and each outage is a
/// deletion record of its own.
@Suite(.serialized) struct LogindReconnectEndToEndTests {
    @Test(
        .needs(
            .tools([
                (PrivateBus.daemonPath, "dbus-daemon"), ("/usr/bin/busctl", "systemd"), (TestEnvironment.python, "python3"),
            ])), .timeLimit(.minutes(3)))
    func locksAfterLogindAndTheBusRestartAreCountedAgain() throws {
        let rig = try DeviceUsageRig(sessionUID: getuid())
        defer { rig.stop() }
        let run = rig.run
        let app = try run.connect()
        defer { app.close() }
        let (startSR, _) = try run.timeline(app)
        try run.startRecording(app, .deviceUsageReport)
        let details = { (try? run.devices())?.first { $0.source == "session:device-usage" }?.details ?? [:] }
        let watched = { details()["watching"]?.contains("logind-locked-hint") == true }
        #expect(IIODaemonRun.eventually(15) { watched() }, "\(details())\n\(run.log)")
        let session = "org.freedesktop.login1.Session"
        var unlocks = 0
        let lockStateLost = { run.log.components(separatedBy: "not observed: the lock state").count - 1 }
        // (A daemon that met logind only after recording began has one such stretch already.)
        let lostBefore = lockStateLost()
        for restartBus in [false, true] {
            try rig.restartLogind(bus: restartBus)
            let lostLine = restartBus ? "system bus connection was lost" : "logind left the system bus"
            #expect(IIODaemonRun.eventually(15) { run.log.contains(lostLine) }, "\(run.log)")
            // Watched again: the session's states were read afresh.
            let again = IIODaemonRun.eventually(15) {
                watched() && run.log.components(separatedBy: "seat0's active session is").count >= (restartBus ? 4 : 3)
            }
            #expect(again, "\(details())\n\(run.log)")
            let before = Int(details()["events"] ?? "") ?? 0
            try rig.system(
                "call", DeviceUsageEndToEndTests.login1, DeviceUsageEndToEndTests.session, session, "SetLockedHint", "b", "true")
            try rig.system(
                "call", DeviceUsageEndToEndTests.login1, DeviceUsageEndToEndTests.session, session, "SetLockedHint", "b", "false")
            unlocks += 1
            #expect(IIODaemonRun.eventually(15) { (Int(details()["events"] ?? "") ?? 0) >= before + 2 }, "\(details())")
        }

        let fetched = try DeviceUsageEndToEndTests.stopAndFetchLastReport(app, run: run, from: startSR)
        #expect(fetched.totalUnlocks == unlocks, "\(fetched.totalUnlocks)\n\(run.log)")
        #expect(fetched.version.hasSuffix("unlocks=logind-locked-hint"), "\(fetched.version)")
        // No agent runs, so the app in front is never observed: deletion records cover the whole
        // recording. Each outage is a stretch of its own that lacked the lock state too, which the
        // daemon's log names (the store keeps spans and reasons only).
        try DeviceUsageEndToEndTests.expectDeletionRecordsCover(fetched, app, run: run, from: startSR)
        #expect(lockStateLost() - lostBefore == 2, "\(run.log)")
    }
}
