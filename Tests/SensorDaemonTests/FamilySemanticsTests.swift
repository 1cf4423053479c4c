import Foundation
import LocationBridge
import ModemBridge
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorTestKit
import Synchronization
import Testing
import UsageBridge

/// Every family under the same rules (docs/reliability.md): consent, the hold, the window,
/// deletion records and the stop, each checked by the same assertions for the accelerometer
/// (the reference) and for the families fed by system services — each row drives its family's
/// real recorder inside the real daemon on hand-moved time, so quarter hours close in
/// milliseconds.
@Suite(.serialized) struct FamilySemanticsTests {
    static let study = "org.sensorkit.semantics-study"
    static let later = "org.sensorkit.semantics-later"
    static let unentitled = "org.sensorkit.semantics-unentitled"
    static let second: Int64 = 1_000_000_000
    static let quarter: Int64 = 900 * second
    static let day: Int64 = 86_400 * second

    /// consent: no grant, no recording and no data; a sensor outside the entitlement is refused
    /// as such; a grant starts the recording.
    @Test(.timeLimit(.minutes(3)), arguments: FamilyRow.all)
    func consentComesFirst(_ row: FamilyRow) throws {
        let rig = try Rig(row)
        defer { rig.stop() }
        let start = rig.harness.now
        let refused = try rig.harness.connect(app: Self.unentitled)
        defer { refused.close() }
        #expect(refused.call(.startRecording) { $0.sensor = row.sensor.rawValue }.error?.code == .invalidEntitlement)
        #expect(rig.fetch(refused, from: 0, to: rig.harness.now).reply.error?.code == .invalidEntitlement)

        let app = try rig.harness.connect(app: Self.study)
        defer { app.close() }
        #expect(app.call(.startRecording) { $0.sensor = row.sensor.rawValue }.error?.code == .noAuthorization)
        // What the source would count happens, and a quarter hour closes: nothing is recorded.
        try rig.produce()
        let before = rig.fetch(app, from: 0, to: rig.harness.now)
        #expect(before.reply.error?.code == .noAuthorization && before.batches.isEmpty)
        #expect(rig.sourceRecording() == false, "\(row): the source records without a stake")

        try rig.harness.grant([row.sensor], to: Self.study)
        #expect(app.call(.startRecording) { $0.sensor = row.sensor.rawValue }.error == nil)
        let firstStart = try #require(rig.firstStart(app))
        #expect(firstStart >= start)
        try rig.produce()
        var times: [Int64] = []
        #expect(
            DaemonHarness.eventually {
                times = rig.samples(app, from: 0, to: rig.harness.now)
                return !times.isEmpty
            }, "\(row): nothing recorded after the grant\n\(rig.log)")
        #expect(times.allSatisfy { $0 >= firstStart && $0 <= rig.harness.now }, "\(row): \(times) before \(firstStart)")
    }

    /// hold: a sample recorded at T comes out of no range that ends after now − hold, whatever
    /// its shape, and comes out once the hold has passed.
    @Test(.timeLimit(.minutes(3)), arguments: FamilyRow.all)
    func nothingInsideTheHoldIsReturned(_ row: FamilyRow) throws {
        let hold = 60 * Self.second
        let rig = try Rig(row, config: "[store]\nhold = 60s\n")
        defer { rig.stop() }
        let app = try rig.recording(Self.study)
        defer { app.close() }
        let start = try #require(rig.firstStart(app))
        // The first samples, released: the store has what the family recorded.
        try rig.produce()
        try rig.time.advance(by: .seconds(61))
        #expect(
            DaemonHarness.eventually { !rig.samples(app, from: start - 1, to: rig.harness.now - hold).isEmpty },
            "\(row): nothing released after the hold\n\(rig.log)")
        // Samples recorded within the last second (for a report family: the quarter that just
        // closed; for visits: one taken just now).
        try rig.produce(endingWithAnEvent: true)
        let recent = rig.harness.now - Self.second
        #expect(
            try Self.nothingInsideTheHold(
                "\(row)", now: { rig.harness.now }, hold: hold, start: start,
                fetch: { from, to in rig.fetch(app, from: from, to: to) },
                records: { from, to in rig.fetch(app, sensor: row.sensor.deletionRecordSensor!, from: from, to: to) }),
            "\(row): ranges before the hold return data")
        // Once the hold has passed, the recent samples come out.
        try rig.time.advance(by: .seconds(61))
        #expect(
            DaemonHarness.eventually {
                rig.samples(app, from: start - 1, to: rig.harness.now - hold).contains { $0 >= recent }
            }, "\(row): the samples recorded after \(recent) never left the hold\n\(rig.log)")
    }

    /// The hold's assertion, the same for every family: ranges of every shape (ending at the
    /// hold's edge, one nanosecond into it, in the future, anywhere since `start`); no sample
    /// younger than now − hold comes out, and a range that reaches into the hold when the fetch
    /// has been answered returns nothing at all (no deletion records either), with a notice
    /// naming the hold. `now` is read before and after each fetch (on hand-moved time it does
    /// not move). Whether some range returned data.
    static func nothingInsideTheHold(
        _ family: String, now: () throws -> Int64, hold: Int64, start: Int64,
        fetch: (Int64, Int64) -> (batches: [SampleBatchFrame], reply: WireReply),
        records: (Int64, Int64) -> (batches: [SampleBatchFrame], reply: WireReply)
    ) throws -> Bool {
        var generator = SystemRandomNumberGenerator()
        var sawData = false
        for shape in 0..<24 {
            let asked = try now()
            let to: Int64
            switch shape % 4 {
            case 0: to = asked - hold  // exactly at the hold's edge
            case 1: to = asked - hold + 1  // one nanosecond into it
            case 2: to = asked + 3_600 * second
            default: to = start + Int64.random(in: 0...max(0, asked - start), using: &generator)
            }
            let from = start - Int64.random(in: 0...(2 * second), using: &generator)
            let (batches, reply) = fetch(from, to)
            let deleted = records(from, to)
            let answered = try now()
            #expect(reply.error == nil, "\(family): \(String(describing: reply.error))")
            let times = batches.flatMap(\.sensorTimes)
            for time in times {
                #expect(
                    time > from && time <= to && time <= answered - hold,
                    "\(family): a sample \(time - (answered - hold)) ns into the hold")
            }
            #expect(deleted.reply.error == nil)
            if to > answered - hold {
                #expect(times.isEmpty && (reply.notice ?? "").contains("hold"), "\(family): \(reply.notice ?? "no notice")")
                #expect(deleted.batches.isEmpty, "\(family): deletion records from inside the hold")
            }
            if !times.isEmpty { sawData = true }
        }
        return sawData
    }

    /// window: a fetch reaching back more than the window is clamped, not refused; data older
    /// than the window is purged with an `ageLimit` deletion record.
    @Test(.timeLimit(.minutes(3)), arguments: FamilyRow.all)
    func theWindowClampsAndPurges(_ row: FamilyRow) throws {
        let window = 7 * Self.day
        let rig = try Rig(row)
        defer { rig.stop() }
        let app = try rig.recording(Self.study)
        defer { app.close() }
        let start = try #require(rig.firstStart(app))
        // Three quarters: samples at least ten minutes apart, so the store seals them into a
        // chunk when the recording stops (the purge removes whole sealed chunks).
        for _ in 0..<3 { try rig.produce() }
        var old: [Int64] = []
        #expect(
            DaemonHarness.eventually {
                old = rig.samples(app, from: start - 1, to: rig.harness.now)
                return old.count >= 2 && old.last! - old.first! >= 600 * Self.second
            }, "\(row): \(old)\n\(rig.log)")
        #expect(app.call(.stopRecording) { $0.sensor = row.sensor.rawValue }.error == nil)
        #expect(DaemonHarness.eventually { rig.sourceRecording() == false })
        // Eight days pass as in a suspend (the boot and wall clocks move, the monotonic timers do
        // not: running 69 120 housekeeping ticks one by one would take the test minutes), then
        // the daemon runs long enough for its housekeeping to purge (once a minute).
        rig.time.clock.advance(nanoseconds: 8 * Self.day)
        try rig.time.advance(by: .seconds(61))

        let now = rig.harness.now
        let clamped = rig.fetch(app, from: now - 8 * Self.day, to: now)
        #expect(clamped.reply.error == nil, "\(row): \(String(describing: clamped.reply.error))")
        #expect(clamped.batches.flatMap(\.sensorTimes).allSatisfy { $0 > now - window }, "\(row): data older than the window")
        let whole = rig.fetch(app, from: 0, to: now)
        #expect(whole.reply.error == nil && whole.batches.flatMap(\.sensorTimes).isEmpty, "\(row): \(whole.reply)")
        // The purge runs on the daemon's housekeeping timer, on the hand-moved clock.
        var records: [Rig.Record] = []
        #expect(
            DaemonHarness.eventually {
                records = rig.records(app, from: 0, to: rig.harness.now)
                return records.contains { $0.reason == .ageLimit }
            }, "\(row): no ageLimit record for the purged data: \(records)\n\(rig.log)")
        let purged = records.filter { $0.reason == .ageLimit }
        #expect(
            purged.contains { $0.start <= old.first! && $0.end >= old.last! }, "\(row): \(purged) does not cover \(old)")
    }

    /// deletion records: time the source could not observe comes back as `systemInitiated`
    /// records through the family's deletion-record sensor, no sample lies inside one, and an
    /// app that starts later sees only what was recorded from its own first start.
    @Test(.timeLimit(.minutes(3)), arguments: FamilyRow.all)
    func unobservedTimeIsADeletionRecordAndAppsStartAtTheirFirstStart(_ row: FamilyRow) throws {
        let rig = try Rig(row)
        defer { rig.stop() }
        let app = try rig.recording(Self.study)
        defer { app.close() }
        let start = try #require(rig.firstStart(app))
        try rig.produce()
        let blind = rig.time.boottimeNanoseconds()
        rig.drive.watch(false, at: blind)
        rig.drive.settle()
        // Longer than two quarter hours: at least one whole interval nothing watched.
        try rig.time.advance(by: .seconds(2000))
        rig.drive.watch(true, at: rig.time.boottimeNanoseconds())
        try rig.produce()
        let blindness = (rig.harness.now - (rig.time.boottimeNanoseconds() - blind), rig.harness.now)

        var records: [Rig.Record] = []
        #expect(
            DaemonHarness.eventually {
                records = rig.records(app, from: start - 1, to: rig.harness.now)
                return records.contains { $0.reason == .systemInitiated && $0.end > blindness.0 && $0.start < blindness.1 }
            }, "\(row): no systemInitiated record for the unobserved time: \(records)\n\(rig.log)")
        #expect(records.allSatisfy { $0.end >= start && $0.start <= rig.harness.now }, "\(row): \(records)")
        // Samples are committed on real time, records may come first.
        var times: [Int64] = []
        #expect(
            DaemonHarness.eventually {
                times = rig.samples(app, from: start - 1, to: rig.harness.now)
                return times.contains { $0 >= blindness.1 - FamilySemanticsTests.quarter }
            }, "\(row): \(times)")
        for record in records where record.reason == .systemInitiated {
            #expect(
                !times.contains { $0 > record.start && $0 < record.end }, "\(row): a sample inside the deletion record \(record)")
        }

        try rig.harness.grant([row.sensor], to: Self.later)
        let late = try rig.harness.connect(app: Self.later)
        defer { late.close() }
        #expect(late.call(.startRecording) { $0.sensor = row.sensor.rawValue }.error == nil)
        let lateStart = try #require(rig.firstStart(late))
        try rig.produce()
        var theirs: [Int64] = []
        #expect(
            DaemonHarness.eventually {
                theirs = rig.samples(late, from: 0, to: rig.harness.now)
                return !theirs.isEmpty
            }, "\(row): the later app got nothing\n\(rig.log)")
        #expect(theirs.allSatisfy { $0 >= lateStart }, "\(row): data from before the app's first start leaked")
        #expect(rig.records(late, from: 0, to: rig.harness.now).allSatisfy { $0.end >= lateStart })
        #expect(rig.samples(app, from: 0, to: rig.harness.now).count > theirs.count, "\(row): the earlier app sees more")
    }

    /// stop: consent withdrawn ends the app's stake, the source stops, and nothing is recorded
    /// for the app after it.
    @Test(.timeLimit(.minutes(3)), arguments: FamilyRow.all)
    func revokingConsentStopsTheRecording(_ row: FamilyRow) throws {
        let rig = try Rig(row)
        defer { rig.stop() }
        let app = try rig.recording(Self.study)
        defer { app.close() }
        try rig.produce()
        #expect(DaemonHarness.eventually { !rig.samples(app, from: 0, to: rig.harness.now).isEmpty }, "\(rig.log)")
        #expect(rig.sourceRecording() == true)

        try rig.harness.grant([row.sensor], to: Self.study, granted: false)
        let revoked = rig.harness.now
        let admin = try rig.harness.connect(app: nil)
        defer { admin.close() }
        #expect(admin.call(.stakes).stakes?.first { $0.app == Self.study }?.active == false, "the stake outlived the consent")
        #expect(DaemonHarness.eventually { rig.sourceRecording() == false }, "\(row): the source still records")
        try rig.produce()
        // Granted again without a new startRecording: nothing was recorded in between.
        try rig.harness.grant([row.sensor], to: Self.study)
        let after = rig.samples(app, from: revoked, to: rig.harness.now)
        #expect(after.isEmpty, "\(row): \(after.count) samples recorded after the consent was withdrawn")
        #expect(rig.sourceRecording() == false)
    }

    /// keyboardMetrics: `KeyboardSource` reads its node through libevdev, which needs an evdev
    /// node (no uinput here; umockdev's preload must be in the process from its start, and the
    /// reading thread waits on real time), so this row is the real `sensorkitd` under
    /// `umockdev-run` on real time, with 1 s intervals and a 2 s hold: the consent, hold, window
    /// (the clamp) and stop assertions above, and the unobserved time as a `systemInitiated`
    /// record (the kernel dropping key events, `SYN_DROPPED`, replayed); what it cannot check is in
    /// docs/keyboard.md §6.
    @Test(.needs(.umockdev), .timeLimit(.minutes(3)))
    func keyboardMetricsUnderTheSameRules() throws {
        let keyboard = SRSensor.keyboardMetrics
        let hold = 2 * Self.second
        let run = try IIODaemonRun(
            extraConfig: "[store]\nhold = 2s\n[keyboard]\ninterval = 1s\n",
            entitlements: ["keyboard-metrics", "motion-accelerometer"], grants: "accelerometer")
        defer { run.stop() }
        let events = run.folder + "-typing.events"
        // The kernel's buffer overflows once (SYN_DROPPED) before the ninth key: unobserved time.
        try EvemuScript.typing(EvemuScript.passphrase, droppedBefore: 8).write(
            toFile: events, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: events) }
        try run.startUnderUmockdevRun(
            device: EvemuScript.fixtures + "/keyboard.umockdev", options: EvemuScript.umockdevOptions(events: events))
        let app = try run.connect()
        defer { app.close() }
        let admin = try run.connect(app: nil)
        defer { admin.close() }
        func now() throws -> Int64 { try run.timeline(app).now }
        func fetch(_ sensor: SRSensor, _ from: Int64, _ to: Int64) -> (batches: [SampleBatchFrame], reply: WireReply) {
            DaemonHarness.fetchAll(app, sensor: sensor, from: from, to: to, timeout: 10)
        }
        func recording() -> Bool? { (try? run.devices())?.first { $0.sensor == keyboard.rawValue }?.recording }
        func decide(_ granted: Bool) -> WireReply {
            admin.call(.consentDecide) {
                $0.app = IIODaemonRun.app
                $0.decisions = [keyboard.rawValue: granted]
            }
        }

        // consent
        #expect(app.call(.startRecording) { $0.sensor = SRSensor.rotationRate.rawValue }.error?.code == .invalidEntitlement)
        #expect(fetch(.rotationRate, 0, try now()).reply.error?.code == .invalidEntitlement)
        #expect(app.call(.startRecording) { $0.sensor = keyboard.rawValue }.error?.code == .noAuthorization)
        let refused = fetch(keyboard, 0, try now())
        #expect(refused.reply.error?.code == .noAuthorization && refused.batches.isEmpty)
        #expect(recording() == false, "the keyboard is read without a stake")
        #expect(decide(true).error == nil)
        try run.startRecording(app, keyboard)
        let start = try #require(app.call(.status) { $0.sensor = keyboard.rawValue }.states?.first?.firstRecording)

        // hold: the typing comes out once it has left the hold, never before
        let taps = KeyboardMetricsFamily.Wire.taps.ordinal
        var typed = 0.0
        var times: [Int64] = []
        let released = try IIODaemonRun.eventually(20) {
            let batches = fetch(keyboard, start - 1, try now() - hold).batches
            times = batches.flatMap(\.sensorTimes)
            typed = batches.reduce(0) { $0 + $1.columns[taps].reduce(0, +) }
            return typed >= Double(EvemuScript.passphrase.count)
        }
        #expect(released, "\(typed) taps released\n\(run.log)")
        #expect(times.allSatisfy { $0 >= start }, "keyboardMetrics: data from before the first start")
        #expect(
            try Self.nothingInsideTheHold(
                "keyboardMetrics", now: now, hold: hold, start: start,
                fetch: { from, to in fetch(keyboard, from, to) },
                records: { from, to in fetch(keyboard.deletionRecordSensor!, from, to) }),
            "keyboardMetrics: ranges before the hold return data")

        // deletion records: the dropped events are time the keyboard could not observe, a
        // systemInitiated record past the hold, with no interval's report inside it
        var records: [Rig.Record] = []
        #expect(
            try IIODaemonRun.eventually(20) {
                records = Rig.records(in: fetch(keyboard.deletionRecordSensor!, start - 1, try now() - hold).batches)
                return records.contains { $0.reason == .systemInitiated }
            }, "no systemInitiated record for the dropped key events: \(records)\n\(run.log)")
        for record in records where record.reason == .systemInitiated {
            #expect(record.start >= start && record.end >= record.start, "\(record)")
            #expect(!times.contains { $0 > record.start && $0 < record.end }, "an interval inside \(record): \(times)")
        }

        // window: a range reaching back eight days is clamped, not refused
        let late = try now()
        let clamped = fetch(keyboard, late - 8 * Self.day, late - hold)
        #expect(clamped.reply.error == nil && !clamped.batches.isEmpty, "\(clamped.reply)")
        #expect(clamped.batches.flatMap(\.sensorTimes).allSatisfy { $0 > late - 7 * Self.day })

        // stop: consent withdrawn ends the stake and closes the node; nothing is recorded after
        #expect(decide(false).error == nil)
        #expect(admin.call(.stakes).stakes?.first { $0.app == IIODaemonRun.app }?.active == false)
        #expect(DaemonHarness.eventually { recording() == false }, "the keyboard is still read")
        // The source stops on the pipeline's queue and delivers the interval it was in as it
        // stops: from a second later on, a reader still running would add one a second.
        let revoked = try now() + Self.second
        #expect(decide(true).error == nil)
        var after: [Int64] = []
        #expect(
            try IIODaemonRun.eventually(10) {
                // Past the hold by an interval and more: whatever was recorded after the revocation would show.
                let edge = try now() - hold
                after = fetch(keyboard, revoked, edge).batches.flatMap(\.sensorTimes)
                return edge > revoked + 2 * Self.second
            })
        #expect(after.isEmpty, "keyboardMetrics: \(after.count) intervals recorded after the consent was withdrawn")
    }
}

