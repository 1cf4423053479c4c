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

/// The reader API end to end: a real daemon (in this process) recording a generated 100 Hz
/// accelerometer through its pipeline and store, clients on its Unix socket. The daemon and the
/// source run on time the test moves by hand (`ManualTime`): a second of recording costs no wait.
@Suite(.serialized) struct ReaderEndToEndTests {
    let study = DaemonHarness.studyApp
    let other = DaemonHarness.otherApp
    let time: ManualTime
    let source: GeneratedSource

    init() {
        let time = ManualTime()
        self.time = time
        source = GeneratedSource(clock: time, scheduler: time)
    }

    /// A daemon recording `source` on `time`.
    func daemon(config: String = "profile = lab\n") throws -> DaemonHarness {
        try DaemonHarness(config: config, sources: [source], clock: time, scheduler: time)
    }

    /// Starts recording for `app`, lets as much time pass as `samples` take at 100 Hz, and waits
    /// until at least `samples` are fetchable (the store commits on real time, within 0.5 s).
    func record(_ harness: DaemonHarness, app: String, samples: Int) throws -> (ReaderConnection, Int64) {
        let connection = try harness.connect(app: app)
        let started = connection.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }
        #expect(started.error == nil, "startRecording: \(String(describing: started.error))")
        let start = harness.now
        #expect(DaemonHarness.eventually { source.isRecording })
        try time.advance(by: .milliseconds(10 * samples))
        let enough = DaemonHarness.eventually(10) {
            DaemonHarness.fetchAll(connection, sensor: .accelerometer, from: start - 1_000_000_000, to: harness.now).batches
                .reduce(0) { $0 + $1.count } >= samples
        }
        #expect(enough, "no \(samples) samples within 10 s; log:\n\(harness.logLines().joined(separator: "\n"))")
        return (connection, start)
    }

    @Test func recordedSamplesArriveExactlyInSensorKitUnits() throws {
        let harness = try daemon()
        defer { harness.stop() }
        try harness.grant([.accelerometer], to: study)
        let (connection, start) = try record(harness, app: study, samples: 150)
        let (batches, reply) = DaemonHarness.fetchAll(
            connection, sensor: .accelerometer, from: start - 1_000_000_000, to: harness.now)
        #expect(reply.ok == true && reply.error == nil)
        let count = batches.reduce(0) { $0 + $1.count }
        #expect(reply.count == count && count >= 150)
        var previous = Int64.min
        var previousX: Double?
        for batch in batches {
            #expect(batch.layout == .motion)
            for i in 0..<batch.count {
                let time = batch.sensorTimes[i]
                if previous != .min { #expect(time - previous == 10_000_000, "100 Hz: 10 ms apart") }
                previous = time
                // 1000 counts × 0.00980665 m/s² = 1 g; x = −y = (i mod 1000)/1000 g, so x steps by
                // exactly 0.001 g from one sample to the next and wraps from 0.999 to 0.
                let x = batch.columns[0][i]
                #expect(batch.columns[2][i] == 1.0)
                #expect(x == -batch.columns[1][i])
                #expect(x >= 0 && x < 1 && abs(x * 1000 - (x * 1000).rounded()) < 1e-9)
                if let previousX {
                    let step = ((x * 1000).rounded() - (previousX * 1000).rounded() + 1000).truncatingRemainder(dividingBy: 1000)
                    #expect(step == 1, "x went from \(previousX) to \(x) g")
                }
                previousX = x
                #expect(batch.writeTimes[i] >= time)
            }
        }
    }

    @Test func aUserNotBoundToTheAppIsRefused() throws {
        let harness = try daemon()
        defer { harness.stop() }
        // sensorkitctl as nobody: bound to com.example.other only.
        let ctl = harness.folder + "/sensorkitctl"
        try ExecutableForOthers.place(DaemonHarness.productsFolder + "/sensorkitctl", at: ctl)
        let refused = try DaemonHarness.asNobody([
            ctl, "--socket", harness.socket, "fetch", "--app", study, "--sensor", "accelerometer", "--from", "0", "--to", "now",
        ])
        #expect(refused.status == 1)
        // nobody administers nothing: it hears what it would for an app that is not installed.
        #expect(
            refused.output.contains("uid 65534 may not act as app 'com.example.study': no such app is installed for this user"),
            "\(refused.output)")
        // Bound, but without consent: the daemon answers noAuthorization, not a refusal.
        let bound = try DaemonHarness.asNobody([
            ctl, "--socket", harness.socket, "fetch", "--app", other, "--sensor", "accelerometer", "--from", "0", "--to", "now",
        ])
        #expect(bound.status == 1)
        #expect(bound.output.contains("SRErrorDomain 1"), "\(bound.output)")
        // nobody may not decide consent for any app (not root, not a Consenter): the decision
        // reaches the daemon, which refuses it, and the consent stays undecided.
        let consent = try DaemonHarness.asNobody([ctl, "--socket", harness.socket, "consent", other, "--grant", "accelerometer"])
        #expect(
            consent.status == 1 && consent.output.contains("uid 65534 may not decide for 'com.example.other'"),
            "\(consent.output)")
        let admin = try harness.connect(app: nil)
        let items = admin.call(.consentList) { $0.app = other }.consent?.first?.items ?? []
        #expect(!items.isEmpty && items.allSatisfy { $0.status == SRAuthorizationStatus.notDetermined.rawValue }, "\(items)")
        #expect(harness.logLines().contains { $0.contains("refused connection from uid 65534") })
    }

    @Test func entitlementAndAuthorizationAreChecked() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let app = try harness.connect(app: study)
        let gyro = app.call(.startRecording) { $0.sensor = SRSensor.rotationRate.rawValue }
        #expect(gyro.error?.code == .invalidEntitlement)
        #expect(gyro.error?.srError.code == .invalidEntitlement)
        // Every study-app operation on a sensor outside the entitlement is refused the same way.
        #expect(app.call(.fetchDevices) { $0.sensor = SRSensor.rotationRate.rawValue }.error?.code == .invalidEntitlement)
        #expect(
            DaemonHarness.fetchAll(app, sensor: .rotationRate, from: 0, to: harness.now).reply.error?.code == .invalidEntitlement)
        #expect(app.call(.stopRecording) { $0.sensor = SRSensor.rotationRate.rawValue }.error?.code == .invalidEntitlement)
        let notYet = app.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }
        #expect(notYet.error?.code == .noAuthorization)
        let fetch = DaemonHarness.fetchAll(app, sensor: .accelerometer, from: 0, to: harness.now)
        #expect(fetch.reply.error?.code == .noAuthorization)
        let keyboard = app.call(.startRecording) { $0.sensor = SRSensor.keyboardMetrics.rawValue }
        #expect(keyboard.error?.code == .invalidEntitlement)
        let nonsense = app.call(.startRecording) { $0.sensor = "nonsense" }
        #expect(nonsense.error?.code == .invalidEntitlement)
        // A denied sensor stays unauthorized.
        try harness.grant([.accelerometer], to: study, granted: false)
        #expect(app.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }.error?.code == .noAuthorization)
    }

    @Test func nothingInsideTheHoldIsReturnedByAnyRangeShape() throws {
        let hold: Int64 = 1_500_000_000
        let harness = try daemon(config: "[store]\nhold = 1500ms\n")
        defer { harness.stop() }
        try harness.grant([.accelerometer], to: study)
        let connection = try harness.connect(app: study)
        #expect(connection.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }.error == nil)
        let start = harness.now
        #expect(DaemonHarness.eventually { source.isRecording })
        try time.advance(by: .milliseconds(3200))
        // Out of the hold: the samples of the first 1.7 s (one every 10 ms from `start`), once committed.
        var visible = 0
        #expect(
            DaemonHarness.eventually {
                let (batches, _) = DaemonHarness.fetchAll(connection, sensor: .accelerometer, from: 0, to: harness.now - hold)
                visible = batches.reduce(0) { $0 + $1.count }
                return visible == 171
            }, "\(visible) samples out of the hold")
        var generator = SystemRandomNumberGenerator()
        var sawData = false
        for shape in 0..<40 {
            let now = harness.now
            let to: Int64
            switch shape % 4 {
            case 0: to = now - hold  // exactly at the hold's edge
            case 1: to = now - hold + 1  // one nanosecond into it
            case 2: to = now + 3_600_000_000_000
            default: to = start + Int64.random(in: 0...(now - start), using: &generator)
            }
            let from = start - Int64.random(in: 0...2_000_000_000, using: &generator)
            // Half the shapes as plain batches, half with stored chunks handed over.
            let (batches, reply) = DaemonHarness.fetchAll(
                connection, sensor: .accelerometer, from: from, to: to,
                chunkFormats: shape % 8 < 4 ? nil : ReaderConnection.chunkFormats)
            let fetchedAt = harness.now
            #expect(reply.error == nil)
            let times = batches.flatMap(\.sensorTimes)
            // The hold is judged when the request arrives: nothing younger than that moment − hold.
            if to > now - hold + 2_000_000 {
                #expect(times.isEmpty, "range ending \(to - (now - hold)) ns into the hold returned \(times.count)")
            }
            for time in times {
                #expect(time <= to && time > from)
                #expect(time <= fetchedAt - hold, "a sample \(time - (fetchedAt - hold)) ns inside the hold")
            }
            if !times.isEmpty { sawData = true }
            // A range that ends after `fetchedAt − hold` overlapped the hold whenever the daemon
            // judged it: it must say so, naming its own hold edge (now − hold when it decided),
            // which lies between the two clock readings around the request.
            if to > fetchedAt - hold {
                let notice = reply.notice ?? ""
                #expect(times.isEmpty && notice.contains("hold"), "\(notice)")
                let edge = notice.components(separatedBy: "data up to ").last?.split(separator: " ").first.flatMap { Int64($0) }
                #expect(edge.map { $0 >= now - hold && $0 <= fetchedAt - hold && to > $0 } == true, "\(notice)")
            }
        }
        #expect(sawData, "some ranges before the hold must return data")
    }

    @Test func storedChunksHandedOverGiveExactlyThePlainBatches() throws {
        let harness = try daemon()
        defer { harness.stop() }
        try harness.grant([.accelerometer], to: study)
        let (connection, start) = try record(harness, app: study, samples: 600)
        let end = harness.now
        // Everything stamped before `end` is committed once a later sample is visible (a stream is
        // stored in order): both fetches see the same.
        try time.advance(by: .milliseconds(100))
        #expect(
            DaemonHarness.eventually(10) {
                DaemonHarness.fetchAll(connection, sensor: .accelerometer, from: end, to: harness.now).reply.count ?? 0 > 0
            })
        var generator = SystemRandomNumberGenerator()
        let framesBefore = connection.chunkFramesReceived  // `record` polled with chunk formats
        for shape in 0..<12 {
            let from = shape == 0 ? start - 1_000_000_000 : Int64.random(in: start...end, using: &generator)
            let to = shape == 0 ? end : Int64.random(in: from...end, using: &generator)
            let before = connection.chunkFramesReceived
            let plain = DaemonHarness.fetchAll(connection, sensor: .accelerometer, from: from, to: to, chunkFormats: nil)
            #expect(connection.chunkFramesReceived == before, "a fetch that did not ask got chunk frames")
            let chunked = DaemonHarness.fetchAll(connection, sensor: .accelerometer, from: from, to: to)
            if shape == 0 {
                #expect(connection.chunkFramesReceived > before, "the whole recording holds sealed chunks to hand over")
            }
            #expect(plain.reply.error == nil && chunked.reply.error == nil)
            #expect(plain.reply.count == chunked.reply.count)
            #expect(plain.batches.flatMap(\.sensorTimes) == chunked.batches.flatMap(\.sensorTimes))
            #expect(plain.batches.flatMap(\.writeTimes) == chunked.batches.flatMap(\.writeTimes))
            for column in 0..<3 {
                #expect(
                    plain.batches.flatMap { $0.columns[column].map(\.bitPattern) }
                        == chunked.batches.flatMap { $0.columns[column].map(\.bitPattern) })
            }
        }
        #expect(connection.chunkFramesReceived > framesBefore, "some stored chunks lay wholly inside the ranges")
    }

    @Test func appsSeeOnlyDataFromTheirOwnFirstStart() throws {
        let harness = try daemon()
        defer { harness.stop() }
        try harness.grant([.accelerometer], to: study)
        try harness.grant([.accelerometer], to: other)
        _ = try record(harness, app: study, samples: 100)
        let late = try harness.connect(app: other)
        #expect(late.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }.error == nil)
        let firstStart = try #require(
            late.call(.status) { $0.sensor = SRSensor.accelerometer.rawValue }.states?.first?.firstRecording)
        try time.advance(by: .milliseconds(500))
        #expect(DaemonHarness.eventually(10) { harness.samplesVisible(to: other) > 0 })
        let (batches, reply) = DaemonHarness.fetchAll(late, sensor: .accelerometer, from: 0, to: harness.now)
        #expect(reply.error == nil)
        let times = batches.flatMap(\.sensorTimes)
        #expect(!times.isEmpty)
        #expect(times.allSatisfy { $0 >= firstStart }, "data from before the app's first startRecording leaked")
        let study = try harness.connect(app: self.study)
        let theirs = DaemonHarness.fetchAll(study, sensor: .accelerometer, from: 0, to: harness.now).batches.flatMap(
            \.sensorTimes)
        #expect(theirs.count > times.count, "the earlier app sees more")
    }

    @Test func oneAppCannotSeeAnothersConsentOrStakes() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        // The other app listens for events from before the study is granted and starts.
        let otherConnection = try harness.connect(app: other)
        let otherEvents = Mutex<[WireReply]>([])
        _ = otherConnection.onEvent { event in otherEvents.withLock { $0.append(event) } }
        try harness.grant([.accelerometer], to: study)
        let studyConnection = try harness.connect(app: study)
        #expect(studyConnection.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }.error == nil)
        // An app session may not call these at all (docs/protocol.md §1.3).
        for op in [WireRequest.Operation.stakes, .consentList, .apps] {
            let reply = otherConnection.call(op)
            #expect(
                reply.error?.code == .notPermitted && reply.stakes == nil && reply.consent == nil && reply.apps == nil,
                "\(op): \(reply)")
        }
        let status = otherConnection.call(.status)
        #expect(status.states?.map(\.sensor) == [SRSensor.accelerometer.rawValue])
        #expect(status.states?.first?.authorizationStatus == SRAuthorizationStatus.notDetermined.rawValue)
        #expect(
            status.states?.first?.recording == false && status.states?.first?.firstRecording == nil,
            "the study's stake showed in the other app's status")
        let decide = otherConnection.call(.consentDecide) {
            $0.app = other; $0.decisions = [SRSensor.accelerometer.rawValue: true]
        }
        #expect(decide.error?.code == .notPermitted, "an app must not answer its own consent request")
        // Root sees both.
        let admin = try harness.connect(app: nil)
        #expect(admin.call(.stakes).stakes?.map(\.app) == [study])
        // Events go out on the connection in order with replies: any stray one came before this.
        _ = otherConnection.call(.status)
        #expect(otherEvents.withLock { $0 }.isEmpty, "the other app heard of the study's consent or recording")
    }
}
