import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import SensorTestKit
import Testing

/// `textInputSessions` from real typing (docs/device-usage.md, "Text input"): the real
/// `sensorkitd` under umockdev with an emulated keyboard typing a passphrase, logind from
/// python-dbusmock on a private system bus, and the app in front told over the reader socket as
/// the session agent tells it (protocol §3.7). Only `deviceUsageReport` is recorded — not
/// `keyboardMetrics` — so the keyboard is opened for the report alone. The typing is one episode,
/// counted into the app in front while it was typed and not into the app after it; no byte
/// written holds the keys.
@Suite(.serialized) struct TextInputEndToEndTests {
    static let editor = "org.gnome.TextEditor"
    static let chat = "im.dino.Dino"

    @Test(
        .needs(.umockdev),
        .needs(
            .tools([
                (PrivateBus.daemonPath, "dbus-daemon"), ("/usr/bin/busctl", "systemd"), (TestEnvironment.python, "python3"),
            ])), .timeLimit(.minutes(3)))
    func anEpisodeTypedCountsIntoTheAppInFrontAndTheKeysAreNowhere() throws {
        let rig = try DeviceUsageRig(sessionUID: getuid(), typing: EvemuScript.typing(EvemuScript.passphrase))
        defer { rig.stop() }
        let run = rig.run
        let app = try run.connect()
        defer { app.close() }
        #expect(IIODaemonRun.eventually(15) { run.log.contains("seat0's active session is") }, "\(run.log)")
        let agent = try run.connect(app: nil)
        defer { agent.close() }
        let admitted = agent.call(.agent)
        #expect(admitted.error == nil, "\(admitted)")
        let (startSR, _) = try run.timeline(app)
        var frames: [UInt8] = []
        func front(_ id: String, _ category: SRDeviceUsageReport.CategoryKey) {
            let reply = agent.call(.usage) {
                $0.events = [
                    WireUsageEvent(kind: .foreground, app: id, category: Int(DeviceUsageFamily.categoryIndex(category)))
                ]
            }
            #expect(reply.error == nil, "\(reply)")
        }
        // The editor is in front before recording starts, so it is in front when the keys come
        // whatever the load (`UsageRecorderTests.anAppBroughtToTheFrontBeforeRecordingStartsIsInFrontFromTheStart`).
        // Told after the start, it raced the typing: umockdev types a second after the keyboard's
        // node is opened, and under the full suite's load the event sometimes came later (the
        // report then gave the editor no session while the daemon had counted one).
        front(Self.editor, .productivity)
        // The keyboard's node is opened now; umockdev types into it a second later.
        try run.startRecording(app, .deviceUsageReport)
        let details = { (try? run.devices())?.first { $0.source == "session:device-usage" }?.details ?? [:] }
        #expect(IIODaemonRun.eventually(15) { details()["textInputSessions"] == "1" }, "\(details())\n\(run.log)")
        #expect(details()["typing"] == "1 keyboard(s)", "\(details())")
        let before = details()["events"].flatMap { Int($0) } ?? 0
        front(Self.chat, .socialNetworking)
        #expect(IIODaemonRun.eventually(15) { details()["events"].flatMap { Int($0) } ?? 0 > before }, "\(details())")

        let stop = app.call(.stopRecording) { $0.sensor = SRSensor.deviceUsageReport.rawValue }
        #expect(stop.error == nil, "\(stop)")
        var report: SRDeviceUsageReport?
        let fetchedAny = try IIODaemonRun.eventually(15) {
            let (now, _) = try run.timeline(app)
            let (batches, _) = DaemonHarness.fetchAll(app, sensor: .deviceUsageReport, from: startSR, to: now, timeout: 10)
            frames = []
            for batch in batches { batch.appendFrame(to: &frames) }
            report = (try? DeviceUsageEndToEndTests.fetchReports(app, from: startSR, run: run))?.last
            return report != nil
        }
        #expect(fetchedAny, "no report was fetched\n\(run.log)")
        let fetched = try #require(report)
        let editor = fetched.applicationUsageByCategory[.productivity]?.first { $0.bundleIdentifier == Self.editor }
        let chat = fetched.applicationUsageByCategory[.socialNetworking]?.first { $0.bundleIdentifier == Self.chat }
        #expect(editor?.textInputSessions.count == 1, "\(fetched.applicationUsageByCategory)")
        #expect(chat?.textInputSessions.count == 0, "\(fetched.applicationUsageByCategory)")

        // Every byte written: the store, the daemon's log, the frames it sent.
        rig.stop()
        var written: [(String, [UInt8])] = [("fetched frames", frames)]
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
        #expect(written.count >= 3, "the store wrote no files under \(state)")
        for (name, bytes) in written {
            for (form, needle) in KeyboardEndToEndTests.passphraseForms where KeyboardEndToEndTests.contains(bytes, needle) {
                Issue.record("\(name) holds the typed keys (\(form))")
            }
        }
        #expect(!KeyboardEndToEndTests.numbersHold(KeyboardEndToEndTests.codes, in: run.log), "the log names the typed keys")
    }
}
