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

/// Revocation reaches open connections, and a stranger learns nothing (docs/protocol.md §1.2,
/// §3.6): a connection bound to an app is checked again at every reload and every request, a fetch
/// in flight ends when the right to its data goes, and a uid that administers nothing gets one
/// answer for an app that is not installed and one that does not bind it, and nothing about
/// recording, devices or the daemon's load.
@Suite(.serialized) struct AccessTests {
    static let study = DaemonHarness.studyApp
    static let accelerometer = SRSensor.accelerometer.rawValue

    /// A daemon recording the accelerometer fast (50 kHz generated), the study app granted and
    /// recording, with more than two batches stored; `config` is the daemon's configuration. Its
    /// time moves by hand: half a second of recording passes at once, then time stands still.
    static func recording(config: String = "profile = lab\n", grant: Bool = true) throws -> DaemonHarness {
        let time = ManualTime()
        let source = GeneratedSource(rate: 50_000, perTick: 5_000, clock: time, scheduler: time)
        let harness = try DaemonHarness(config: config, sources: [source], clock: time, scheduler: time)
        if grant { try harness.grant([.accelerometer], to: study) }
        let app = try harness.connect(app: study)
        #expect(app.call(.startRecording) { $0.sensor = accelerometer }.error == nil)
        app.close()
        #expect(DaemonHarness.eventually { source.isRecording })
        // 25 001 samples: more than three batches.
        #expect(try harness.record(on: time, for: .milliseconds(500), beyond: 3 * WireLimits.samplesPerBatch - 1))
        return harness
    }

    /// A fetch of everything with a window of one batch that is never acknowledged: it stays in
    /// flight until something ends it. Returns its final reply when it comes.
    final class FetchInFlight: Sendable {
        let batches = Mutex(0)
        let final = Mutex<WireReply?>(nil)
        let done = DispatchSemaphore(value: 0)

        init(_ connection: ReaderConnection, now: Int64) {
            connection.send(
                {
                    $0.sensor = AccessTests.accelerometer
                    $0.from = 0
                    $0.to = now
                    $0.window = 1
                }, op: .fetch
            ) { [self] incoming in
                switch incoming {
                case .batch: batches.withLock { $0 += 1 }
                case .reply(let reply):
                    final.withLock { $0 = reply }
                    done.signal()
                }
            }
        }

        var isRunning: Bool { batches.withLock { $0 } == 1 && final.withLock { $0 } == nil }
        func end(within seconds: Double = 10) -> WireReply? {
            _ = done.wait(timeout: .now() + seconds)
            return final.withLock { $0 }
        }
    }

    enum Revocation: String, CaseIterable, CustomTestStringConvertible {
        case entitlementRemoved, userUnbound, appUninstalled, consentDenied, grantRemoved
        var testDescription: String { rawValue }
        /// The error the fetch in flight, a new fetch and startRecording get.
        var code: WireErrorCode {
            switch self {
            case .entitlementRemoved: .invalidEntitlement
            case .userUnbound: .notPermitted
            case .appUninstalled: .unknownApp
            case .consentDenied, .grantRemoved: .noAuthorization
            }
        }
    }

