import Foundation
import Glibc
import SensorKitModel
import SensorSimulation
import SensorTestKit
import Testing

/// The Python package (clients/python) against a live daemon recording a generated accelerometer:
/// its plain, async, pandas and NumPy reads and its examples (clients/python/test_live_daemon.py).
@Suite struct PythonClientLiveTests {
    static var clientFolder: String {
        ((#filePath as NSString).deletingLastPathComponent as NSString).appendingPathComponent("../../clients/python")
    }

    @Test(.timeLimit(.minutes(3)))
    func packageReadsALiveDaemon() throws {
        let harness = try DaemonHarness(sources: [GeneratedSource(sensor: .accelerometer, rate: 200, perTick: 10)])
        defer { harness.stop() }
        try harness.grant([.accelerometer], to: DaemonHarness.studyApp)
        let log = harness.folder + "/python.log"
        let fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { Glibc.close(fd) }
        let child = try ChildProcess(
            [
                "/usr/bin/timeout", "--kill-after=5", "90", "/usr/bin/env", "-C", Self.clientFolder,
                "SENSORKIT_SOCKET=\(harness.socket)", "SENSORKIT_TEST_APP=\(DaemonHarness.studyApp)",
                TestEnvironment.python, "-m", "unittest", "-v", "test_live_daemon",
            ],
            stdin: 0, stdout: fd, stderr: fd)
        child.wait()
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(child.exitStatus == 0, "\(output)")
        #expect(output.contains("Ran 5 tests") && output.hasSuffix("OK\n"), "\(output)")
        #expect(!output.contains("skipped"), "every live test ran, none skipped: \(output)")
    }
}