/// One family: its sensor, its entitlement and its real recorder with what its source would hear.
struct FamilyRow: Sendable, CustomTestStringConvertible {
    let sensor: SRSensor
    let entitlement: String
    /// What the configuration must say for the family's driver to run.
    var config = ""
    let make: @Sendable (ManualTime) -> any FamilyDrive

    var testDescription: String { String(sensor.rawValue.split(separator: ".").last ?? "") }

    static let all: [FamilyRow] = [
        FamilyRow(sensor: .accelerometer, entitlement: "motion-accelerometer") { AccelerometerDrive(time: $0) },
        FamilyRow(sensor: .deviceUsageReport, entitlement: "device-usage") { DeviceUsageDrive(time: $0) },
        FamilyRow(sensor: .visits, entitlement: "visits") { VisitsDrive(time: $0) },
        FamilyRow(sensor: .phoneUsageReport, entitlement: "phone-usage", config: "[modem]\n") {
            ModemDrive(time: $0, usage: .phone)
        },
        FamilyRow(sensor: .messagesUsageReport, entitlement: "messages-usage", config: "[modem]\n") {
            ModemDrive(time: $0, usage: .messages)
        },
    ]
}

/// What a family's source would be told, fed into its real recorder.
protocol FamilyDrive: Sendable {
    var sources: [any SensorSource] { get }
    /// Its observer (logind, the session agent, ModemManager) starts or stops watching.
    func watch(_ on: Bool, at: Int64)
    /// Something the family counts happens.
    func happen(at: Int64)
    /// Returns once what was fed has been taken.
    func settle()
}