    @Test(.timeLimit(.minutes(3)), arguments: Revocation.allCases)
    func revocationEndsAFetchInFlightAndRefusesWhatFollows(_ revocation: Revocation) throws {
        let granted = "profile = lab\n[grant \(Self.study)]\nsensors = accelerometer\n"
        let harness = try Self.recording(
            config: revocation == .grantRemoved ? granted : "profile = lab\n", grant: revocation != .grantRemoved)
        defer { harness.stop() }
        let app = try harness.connect(app: Self.study)
        let events = Mutex<[WireReply]>([])
        _ = app.onEvent { event in events.withLock { $0.append(event) } }
        let fetch = FetchInFlight(app, now: harness.now)
        #expect(DaemonHarness.eventually(10) { fetch.isRunning }, "the fetch must be waiting for its ack")

        let apps = harness.folder + "/apps.d"
        switch revocation {
        case .entitlementRemoved:
            try DaemonHarness.writeApp(Self.study, in: apps, entitlements: ["ambient-light-sensor"], users: ["root"])
            harness.daemon.reload()
        case .userUnbound:
            try DaemonHarness.writeApp(Self.study, in: apps, entitlements: ["motion-accelerometer"], users: ["nobody"])
            harness.daemon.reload()
        case .appUninstalled:
            try FileManager.default.removeItem(atPath: apps + "/" + Self.study)
            harness.daemon.reload()
        case .consentDenied:
            try harness.grant([.accelerometer], to: Self.study, granted: false)
        case .grantRemoved:
            try "profile = lab\n".write(toFile: harness.folder + "/sensorkitd.conf", atomically: true, encoding: .utf8)
            harness.daemon.reload()
        }

        let final = fetch.end()
        #expect(
            final?.error?.code == revocation.code,
            "the fetch in flight: \(String(describing: final))\n\(harness.logLines().suffix(5))")
        #expect(fetch.batches.withLock { $0 } == 1, "no batch after the revocation")
        let again = DaemonHarness.fetchAll(app, sensor: .accelerometer, from: 0, to: harness.now, timeout: 10)
        #expect(again.reply.error?.code == revocation.code && again.batches.isEmpty, "a new fetch: \(again.reply)")
        let start = app.call(.startRecording) { $0.sensor = Self.accelerometer }
        #expect(start.error?.code == revocation.code, "startRecording: \(start)")
        if revocation == .consentDenied || revocation == .grantRemoved {
            #expect(
                events.withLock { $0 }.contains {
                    $0.event == WireReply.Event.authorizationChanged.rawValue
                        && $0.authorizationStatus == SRAuthorizationStatus.denied.rawValue
                }, "\(events.withLock { $0 })")
            let admin = try harness.connect(app: nil)
            #expect(
                admin.call(.stakes).stakes?.first { $0.app == Self.study }?.active == false, "the stake ended with the consent")
        }
        // The daemon goes on serving others.
        #expect(try harness.connect(app: nil).call(.daemonStatus).error == nil)
    }

    /// A `[grant]` removed while the daemon was stopped revokes its consent at the next start; a
    /// decision a person made since stays theirs. The real `sensorkitd`, started twice on one state
    /// directory.
    @Test(.timeLimit(.minutes(3))) func aGrantRemovedWhileStoppedIsRevokedAtStart() throws {
        let run = try IIODaemonRun(extraConfig: "[iio]\nenabled = no\n")
        defer { run.stop() }
        try run.startPlain()
        let first = try run.connect()
        func status(_ connection: ReaderConnection, _ sensor: SRSensor) -> Int? {
            connection.call(.status) { $0.sensor = sensor.rawValue }.states?.first?.authorizationStatus
        }
        #expect(status(first, .accelerometer) == SRAuthorizationStatus.authorized.rawValue, "\(run.log)")
        // A person decides the gyroscope again: the decision is theirs from now on.
        let admin = try run.connect(app: nil)
        #expect(
            admin.call(.consentDecide) {
                $0.app = IIODaemonRun.app; $0.decisions = [SRSensor.rotationRate.rawValue: true]
            }.error == nil)
        first.close()
        admin.close()
        run.stop()

        try "profile = lab\n[iio]\nenabled = no\n".write(
            toFile: run.folder + "/sensorkitd.conf", atomically: true, encoding: .utf8)
        try run.startPlain()
        let second = try run.connect()
        #expect(
            status(second, .accelerometer) == SRAuthorizationStatus.denied.rawValue, "the removed grant still grants\n\(run.log)")
        // (stopRecording: without IIO here, the other operations stop at "no driver" first.)
        #expect(second.call(.stopRecording) { $0.sensor = SRSensor.accelerometer.rawValue }.error?.code == .noAuthorization)
        #expect(status(second, .rotationRate) == SRAuthorizationStatus.authorized.rawValue, "a person's decision was revoked")
        #expect(
            run.log.contains(
                "start: the configured grant of \(SRSensor.accelerometer.rawValue) to \(IIODaemonRun.app) was removed"),
            "\(run.log)")
    }

    /// `sensorkitctl` as nobody: bound to com.example.other, a Consenter of nothing, not root and
    /// not in the daemon's group.
    static func asNobody(_ harness: DaemonHarness, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let ctl = harness.folder + "/sensorkitctl"
        if !FileManager.default.fileExists(atPath: ctl) {
            try ExecutableForOthers.place(DaemonHarness.productsFolder + "/sensorkitctl", at: ctl)
        }
        // 126: where `ExecutableForOthers` had to copy, the copy may still be open for writing in
        // a child another test forked meanwhile (ETXTBSY) until that child execs; it passes in a
        // moment.
        var result = try DaemonHarness.asNobody(["/usr/bin/timeout", "30", ctl, "--socket", harness.socket] + arguments)
        for _ in 0..<50 where result.status == 126 {
            usleep(100_000)
            result = try DaemonHarness.asNobody(["/usr/bin/timeout", "30", ctl, "--socket", harness.socket] + arguments)
        }
        return result
    }

    @Test(.timeLimit(.minutes(3))) func aStrangerLearnsNothing() throws {
        let harness = try Self.recording()
        defer { harness.stop() }
        // The same answer for an app that is not installed and one installed that does not bind it.
        let absent = try Self.asNobody(
            harness, ["fetch", "--app", "com.example.absent", "--sensor", "accelerometer", "--from", "0", "--to", "now"])
        let unbound = try Self.asNobody(
            harness, ["fetch", "--app", Self.study, "--sensor", "accelerometer", "--from", "0", "--to", "now"])
        #expect(absent.status == unbound.status && absent.status == 1)
        #expect(
            unbound.output.contains("uid 65534 may not act as app '\(Self.study)': no such app is installed for this user"),
            "\(unbound.output)")
        #expect(
            absent.output.replacingOccurrences(of: "com.example.absent", with: "APP")
                == unbound.output.replacingOccurrences(of: Self.study, with: "APP"), "\(absent.output)\n\(unbound.output)")
        // Root, an administrator, hears which it is.
        do {
            _ = try harness.connect(app: "com.example.absent")
            Issue.record("an absent app was accepted")
        } catch {
            #expect("\(error)".contains("no app 'com.example.absent' is installed in apps.d"), "\(error)")
        }

        // Nothing about recording, devices or the daemon's load.
        let status = try Self.asNobody(harness, ["--json", "status"])
        #expect(status.status == 0, "\(status.output)")
        let document = try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any]
        let daemon = try #require(document?["daemon"] as? [String: String], "\(status.output)")
        for key in ["recording", "connections", "fetches", "queuedReplyBytes", "maxQueuedRequests"] {
            #expect(daemon[key] == nil, "\(key) shown to a stranger: \(daemon)")
        }
        #expect(daemon["version"] != nil && daemon["now"] != nil, "what any client needs stays")
        let devices = try Self.asNobody(harness, ["devices"])
        #expect(devices.status != 0 && !devices.output.contains("generated"), "\(devices.output)")
        let sensors = try Self.asNobody(harness, ["--json", "sensors"])
        #expect(
            !sensors.output.contains("\"recording\" : \"yes\"") && sensors.output.contains("shown to administrators only"),
            "\(sensors.output)")
        // Root sees all of it.
        let admin = try harness.connect(app: nil)
        let info = admin.call(.daemonStatus).info ?? [:]
        #expect(info["recording"] == Self.accelerometer && info["connections"] != nil, "\(info)")
        #expect(admin.call(.devices).sources?.isEmpty == false)
    }
}
