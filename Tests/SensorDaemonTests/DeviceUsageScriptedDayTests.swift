import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorTestKit
import Testing

/// A scripted day through the real daemon and the real agent, with the report's interval set to
/// 6 s (`[device-usage] interval`) so several intervals pass in a test: the compositor is headless
/// sway with `foot` windows of three categories whose focus the test moves, logind is dbusmock's
/// template (locks, unlocks, an idle stretch), the notifications come from two apps through
/// dbusmock's notification server (one through `notify-send`). Each interval's report must hold exactly what was scripted in
/// it, category by category; times within `ScriptedDay.tolerance`.
extension DeviceUsageEndToEndTests {
    /// The interval length, and how far a report's time may be from the script's own clock (an
    /// event is stamped when it reaches the daemon). Every step is done in the first 4.5 s of its
    /// 6 s interval (`require(within:)`), so a late event still lands in its interval.
    enum ScriptedDay {
        static let interval = 6.0
        static let tolerance = 0.75
        static let editor = "org.gnome.TextEditor"
    }

    @Test(
        .needs(
            .tools(
                HeadlessSway.tools + [
                    (PrivateBus.daemonPath, "dbus-daemon"), ("/usr/bin/busctl", "systemd"), (TestEnvironment.python, "python3"),
                    ("/usr/bin/notify-send", "libnotify-bin"),
                ])), .needs(.root("sway runs as nobody in a runtime folder handed over with chown")), .timeLimit(.minutes(3)))
    func aScriptedDayGivesExactlyTheExpectedReports() throws {
        let sway = try HeadlessSway()
        defer { sway.close() }
        let rig = try DeviceUsageRig(
            sessionUID: getuid(), extraConfig: "[device-usage]\ninterval = \(Int(ScriptedDay.interval))s\n")
        defer { rig.stop() }
        try "[Desktop Entry]\nName=Text Editor\nCategories=GNOME;GTK;Utility;TextEditor;\n".write(
            toFile: rig.applications + "/\(ScriptedDay.editor).desktop", atomically: true, encoding: .utf8)
        let run = rig.run
        let recording = try rig.recordWithAgent(waylandDisplay: sway.display)
        let (app, startSR, agentLogText, details) = (recording.app, recording.startSR, recording.agentLog, recording.details)
        defer { app.close() }
        #expect(
            IIODaemonRun.eventually(15) {
                let watching = details()["watching"] ?? ""
                return watching.contains("compositor") && watching.contains("logind-locked-hint")
            }, "\(details())\n\(agentLogText())\n\(run.log)")
        let before = Int(details()["events"] ?? "") ?? 0
        for appID in ["org.gnome.Maps", "im.dino.Dino", ScriptedDay.editor] { try sway.open(appID: appID) }
        // Each window took the front as it came (the editor last).
        #expect(
            IIODaemonRun.eventually(15) { Int(details()["events"] ?? "") ?? 0 >= before + 3 },
            "\(details())\n\(agentLogText())")
        try focus(ScriptedDay.editor, on: sway)

        // Interval A: Maps, then the chat in front; one lock and unlock; two notifications of Maps,
        // one expired, one dismissed.
        let a = waitForNextInterval()
        let mapsAt = try step(after: a) { try focus("org.gnome.Maps", on: sway) }
        let chatAt = try step(after: a) { try focus("im.dino.Dino", on: sway) }
        let lockedA = try lockedStretch(rig, after: a)
        let first = try notify(rig, app: "gnome-maps", entry: "org.gnome.Maps")
        let second = try notify(rig, app: "gnome-maps", entry: "org.gnome.Maps")
        try close(rig, id: first, reason: nil)
        try close(rig, id: second, reason: 2)
        try require(within: a)

        // Interval B: the editor in front; logind idle and active again (no wake: the compositor
        // is watched and its output stayed on); two locks; the chat's notification answered by its
        // default action and a reply, one of Maps closed by a call.
        let b = waitForNextInterval()
        let editorAt = try step(after: b) { try focus(ScriptedDay.editor, on: sway) }
        let session = "org.freedesktop.login1.Session"
        for idle in ["true", "false"] {
            try rig.system("set-property", Self.login1, Self.session, session, "IdleHint", "b", idle)
        }
        let lockedB = try lockedStretch(rig, after: b) + lockedStretch(rig, after: b)
        let chat = try notifySend(rig, app: "dino", entry: "im.dino.Dino")
        try invoke(rig, id: chat, action: "default")
        try invoke(rig, id: chat, action: "reply")
        let maps = try notify(rig, app: "gnome-maps", entry: "org.gnome.Maps")
        try close(rig, id: maps, reason: 3)
        try require(within: b)

        // Interval C: nothing happens; the editor stays in front and the session unlocked.
        _ = waitForNextInterval()
        _ = waitForNextInterval()
        let stop = app.call(.stopRecording) { $0.sensor = SRSensor.deviceUsageReport.rawValue }
        #expect(stop.error == nil, "\(stop)")

        var reports: [SRDeviceUsageReport] = []
        #expect(
            IIODaemonRun.eventually(15) {
                reports = (try? Self.fetchReports(app, from: startSR, run: run)) ?? []
                return reports.count >= 4
            }, "\(reports.count) reports\n\(run.log)\n\(agentLogText())")
        // The last report is the short one closed by the stop; the three before it are A, B, C.
        try #require(reports.count >= 4)
        let (reportA, reportB, reportC) = (reports[reports.count - 4], reports[reports.count - 3], reports[reports.count - 2])
        let length = ScriptedDay.interval
        for report in [reportA, reportB, reportC] {
            #expect(abs(report.duration - length) < 0.01, "\(report.duration)")
            #expect(report.totalScreenWakes == 0, "\(report.totalScreenWakes)")
            #expect(report.version == "linux-1 wakes=compositor unlocks=logind-locked-hint", "\(report.version)")
            #expect(report.webUsageByCategory.isEmpty)
        }

        // A, category by category.
        expectApps(
            reportA,
            [
                .productivity: [(ScriptedDay.editor, mapsAt, 0)],
                .navigation: [("org.gnome.Maps", chatAt - mapsAt, mapsAt)],
                .socialNetworking: [("im.dino.Dino", length - chatAt, chatAt)],
            ])
        #expect(reportA.totalUnlocks == 1, "\(reportA.totalUnlocks)")
        expectClose(reportA.totalUnlockDuration, length - lockedA, "A's time unlocked")
        expectNotifications(reportA, [.navigation: ["org.gnome.Maps": [.received, .received, .expired, .clear]]])

        // B.
        expectApps(
            reportB,
            [
                .socialNetworking: [("im.dino.Dino", editorAt, 0)],
                .productivity: [(ScriptedDay.editor, length - editorAt, editorAt)],
            ])
        #expect(reportB.totalUnlocks == 2, "\(reportB.totalUnlocks)")
        expectClose(reportB.totalUnlockDuration, length - lockedB, "B's time unlocked")
        expectNotifications(
            reportB,
            [
                .socialNetworking: ["im.dino.Dino": [.received, .defaultAction, .supplementaryAction]],
                .navigation: ["org.gnome.Maps": [.received, .removed]],
            ])

        // C: the whole interval in the editor, unlocked, nothing else.
        expectApps(reportC, [.productivity: [(ScriptedDay.editor, length, 0)]])
        #expect(reportC.totalUnlocks == 0)
        expectClose(reportC.totalUnlockDuration, length, "C's time unlocked")
        #expect(reportC.notificationUsageByCategory.isEmpty, "\(reportC.notificationUsageByCategory)")
    }

    // MARK: The script's steps

    /// Sleeps until 0.3 s past the next interval boundary (wall clock, as the daemon aligns them)
    /// at least 0.5 s away; returns that boundary.
    func waitForNextInterval() -> Double {
        let length = ScriptedDay.interval
        let now = Date().timeIntervalSince1970
        var boundary = (now / length).rounded(.up) * length
        if boundary - now < 0.5 { boundary += length }
        Thread.sleep(forTimeInterval: boundary + 0.3 - now)
        return boundary
    }

    /// Runs `action` and returns how far into the interval that began at `boundary` it was done.
    func step(after boundary: Double, _ action: () throws -> Void) throws -> Double {
        try action()
        let at = Date().timeIntervalSince1970 - boundary
        Thread.sleep(forTimeInterval: 0.3)
        return at
    }

    /// Every step must be done early enough that a late event still falls in its interval.
    func require(within boundary: Double) throws {
        let into = Date().timeIntervalSince1970 - boundary
        try #require(into < ScriptedDay.interval - 1.5, "the script ran \(into) s into its \(ScriptedDay.interval) s interval")
    }

    func focus(_ appID: String, on sway: HeadlessSway) throws {
        _ = try sway.swaymsg(["[app_id=\"\(appID)\"] focus"])
    }

    /// Locks the session through logind's `LockedHint`, unlocks it a step (0.3 s) later; the seconds locked.
    func lockedStretch(_ rig: DeviceUsageRig, after boundary: Double) throws -> Double {
        let session = "org.freedesktop.login1.Session"
        let locked = try step(after: boundary) {
            try rig.system("call", Self.login1, Self.session, session, "SetLockedHint", "b", "true")
        }
        let unlocked = try step(after: boundary) {
            try rig.system("call", Self.login1, Self.session, session, "SetLockedHint", "b", "false")
        }
        return unlocked - locked
    }

    /// A `Notify` call with a desktop-entry hint; the id the server answered.
    func notify(_ rig: DeviceUsageRig, app: String, entry: String) throws -> String {
        let answer = try rig.session(
            "call", Self.notifications, "/org/freedesktop/Notifications", Self.notifications, "Notify", "susssasa{sv}i",
            app, "0", "", Self.secrets[0], Self.secrets[1], "0", "1", "desktop-entry", "s", entry, "-1")
        // busctl prints the reply as `u 7`.
        let id = answer.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
        try #require(UInt32(id) != nil, "Notify answered \(answer)")
        return id
    }

    /// The same through `notify-send`, as a desktop's scripts and many apps send them.
    func notifySend(_ rig: DeviceUsageRig, app: String, entry: String) throws -> String {
        let (status, output) = try CommandOutput.run([
            "/usr/bin/env", "DBUS_SESSION_BUS_ADDRESS=\(rig.sessionBus.address)", "/usr/bin/timeout", "10",
            "/usr/bin/notify-send", "--app-name=\(app)", "--hint=string:desktop-entry:\(entry)", "--print-id", Self.secrets[0],
            Self.secrets[1],
        ])
        let id = output.split(separator: "\n").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        try #require(status == 0 && UInt32(id) != nil, "notify-send: \(status) \(output)")
        return id
    }

    /// Closes notification `id`: by the server's `CloseNotification` (reason 1, expired) when
    /// `reason` is nil, else by emitting `NotificationClosed` with `reason`.
    func close(_ rig: DeviceUsageRig, id: String, reason: Int?) throws {
        let path = "/org/freedesktop/Notifications"
        if let reason {
            try rig.session(
                "call", Self.notifications, path, "org.freedesktop.DBus.Mock", "EmitSignal", "sssav", Self.notifications,
                "NotificationClosed", "uu", "2", "u", id, "u", String(reason))
        } else {
            try rig.session("call", Self.notifications, path, Self.notifications, "CloseNotification", "i", id)
        }
    }

    func invoke(_ rig: DeviceUsageRig, id: String, action: String) throws {
        try rig.session(
            "call", Self.notifications, "/org/freedesktop/Notifications", "org.freedesktop.DBus.Mock", "EmitSignal", "sssav",
            Self.notifications, "ActionInvoked", "us", "2", "u", id, "s", action)
    }

    // MARK: What a report must hold

    func expectClose(
        _ value: Double, _ expected: Double, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            abs(value - expected) <= ScriptedDay.tolerance, "\(what): \(value) s, expected \(expected) s",
            sourceLocation: sourceLocation)
    }

    /// Exactly these apps in these categories, each with its time in front and first use (s).
    func expectApps(
        _ report: SRDeviceUsageReport,
        _ expected: [SRDeviceUsageReport.CategoryKey: [(id: String, seconds: Double, start: Double)]],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let got = report.applicationUsageByCategory
        #expect(
            Set(got.keys.map(\.rawValue)) == Set(expected.keys.map(\.rawValue)), "\(got)", sourceLocation: sourceLocation)
        for (category, apps) in expected {
            let usages = got[category] ?? []
            #expect(
                usages.map { $0.bundleIdentifier ?? "-" } == apps.map(\.id), "\(category.rawValue): \(usages)",
                sourceLocation: sourceLocation)
            for (usage, app) in zip(usages, apps) {
                expectClose(usage.usageTime, app.seconds, "\(app.id)'s time in front", sourceLocation: sourceLocation)
                expectClose(usage.relativeStartTime, app.start, "\(app.id)'s first use", sourceLocation: sourceLocation)
            }
        }
    }

    /// Exactly these notification events, by category and app (in any order).
    func expectNotifications(
        _ report: SRDeviceUsageReport,
        _ expected: [SRDeviceUsageReport.CategoryKey: [String: [SRDeviceUsageReport.NotificationUsage.Event]]],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let got = report.notificationUsageByCategory
        #expect(
            Set(got.keys.map(\.rawValue)) == Set(expected.keys.map(\.rawValue)), "\(got)", sourceLocation: sourceLocation)
        for (category, byApp) in expected {
            var events: [String: [Int]] = [:]
            for usage in got[category] ?? [] { events[usage.bundleIdentifier ?? "-", default: []].append(usage.event.rawValue) }
            #expect(
                events.mapValues { $0.sorted() } == byApp.mapValues { $0.map(\.rawValue).sorted() },
                "\(category.rawValue): \(events)", sourceLocation: sourceLocation)
        }
    }
}
