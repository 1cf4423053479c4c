import Foundation
import Glibc
import SensorKitModel
import SensorSimulation
import SensorTestKit
import Testing

/// The participant's GTK application (clients/python/sensorkit/participant) against a live daemon,
/// under Xvfb and a private session bus, driven through AT-SPI (clients/python/test_participant_ui.py):
/// the authorization sheet on a pending request (present before the watcher started, or made while
/// it waits on the daemon's event, with no requests sent while idle), the Research Sensor & Usage Data panel turning a
/// sensor off and deleting a day. `com.example.recorder` keeps the accelerometer recording, so the
/// panel has a day to show; `com.example.keyboard` is answered with the keyboard alone. Screenshots
/// at phone and tablet sizes, portrait and landscape, land in
/// `$SENSORKIT_TEST_ARTEFACTS/participant-screenshots/` (default `.build/…/debug/participant-screenshots/`).
@Suite struct ParticipantUITests {
    static var clientFolder: String {
        ((#filePath as NSString).deletingLastPathComponent as NSString).appendingPathComponent("../../clients/python")
    }

    @Test(.timeLimit(.minutes(3)))
    func sheetAndPanelWorkThroughTheAccessibilityTree() throws {
        let harness = try DaemonHarness(sources: [GeneratedSource(sensor: .accelerometer, rate: 200, perTick: 10)]) {
            try DaemonHarness.writeApp(
                "com.example.recorder", in: $0 + "/apps.d", entitlements: ["motion-accelerometer"], users: ["root"])
            // Asks only once the watcher runs (its sheet comes from the daemon's event).
            try DaemonHarness.writeApp(
                "com.example.later", in: $0 + "/apps.d", entitlements: ["motion-accelerometer"], users: ["root"])
            try DaemonHarness.writeApp(
                "com.example.keyboard", in: $0 + "/apps.d", entitlements: ["motion-accelerometer", "ambient-light-sensor"],
                users: ["root"])
        }
        defer { harness.stop() }
        try harness.grant([.accelerometer], to: "com.example.recorder")
        let recorder = try harness.connect(app: "com.example.recorder")
        #expect(recorder.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }.error == nil)
        recorder.close()
        let shots =
            (ProcessInfo.processInfo.environment["SENSORKIT_TEST_ARTEFACTS"] ?? DaemonHarness.productsFolder)
            + "/participant-screenshots"
        try? FileManager.default.removeItem(atPath: shots)
        try FileManager.default.createDirectory(atPath: shots, withIntermediateDirectories: true)
        let log = harness.folder + "/ui.log"
        let fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { Glibc.close(fd) }
        let child = try ChildProcess(
            [
                "/usr/bin/timeout", "--kill-after=5", "150", "/usr/bin/env", "-C", Self.clientFolder,
                "SENSORKIT_SOCKET=\(harness.socket)", "SENSORKIT_TEST_SCREENSHOTS=\(shots)",
                "SENSORKIT_TEST_FRAMEBUFFER=\(harness.folder)/Xvfb_screen0",
                "/usr/bin/xvfb-run", "--auto-servernum", "--server-args=-screen 0 1920x1280x24 -fbdir \(harness.folder)",
                "/usr/bin/dbus-run-session", "--", TestEnvironment.python, "run_tests.py", "test_participant_ui",
            ],
            stdin: 0, stdout: fd, stderr: fd)
        child.wait()
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(child.exitStatus == 0, "\(output)")
        #expect(output.contains("python: 6 passed, 0 failed, 0 skipped"), "\(output)")
    }
}
