import Dispatch
import Foundation
import Glibc
import SensorDaemon
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import SensorTestKit
import Synchronization
import Testing

/// Any local user may connect and leave as it likes, as fast as it likes: the daemon outlives it,
/// keeps recording and its log stays clean (docs/reliability.md, "Connection churn").
@Suite(.serialized) struct ReaderChurnTests {
    static let top = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `scripts/soak/churn.py` copied where `nobody` can read it; once, before the clients start
    /// (clients copying it at once raced: all but the first failed to start).
    static func placeChurnScript(_ harness: DaemonHarness) throws -> String {
        let script = harness.folder + "/churn.py"
        try FileManager.default.copyItem(atPath: top.path + "/scripts/soak/churn.py", toPath: script)
        chmod(script, 0o755)
        return script
    }

    /// Runs the churn script for `count` connections, as root or as nobody; its exit status and
    /// summary line.
    static func churn(
        _ harness: DaemonHarness, script: String, count: Int, app: String?,
        asNobody: Bool
    ) throws -> (status: Int32, output: String) {
        let arguments =
            ["/usr/bin/timeout", "--kill-after=5", "120", TestEnvironment.python, script, harness.socket, String(count)]
            + (app.map { [$0] } ?? [])
        return asNobody ? try DaemonHarness.asNobody(arguments) : try CommandOutput.run(arguments)
    }

    @Test(.timeLimit(.minutes(3))) func connectionsOfEveryKindComeAndGoWhileRecordingGoesOn() throws {
        let harness = try DaemonHarness(sources: [GeneratedSource(rate: 200, perTick: 20)])
        defer { harness.stop() }
        try harness.grant([.accelerometer], to: DaemonHarness.otherApp)
        let app = try harness.connect(app: DaemonHarness.otherApp)
        #expect(app.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }.error == nil)
        app.close()
        #expect(DaemonHarness.eventually(10) { harness.samplesVisible(to: DaemonHarness.otherApp) > 0 })

        // Four clients at once, two of them as another user: every kind of goodbye, thousands of times.
        // Each waits for its client on a thread of its own, not on libdispatch's workers: the
        // daemon runs in this process, its connections' queues need those workers, and on Linux
        // libdispatch keeps about one per core and adds more only as its once-a-second monitor
        // finds them blocked. Four blocked waits there are the likely cause of the answers that
        // took over the clients' 30 s in CI (two clients at once, on two days).
        let script = try Self.placeChurnScript(harness)
        let results = Mutex<[(status: Int32, output: String)]>([])
        let done = DispatchGroup()
        for client in 0..<4 {
            done.enter()
            Thread {
                defer { done.leave() }
                let result: (status: Int32, output: String)
                do {
                    result = try Self.churn(
                        harness, script: script, count: 2_500, app: DaemonHarness.otherApp,
                        asNobody: client % 2 == 1)
                } catch {
                    result = (-1, "could not start the churn client: \(error)")
                }
                results.withLock { $0.append(result) }
            }.start()
        }
        done.wait()
        for result in results.withLock({ $0 }) {
            // On failure: the script's reasons per kind, and the daemon's last lines at notice or worse.
            #expect(
                result.status == 0 && result.output.contains("failed=0"),
                "\(result.output) \(harness.logLines().filter { ("<0>"..."<5>").contains($0.prefix(3)) }.suffix(8))")
        }

        // Alive, every connection given back, still recording, and nothing in the log worse than
        // a notice about the clients (their goodbyes are ordinary).
        let admin = try harness.connect(app: nil)
        defer { admin.close() }
        #expect(
            DaemonHarness.eventually(10) { admin.call(.daemonStatus).info?["connections"] == "1" },
            "\(admin.call(.daemonStatus).info ?? [:])")
        let before = harness.samplesVisible(to: DaemonHarness.otherApp)
        #expect(DaemonHarness.eventually(5) { harness.samplesVisible(to: DaemonHarness.otherApp) > before })
        let serious = harness.logLines().filter {
            $0.hasPrefix("<0>") || $0.hasPrefix("<1>") || $0.hasPrefix("<2>") || $0.hasPrefix("<3>")
        }
        #expect(serious.isEmpty, "\(serious.prefix(5))")
    }
}