/// The reference: a generated accelerometer at 1 Hz that loses every 100th tick (its own gap).
struct AccelerometerDrive: FamilyDrive {
    let sources: [any SensorSource]
    init(time: ManualTime) {
        sources = [GeneratedSource(rate: 1, perTick: 1, gapEvery: 100, clock: time, scheduler: time)]
    }
    func watch(_ on: Bool, at: Int64) {}
    func happen(at: Int64) {}
    func settle() {}
}

struct DeviceUsageDrive: FamilyDrive {
    let recorder: UsageRecorder
    var sources: [any SensorSource] { [recorder] }
    init(time: ManualTime) { recorder = UsageRecorder(clock: time, scheduler: time) }
    /// The agent: the screen saver and the compositor watch together, so every part of the
    /// report is observed while it watches.
    func watch(_ on: Bool, at: Int64) {
        recorder.feed(.watching(.screenSaver, on, at: at))
        recorder.feed(.watching(.compositor, on, at: at))
        if on { recorder.feed(.locked(false, at: at, from: .screenSaver)) }
    }
    func happen(at: Int64) {
        recorder.feed(.foreground(app: UsageApp(id: "org.gnome.Maps", category: .navigation), at: at))
    }
    func settle() { recorder.queue.sync {} }
}

/// One agent: it says on and off for itself, each once (the recorder counts its watchers).
final class VisitsDrive: FamilyDrive {
    let recorder: VisitRecorder
    private let watching = Mutex(false)
    var sources: [any SensorSource] { [recorder] }
    init(time: ManualTime) { recorder = VisitRecorder(clock: time) }
    func watch(_ on: Bool, at: Int64) {
        let changed = watching.withLock { state in
            defer { state = on }
            return state != on
        }
        if changed { recorder.feed(.watching(on, at: at)) }
    }
    func happen(at: Int64) {
        let visit = HandedVisit(
            distance: 1200, ages: [600_000, 540_000, 60_000, 0], category: .work, identifier: UUID())!
        recorder.feed(.visit(visit, at: at))
    }
    func settle() { recorder.queue.sync {} }
}

