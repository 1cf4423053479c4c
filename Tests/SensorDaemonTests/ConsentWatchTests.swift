import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorTestKit
import Synchronization
import Testing

@testable import SensorDaemon

/// `watchConsent` (docs/protocol.md §3.10): a Consenter of an app hears at once when the app asks
/// for consent and when the request is answered, of that app only; a stranger is refused; the
/// watches are bounded per connection, per user and in all, and a watcher that does not read
/// holds one event in the daemon.
@Suite(.serialized) struct ConsentWatchTests {
    static let study = DaemonHarness.studyApp
    static let other = DaemonHarness.otherApp
    static let accelerometer = SRSensor.accelerometer.rawValue
    static var clientFolder: String {
        ((#filePath as NSString).deletingLastPathComponent as NSString).appendingPathComponent("../../clients/python")
    }

    /// A daemon where `nobody` answers for com.example.other (its Consenters) and nothing else.
    static func daemon() throws -> DaemonHarness {
        try DaemonHarness { folder in
            let binding = ["Users": ["root", "nobody"], "Consenters": ["nobody"]]
            let data = try PropertyListSerialization.data(fromPropertyList: binding, format: .xml, options: 0)
            try data.write(to: URL(fileURLWithPath: folder + "/apps.d/\(Self.other)/Binding.plist"))
        }
    }

    /// The Python client watching as `uid` in a process of its own (the daemon knows a peer by
    /// its credentials): one JSON line for the reply (or `{"refused": code}`), then one per event.
    static func watcher(as uid: UInt32, socket: String, output: String) throws -> ChildProcess {
        // The client module goes beside the socket: the checkout may sit in a folder only root
        // can enter (CI clones into a mode-0700 mktemp folder), the harness's folder is 0755.
        let reachable = (socket as NSString).deletingLastPathComponent + "/python"
        if !FileManager.default.fileExists(atPath: reachable + "/sensorkit_client.py") {
            try FileManager.default.createDirectory(atPath: reachable, withIntermediateDirectories: true)
            try FileManager.default.copyItem(
                atPath: clientFolder + "/sensorkit_client.py", toPath: reachable + "/sensorkit_client.py")
        }
        let script = """
            import json, sys
            sys.path.insert(0, \(String(reflecting: reachable)))
            from sensorkit_client import SensorKitClient, SensorKitError
            client = SensorKitClient(\(String(reflecting: socket)), timeout=30)
            client.hello()
            try:
                print(json.dumps(client.watch_consent()), flush=True)
            except SensorKitError as error:
                print(json.dumps({"refused": error.code}), flush=True)
                sys.exit(0)
            while True:
                print(json.dumps(client.next_event()), flush=True)
            """
        let fd = open(output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        defer { Glibc.close(fd) }
        return try ChildProcess(
            [
                "/usr/bin/timeout", "--kill-after=5", "60", "/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(uid)",
                "--clear-groups", "--", TestEnvironment.python, "-c", script,
            ], stdin: 0, stdout: fd, stderr: fd)
    }

    static func lines(_ path: String) -> [[String: Any]] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    static func stop(_ child: ChildProcess) {
        kill(-child.pid, SIGTERM)
        child.wait()
    }

    /// An app's `requestAuthorization`, left waiting for a person (its connection stays open).
    static func request(_ harness: DaemonHarness, app: String, _ sensors: [String]) throws -> ReaderConnection {
        let connection = try harness.connect(app: app)
        connection.send({ $0.sensors = sensors }, op: .requestAuthorization) { _ in }
        return connection
    }

    @Test(.timeLimit(.minutes(3))) func aConsenterHearsOfItsAppsRequestsAtOnceAndOfNoOtherApp() throws {
        let harness = try Self.daemon()
        defer { harness.stop() }
        let output = harness.folder + "/nobody-watch.jsonl"
        let child = try Self.watcher(as: DaemonHarness.nobody, socket: harness.socket, output: output)
        defer { Self.stop(child) }
        #expect(DaemonHarness.eventually { Self.lines(output).first?["ok"] as? Bool == true }, "\(Self.lines(output))")

        // The study's request first: a Consenter of com.example.other only must not hear of it.
        let study = try Self.request(harness, app: Self.study, [Self.accelerometer])
        defer { study.close() }
        let admin = try harness.connect(app: nil)
        defer { admin.close() }
        #expect(
            DaemonHarness.eventually {
                admin.call(.consentList) { $0.app = Self.study }.consent?.first?.items.contains { $0.pending == true } == true
            })
        let asked = Date()
        let other = try Self.request(harness, app: Self.other, [Self.accelerometer])
        defer { other.close() }
        let pending: ([String: Any]) -> Bool = {
            $0["event"] as? String == "consentPending" && $0["app"] as? String == Self.other
                && $0["sensors"] as? [String] == [Self.accelerometer]
        }
        #expect(DaemonHarness.eventually(5) { Self.lines(output).contains(where: pending) }, "\(Self.lines(output))")
        let latency = Date().timeIntervalSince(asked)
        #expect(latency < 5, "the event came \(latency) s after the request")

        // Answered: the watch hears that nothing waits any more.
        try harness.grant([.accelerometer], to: Self.other)
        let answered: ([String: Any]) -> Bool = {
            $0["event"] as? String == "consentPending" && $0["app"] as? String == Self.other
                && ($0["sensors"] as? [String])?.isEmpty == true
        }
        #expect(DaemonHarness.eventually(5) { Self.lines(output).contains(where: answered) }, "\(Self.lines(output))")
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(!text.contains(Self.study), "a Consenter of another app never hears of the study: \(text)")
        #expect(Self.lines(output).allSatisfy { ($0["target"] as? Int).map { $0 > 0 } ?? ($0["ok"] != nil) })
    }

    @Test(.timeLimit(.minutes(3))) func aUidMadeAConsenterByAReloadHearsOfWhatAlreadyWaits() throws {
        let harness = try Self.daemon()
        defer { harness.stop() }
        let output = harness.folder + "/nobody-watch.jsonl"
        let child = try Self.watcher(as: DaemonHarness.nobody, socket: harness.socket, output: output)
        defer { Self.stop(child) }
        #expect(DaemonHarness.eventually { Self.lines(output).first?["ok"] as? Bool == true }, "\(Self.lines(output))")
        let study = try Self.request(harness, app: Self.study, [Self.accelerometer])
        defer { study.close() }
        let admin = try harness.connect(app: nil)
        defer { admin.close() }
        #expect(
            DaemonHarness.eventually {
                admin.call(.consentList) { $0.app = Self.study }.consent?.first?.items.contains { $0.pending == true } == true
            })
        #expect(Self.lines(output).count == 1, "not a Consenter of the study yet: \(Self.lines(output))")

        let binding = ["Users": ["root"], "Consenters": ["nobody"]]
        let data = try PropertyListSerialization.data(fromPropertyList: binding, format: .xml, options: 0)
        try data.write(to: URL(fileURLWithPath: harness.folder + "/apps.d/\(Self.study)/Binding.plist"))
        harness.daemon.reload()
        #expect(
            DaemonHarness.eventually(5) {
                Self.lines(output).contains {
                    $0["app"] as? String == Self.study && $0["sensors"] as? [String] == [Self.accelerometer]
                }
            }, "\(Self.lines(output))")
    }

