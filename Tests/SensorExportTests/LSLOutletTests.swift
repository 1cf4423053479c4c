import Foundation
import Glibc
import SensorKitModel
import SensorSimulation
import SensorTestKit
import Testing

/// The Python package's LSL outlet (`python -m sensorkit.lsl`, docs/live.md) against a live daemon
/// recording a generated 200 Hz accelerometer, read by a pylsl inlet (clients/python/test_lsl_outlet.py),
/// with the daemon restarted halfway: the test reaches it through a link this side re-points.
@Suite struct LSLOutletTests {
    /// The venv scripts/install-deps.sh builds with pylsl from PyPI.
    static let python =
        ProcessInfo.processInfo.environment["SENSORKIT_LSL_PYTHON"]
        ?? (ProcessInfo.processInfo.environment["SENSORKIT_LSL_VENV"] ?? "/opt/sensorkit-lsl-venv") + "/bin/python"

    static func recordingDaemon() throws -> DaemonHarness {
        let harness = try DaemonHarness(sources: [GeneratedSource(sensor: .accelerometer, rate: 200, perTick: 10)])
        try harness.grant([.accelerometer], to: DaemonHarness.studyApp)
        let app = try harness.connect(app: DaemonHarness.studyApp)
        defer { app.close() }
        if let error = app.call(.startRecording, { $0.sensor = SRSensor.accelerometer.rawValue }).error { throw error }
        return harness
    }

    @Test(.timeLimit(.minutes(3)))
    func outletRelaysEverySampleWithMappedTimesAndSurvivesARestart() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.python),
            "no \(Self.python): scripts/install-deps.sh builds the LSL venv (pylsl from PyPI)")
        var template = Array("/tmp/sklsl-XXXXXX".utf8CString)
        let control = String(cString: try #require(mkdtemp(&template)))
        defer { try? FileManager.default.removeItem(atPath: control) }
        let link = control + "/s.sock"
        var harness = try Self.recordingDaemon()
        defer { harness.stop() }
        symlink(harness.socket, link)
        let log = control + "/python.log"
        let fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { Glibc.close(fd) }
        let child = try ChildProcess(
            [
                "/usr/bin/timeout", "--kill-after=5", "150", "/usr/bin/env", "-C", PythonClientLiveTests.clientFolder,
                "SENSORKIT_SOCKET=\(link)", "SENSORKIT_TEST_APP=\(DaemonHarness.studyApp)", "SENSORKIT_TEST_CONTROL=\(control)",
                Self.python, "-m", "unittest", "-v", "test_lsl_outlet",
            ],
            stdin: 0, stdout: fd, stderr: fd)
        let asked = DaemonHarness.eventually(120) {
            FileManager.default.fileExists(atPath: control + "/restart") || !child.isRunning
        }
        if asked && child.isRunning {
            harness.stop()
            harness = try Self.recordingDaemon()
            unlink(link)
            symlink(harness.socket, link)
            _ = FileManager.default.createFile(atPath: control + "/restarted", contents: nil)
        }
        child.wait()
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        let outlet = (try? String(contentsOfFile: control + "/outlet.log", encoding: .utf8)) ?? ""
        #expect(child.exitStatus == 0, "\(output)\noutlet:\n\(outlet)")
        #expect(output.contains("Ran 1 test") && output.hasSuffix("OK\n"), "\(output)")
    }
}