/// Both usage streams exist, as the modem driver's discovery adds them; the row stakes one.
struct ModemDrive: FamilyDrive {
    let recorder: ModemUsageRecorder
    let sources: [any SensorSource]
    let usage: ModemUsageKind
    init(time: ManualTime, usage: ModemUsageKind) {
        self.usage = usage
        // No broker listens there: the watcher finds no ModemManager and reports nothing; the
        // test says what it would have.
        let recorder = ModemUsageRecorder(
            bus: .address("unix:path=/nonexistent/sensorkit-semantics"), settings: ModemSettings(), clock: time,
            scheduler: time, log: { _ in })
        self.recorder = recorder
        sources = ModemUsageKind.allCases.map { ModemUsageSource($0, recorder: recorder, settings: ModemSettings()) }
    }
    func watch(_ on: Bool, at: Int64) { recorder.observe(.observable(on)) }
    func happen(at: Int64) {
        switch usage {
        case .phone:
            recorder.observe(.callState("/org/freedesktop/ModemManager1/Call/1", .terminated))
        case .messages:
            recorder.observe(.message(.incoming, number: "+15550100"))
        }
    }
    func settle() { recorder.queue.sync {} }
}

/// A daemon recording one row's family on hand-moved time, with its three apps.
final class Rig: Sendable {
    let row: FamilyRow
    let time = ManualTime()
    let drive: any FamilyDrive
    let harness: DaemonHarness