    @Test(.timeLimit(.minutes(3))) func aWatchStartedLaterHearsOfWhatAlreadyWaitsAndRootHearsOfEveryApp() throws {
        let harness = try Self.daemon()
        defer { harness.stop() }
        let study = try Self.request(harness, app: Self.study, [Self.accelerometer, SRSensor.ambientLightSensor.rawValue])
        defer { study.close() }
        let admin = try harness.connect(app: nil)
        defer { admin.close() }
        #expect(
            DaemonHarness.eventually {
                admin.call(.consentList) { $0.app = Self.study }.consent?.first?.items.allSatisfy { $0.pending == true } == true
            })
        let heard = Mutex<[PendingConsent]>([])
        let watcher = try harness.connect(app: nil)
        defer { watcher.close() }
        let reply = watcher.watchConsent { event in heard.withLock { $0.append(event) } }
        #expect(reply.ok == true, "\(reply)")
        let waiting = PendingConsent(app: Self.study, sensors: [.ambientLightSensor, .accelerometer])  // by raw value
        #expect(DaemonHarness.eventually(5) { heard.withLock { $0 } == [waiting] }, "\(heard.withLock { $0 })")

        let other = try Self.request(harness, app: Self.other, [Self.accelerometer])
        defer { other.close() }
        #expect(
            DaemonHarness.eventually(5) {
                heard.withLock { $0.last } == PendingConsent(app: Self.other, sensors: [.accelerometer])
            })
        let decided = admin.call(.consentDecide) {
            $0.app = Self.study
            $0.decisions = [Self.accelerometer: true]
        }
        #expect(decided.ok == true)
        #expect(
            DaemonHarness.eventually(5) {
                heard.withLock { $0.last } == PendingConsent(app: Self.study, sensors: [.ambientLightSensor])
            }, "\(heard.withLock { $0 })")
    }

    @Test(.timeLimit(.minutes(3))) func strangersAndAppSessionsAreRefused() throws {
        let harness = try Self.daemon()
        defer { harness.stop() }
        let study = try Self.request(harness, app: Self.study, [Self.accelerometer])
        defer { study.close() }
        // uid 65533 is bound to nothing and answers for nothing.
        let output = harness.folder + "/stranger-watch.jsonl"
        let child = try Self.watcher(as: 65533, socket: harness.socket, output: output)
        defer { Self.stop(child) }
        #expect(DaemonHarness.eventually { !Self.lines(output).isEmpty })
        #expect(Self.lines(output).first?["refused"] as? Int == 104, "\(Self.lines(output))")
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(!text.contains(Self.study), "the refusal names no app: \(text)")

        let app = try harness.connect(app: Self.other)
        defer { app.close() }
        #expect(app.watchConsent { _ in }.error?.code == .notPermitted, "an app never watches consent")
    }

    @Test(.timeLimit(.minutes(3))) func watchesAreLimitedPerConnectionAndPerUser() throws {
        let harness = try Self.daemon()
        defer { harness.stop() }
        var connections: [ReaderConnection] = []
        defer { for connection in connections { connection.close() } }
        for _ in 0..<ConsentWatchers.defaultMaxPerUser {
            let connection = try harness.connect(app: nil)
            connections.append(connection)
            #expect(connection.watchConsent { _ in }.ok == true)
        }
        let again = connections[0].watchConsent { _ in }
        #expect(again.error?.code == .tooManyRequests && again.error?.message.contains("one watch per connection") == true)
        let fifth = try harness.connect(app: nil)
        connections.append(fifth)
        let refused = fifth.watchConsent { _ in }
        #expect(refused.error?.code == .tooManyRequests && refused.error?.message.contains("limit per user") == true)
        // A closed connection gives its watch back.
        connections[1].close()
        #expect(DaemonHarness.eventually { fifth.watchConsent { _ in }.ok == true })
    }

    /// The daemon-wide bound, and what a watcher that does not read costs: one event on its way,
    /// later changes folded into the set of apps to tell about.
    @Test func theBookkeepingIsBoundedAndFoldsChangesWhileAnEventIsOnItsWay() {
        var watchers = ConsentWatchers(maxPerUser: 2, maxInAll: 3)
        #expect(watchers.admit(connection: 1, target: 7, uid: 1000) == nil)
        #expect(watchers.admit(connection: 2, target: 7, uid: 1000) == nil)
        #expect(watchers.admit(connection: 3, target: 7, uid: 1000)?.code == .tooManyRequests)
        #expect(watchers.admit(connection: 3, target: 7, uid: 1001) == nil)
        #expect(watchers.admit(connection: 4, target: 7, uid: 1002)?.message.contains("its limit") == true)

        let anyone: (String, UInt32) -> Bool = { _, _ in true }
        watchers.changed("b") { _ in true }
        #expect(watchers.next(for: 1, mayKnow: anyone)! == (7, "b"))
        for round in 0..<1000 { watchers.changed(round.isMultiple(of: 2) ? "a" : "b") { $0 == 1000 } }
        #expect(watchers.next(for: 1, mayKnow: anyone) == nil, "one event on its way at a time")
        #expect(watchers.watches[1]?.untold == ["a", "b"], "a thousand changes fold into two apps")
        #expect(watchers.watches[3]?.untold == ["b"], "uid 1001 may hear of the first change only")
        watchers.written(connection: 1)
        #expect(watchers.next(for: 1, mayKnow: { app, _ in app != "a" })! == (7, "b"), "an app it may no longer know is dropped")
        watchers.written(connection: 1)
        #expect(watchers.next(for: 1, mayKnow: anyone) == nil)
        watchers.remove(connection: 1)
        #expect(watchers.admit(connection: 4, target: 9, uid: 1002) == nil)
    }
}