    struct Record: Sendable, CustomStringConvertible {
        let start: Int64, end: Int64, reason: SRDeletionReason
        var description: String { "\(reason) \(start)…\(end)" }
    }

    init(_ row: FamilyRow, config: String = "profile = lab\n") throws {
        self.row = row
        let drive = row.make(time)
        self.drive = drive
        harness = try DaemonHarness(config: config + row.config, sources: drive.sources, clock: time, scheduler: time) { folder in
            for app in [FamilySemanticsTests.study, FamilySemanticsTests.later] {
                try DaemonHarness.writeApp(app, in: folder + "/apps.d", entitlements: [row.entitlement], users: ["root"])
            }
            try DaemonHarness.writeApp(
                FamilySemanticsTests.unentitled, in: folder + "/apps.d",
                entitlements: [row.sensor == .ambientLightSensor ? "motion-accelerometer" : "ambient-light-sensor"],
                users: ["root"])
        }
    }

    func stop() { harness.stop() }

    var log: String { harness.logLines().suffix(20).joined(separator: "\n") }

    /// `app`, granted and recording, its observer watching.
    func recording(_ app: String) throws -> ReaderConnection {
        try harness.grant([row.sensor], to: app)
        let connection = try harness.connect(app: app)
        let started = connection.call(.startRecording) { $0.sensor = row.sensor.rawValue }
        #expect(started.error == nil, "\(row): startRecording: \(String(describing: started.error))")
        #expect(DaemonHarness.eventually { sourceRecording() == true }, "\(row): the source did not start\n\(log)")
        return connection
    }

    /// The family's source watches, something happens, and time moves one second past the next
    /// wall-clock quarter hour (a report interval closes); with `endingWithAnEvent`, something
    /// happens again there.
    func produce(endingWithAnEvent: Bool = false) throws {
        drive.watch(true, at: time.boottimeNanoseconds())
        drive.happen(at: time.boottimeNanoseconds())
        drive.settle()
        let realtime = time.realtimeNanoseconds()
        let quarter = FamilySemanticsTests.quarter
        let toBoundary = quarter - realtime % quarter
        try time.advance(by: .nanoseconds(toBoundary + FamilySemanticsTests.second))
        if endingWithAnEvent {
            drive.happen(at: time.boottimeNanoseconds())
            drive.settle()
        }
    }

    func firstStart(_ app: ReaderConnection) -> Int64? {
        app.call(.status) { $0.sensor = row.sensor.rawValue }.states?.first?.firstRecording
    }

    /// Whether the daemon lists the row's source as recording (nil: not listed).
    func sourceRecording() -> Bool? {
        guard let admin = try? harness.connect(app: nil) else { return nil }
        defer { admin.close() }
        return admin.call(.devices).sources?.first { $0.sensor == row.sensor.rawValue }?.recording
    }

    func fetch(_ app: ReaderConnection, sensor: SRSensor? = nil, from: Int64, to: Int64) -> (
        batches: [SampleBatchFrame], reply: WireReply
    ) {
        DaemonHarness.fetchAll(app, sensor: sensor ?? row.sensor, from: from, to: to, timeout: 10)
    }

    func samples(_ app: ReaderConnection, from: Int64, to: Int64) -> [Int64] {
        fetch(app, from: from, to: to).batches.flatMap(\.sensorTimes)
    }

    func records(_ app: ReaderConnection, from: Int64, to: Int64) -> [Record] {
        Self.records(in: fetch(app, sensor: row.sensor.deletionRecordSensor!, from: from, to: to).batches)
    }

    /// The deletion records of a deletion-record sensor's batches.
    static func records(in batches: [SampleBatchFrame]) -> [Record] {
        batches.flatMap { batch in
            (0..<batch.count).map {
                Record(
                    start: batch.sensorTimes[$0], end: Int64(batch.columns[0][$0]),
                    reason: SRDeletionReason(rawValue: Int(batch.columns[1][$0])) ?? .systemInitiated)
            }
        }
    }
}
