import AppleStyleStudy
import Dispatch
import Foundation
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import SensorTestKit
import Synchronization
import SystemBus
import Testing

/// The real `sensorkitd` following ModemManager on a private bus it takes for its system bus;
/// ModemManager is python-dbusmock with `Tests/Fixtures/dbus/modemmanager_voice.py` (modems,
/// calls and SMS with ModemManager 1.20's interfaces). A scripted set of calls and messages —
/// several from a secret number, a ModemManager restart among them — comes back through the
/// client's family code as exactly the expected reports, and no byte the daemon wrote holds the
/// number or a message text.
@Suite(.serialized) struct ModemEndToEndTests {
    static let template = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/dbus/modemmanager_voice.py").path
    static let service = "org.freedesktop.ModemManager1"
    static let root = "/org/freedesktop/ModemManager1"
    static let secret = "+447700900461"
    static let other = "+12025550143"
    static let texts = ["meet me at the clinic at five", "running late, sorry"]
    static let needs = NeedsTrait.needs(
        .tools([(PrivateBus.daemonPath, "dbus-daemon"), (TestEnvironment.python, "python3"), ("/usr/bin/timeout", "coreutils")]))

    @Test(.timeLimit(.minutes(3)), needs)
    func scriptedCallsAndMessagesBecomeExactlyTheirReportsAndTheNumberIsNowhere() throws {
        let bus = try PrivateBus(seconds: 90)
        defer { bus.close() }
        var modemManager = try Self.startModemManager(on: bus)
        // One interval of an hour: the script ends inside it (or, at an hour's turn, across two).
        let run = try IIODaemonRun(
            extraConfig: "[iio]\nenabled = no\n[modem]\ninterval = 1h\n", entitlements: ["phone-usage", "messages-usage"],
            grants: "phoneUsageReport, messagesUsageReport")
        defer { run.stop() }
        try run.startPlain(environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        let app = try run.connect()
        defer { app.close() }
        let (startSR, _) = try run.timeline(app)
        try run.startRecording(app, .phoneUsageReport)
        try run.startRecording(app, .messagesUsageReport)

        let mock = try ModemManagerScript(bus: bus)
        defer { mock.close() }
        let modem = try mock.addModem(0)
        try Self.wait("the daemon sees the modem", run) { run.log.contains("modem: \(modem) ") }

        // An incoming call from the secret number, answered; while it lasts, an SMS from the same
        // number arrives and one goes out to another.
        let call1 = try mock.addCall(modem, 1, direction: 1, state: 3, number: Self.secret)
        try mock.waitForRead(call1, bus: bus)
        var connected = Date()
        try mock.setCallState(call1, 4, reason: 3)
        let sms1 = try mock.addSms(modem, 1, pduType: 1, state: 2, number: Self.secret, text: Self.texts[0])
        try mock.waitForRead(sms1, bus: bus)
        try mock.setSmsState(sms1, 3)
        try mock.waitForRead(sms1, bus: bus, times: 2)
        let sms2 = try mock.addSms(modem, 2, pduType: 2, state: 1, number: Self.other, text: Self.texts[1])
        try mock.waitForRead(sms2, bus: bus)
        try mock.setSmsState(sms2, 4)
        try mock.waitForRead(sms2, bus: bus, times: 2)
        try mock.setSmsState(sms2, 5)
        try mock.waitForRead(sms2, bus: bus, times: 3)
        try mock.setCallState(call1, 7, reason: 4)
        var callSeconds = Date().timeIntervalSince(connected)
        try mock.deleteCall(modem, call1)
        // An outgoing call to the other number, and a missed one from the secret number.
        let call2 = try mock.addCall(modem, 2, direction: 2, state: 1, number: "+1 (202) 555-0143")
        try mock.waitForRead(call2, bus: bus)
        connected = Date()
        try mock.setCallState(call2, 4, reason: 3)
        try mock.setCallState(call2, 7, reason: 4)
        callSeconds += Date().timeIntervalSince(connected)
        let call3 = try mock.addCall(modem, 3, direction: 1, state: 3, number: Self.secret)
        try mock.waitForRead(call3, bus: bus)
        try mock.setCallState(call3, 7, reason: 5)

        // ModemManager restarts: its calls and SMS are gone, the modem comes back, one more SMS
        // from the secret number arrives whole.
        bus.stop(modemManager)
        try Self.wait("the daemon sees ModemManager leave", run) { run.log.contains("modem: ModemManager left the bus") }
        modemManager = try Self.startModemManager(on: bus)
        _ = modemManager
        let again = try mock.addModem(0)
        try Self.wait("the daemon sees the modem again", run) { run.log.components(separatedBy: "modem: \(again) ").count == 3 }
        let sms3 = try mock.addSms(again, 1, pduType: 1, state: 3, number: " +44 7700 900461", text: Self.texts[0])
        try mock.waitForRead(sms3, bus: bus, times: 3)  // twice by the first ModemManager, once now
        // The modem is unplugged: the daemon follows; the interval, observed until then, is a report.
        try mock.mock("RemoveModem", [mock.object(again)])
        try Self.wait("the daemon sees the modem go", run) { run.log.contains("modem: \(again) removed") }

        // Stopping delivers the interval so far.
        for sensor in [SRSensor.phoneUsageReport, .messagesUsageReport] {
            #expect(app.call(.stopRecording) { $0.sensor = sensor.rawValue }.error == nil)
        }
        var phone: [SRPhoneUsageReport] = []
        var messages: [SRMessagesUsageReport] = []
        var frames: [UInt8] = []
        let fetched = try IIODaemonRun.eventually(15) {
            let (now, _) = try run.timeline(app)
            frames = []
            phone = Self.results(app, .phoneUsageReport, from: startSR, to: now, frames: &frames)
            messages = Self.results(app, .messagesUsageReport, from: startSR, to: now, frames: &frames)
            return !phone.isEmpty && !messages.isEmpty
        }
        #expect(fetched, "no reports\n\(run.log)")
        #expect(phone.count == messages.count && (1...2).contains(phone.count))
        #expect(phone.map(\.totalIncomingCalls).reduce(0, +) == 2)
        #expect(phone.map(\.totalOutgoingCalls).reduce(0, +) == 1)
        #expect(messages.map(\.totalIncomingMessages).reduce(0, +) == 2)
        #expect(messages.map(\.totalOutgoingMessages).reduce(0, +) == 1)
        let measured = phone.map(\.totalPhoneCallDuration).reduce(0, +)
        #expect(measured > 0 && abs(measured - callSeconds) < 0.5, "call time \(measured) s, the script's \(callSeconds) s")
        if phone.count == 1 {
            // Two parties each: the secret number and the other, however they were spelled.
            #expect(phone[0].totalUniqueContacts == 2)
            #expect(messages[0].totalUniqueContacts == 2)
        }
        #expect(phone.allSatisfy { $0.duration > 0 && $0.duration <= 3600 })
        // The same reports through Apple's API: SRSensorReader.fetch as a study app writes it.
        let study = StudyApp(run: run)
        #expect(try study.fetchLastHour(.phoneUsageReport) == phone.compactMap { StudyRecorder.line(for: $0) })
        #expect(try study.fetchLastHour(.messagesUsageReport) == messages.compactMap { StudyRecorder.line(for: $0) })
        run.stop()

        // Every byte the daemon wrote: its state directory, its log and the frames it sent.
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
            for (form, needle) in Self.secretForms where KeyboardEndToEndTests.contains(bytes, needle) {
                Issue.record("\(name) holds the secret (\(form))")
            }
        }
    }

    /// No ModemManager on the bus: every interval is a deletion record, not a report of zeros
    /// (the store joins adjacent ones).
    @Test(.timeLimit(.minutes(3)), needs)
    func intervalsNoModemCouldObserveAreDeletionRecords() throws {
        let bus = try PrivateBus(seconds: 60)
        defer { bus.close() }
        let run = try IIODaemonRun(
            extraConfig: "[iio]\nenabled = no\n[modem]\ninterval = 1s\n", entitlements: ["phone-usage"],
            grants: "phoneUsageReport")
        defer { run.stop() }
        try run.startPlain(environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        let app = try run.connect()
        defer { app.close() }
        let (startSR, _) = try run.timeline(app)
        try run.startRecording(app, .phoneUsageReport)
        var reasons: [Double] = []
        var answer = ""
        let recorded = try IIODaemonRun.eventually(15) {
            let (now, _) = try run.timeline(app)
            let (records, reply) = DaemonHarness.fetchAll(
                app, sensor: SRSensor.phoneUsageReport.deletionRecordSensor!, from: startSR, to: now, timeout: 10)
            reasons = records.flatMap { $0.columns[1] }
            answer = "\(reply)"
            // Adjacent records of one reason are kept as one (the store coalesces them).
            let covered = records.flatMap { batch in zip(batch.sensorTimes, batch.columns[0]).map { $1 - Double($0) } }
            return covered.reduce(0, +) >= 2e9
        }
        #expect(recorded, "no deletion records (\(answer))\n\(run.log)")
        #expect(reasons.allSatisfy { $0 == Double(SRDeletionReason.systemInitiated.rawValue) })
        let (now, _) = try run.timeline(app)
        let (reports, _) = DaemonHarness.fetchAll(app, sensor: .phoneUsageReport, from: startSR, to: now, timeout: 10)
        #expect(reports.allSatisfy { $0.count == 0 }, "an unobserved interval became a report")
    }

    // MARK: Helpers

    static func startModemManager(on bus: PrivateBus) throws -> ChildProcess {
        let child = try bus.spawn(
            [
                "/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)", TestEnvironment.python, "-m", "dbusmock", "--system",
                "--template", template,
            ], log: "modemmanager")
        #expect(
            IIODaemonRun.eventually(15) { BLEBlueZEndToEndTests.owned(service, on: bus.address) },
            "the ModemManager stand-in did not start\n\(bus.logText())")
        return child
    }

    static func wait(_ what: String, _ run: IIODaemonRun, until condition: () -> Bool) throws {
        guard IIODaemonRun.eventually(15, condition) else { throw TestFailure("timed out: \(what)\n\(run.log)") }
    }

    /// A fetch's reports as the client builds them (`SensorFamilies.results`, the client's path).
    static func results<Report>(
        _ app: ReaderConnection, _ sensor: SRSensor, from: Int64, to: Int64, frames: inout [UInt8]
    ) -> [Report] {
        let (batches, _) = DaemonHarness.fetchAll(app, sensor: sensor, from: from, to: to, timeout: 10)
        var built = Built()
        for batch in batches {
            batch.appendFrame(to: &frames)
            built.count = batch.count
            SensorFamilies.results(batch, sensor: sensor, dates: SampleDates(cfOffset: 0, anchor: 0), into: &built)
        }
        return built.each.compactMap { $0 as? Report }
    }

    struct Built: FetchResultBuilder {
        var count = 0
        var each: [AnyObject] = []
        mutating func each(_ make: (Int) -> AnyObject) { for i in 0..<count { each.append(make(i)) } }
        mutating func batch(_ samples: SampleList) {}
        mutating func groups(_ runs: [Range<Int>], _ make: (Range<Int>) -> AnyObject) { each += runs.map(make) }
    }

    /// The secret number as every form a leak could take: its text with and without the `+`, the
    /// national part, its digits as UTF-16, as a 64-bit integer either way round, and the texts.
    static var secretForms: [(String, [UInt8])] {
        let digits = String(secret.dropFirst())
        var forms: [(String, [UInt8])] = [
            ("text", Array(secret.utf8)), ("digits", Array(digits.utf8)), ("national", Array("7700900461".utf8)),
            ("spaced", Array("7700 900461".utf8)), ("UTF-16", digits.utf16.flatMap { [UInt8($0 & 0xff), UInt8($0 >> 8)] }),
        ]
        let value = UInt64(digits)!
        forms.append(("64-bit little-endian", KeyboardEndToEndTests.bytes(value, 8, bigEndian: false)))
        forms.append(("64-bit big-endian", KeyboardEndToEndTests.bytes(value, 8, bigEndian: true)))
        for text in texts { forms.append(("message text", Array(text.utf8))) }
        return forms
    }
}

/// The ModemManager stand-in's `org.freedesktop.DBus.Mock` methods, called over our own bus
/// connection, and the waits on what the daemon asked of it (its call log).
final class ModemManagerScript {
    let connection: DBusConnection

    init(bus: PrivateBus) throws {
        connection = try DBusConnection(.address(bus.address), description: "modem-script")
    }

    func close() { connection.close() }

    @discardableResult
    func mock(_ member: String, _ arguments: [DBusValue]) throws -> [DBusValue] {
        let outcome = Mutex<Result<[DBusValue], DBusError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        connection.call(
            destination: ModemEndToEndTests.service, path: try DBusObjectPath(ModemEndToEndTests.root),
            interface: "org.freedesktop.DBus.Mock", member: member, arguments: arguments, timeout: .seconds(10),
            queue: DispatchQueue(label: "modem-script")
        ) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try outcome.withLock { $0! }.get()
    }

    func path(_ reply: [DBusValue]) throws -> String {
        guard case .objectPath(let path)? = reply.first else { throw TestFailure("no path in \(reply)") }
        return path.rawValue
    }

    func object(_ path: String) throws -> DBusValue { .objectPath(try DBusObjectPath(path)) }

    func addModem(_ index: UInt32) throws -> String { try path(mock("AddModem", [.uint32(index)])) }

    func addCall(_ modem: String, _ index: UInt32, direction: Int32, state: Int32, number: String) throws -> String {
        try path(mock("AddCall", [object(modem), .uint32(index), .int32(direction), .int32(state), .string(number)]))
    }

    func setCallState(_ call: String, _ state: Int32, reason: UInt32) throws {
        try mock("SetCallState", [object(call), .int32(state), .uint32(reason)])
    }

    func deleteCall(_ modem: String, _ call: String) throws { try mock("DeleteCall", [object(modem), object(call)]) }

    func addSms(_ modem: String, _ index: UInt32, pduType: UInt32, state: UInt32, number: String, text: String) throws -> String {
        try path(
            mock("AddSms", [object(modem), .uint32(index), .uint32(pduType), .uint32(state), .string(number), .string(text)]))
    }

    func setSmsState(_ sms: String, _ state: UInt32) throws { try mock("SetSmsState", [object(sms), .uint32(state)]) }

    /// Waits until the stand-in logged `times` reads (`GetAll`) of `path`'s properties.
    func waitForRead(_ path: String, bus: PrivateBus, times: Int = 1) throws {
        let line = "GetAll \(path) "
        guard IIODaemonRun.eventually(15, { bus.logText().components(separatedBy: line).count > times }) else {
            throw TestFailure("the daemon did not read \(path) \(times) time(s)\n\(bus.logText())")
        }
    }
}

/// The Apple-style study code (`StudyRecorder`: SensorKit's own `SRSensorReader`, a delegate,
/// `SRFetchRequest`) run as a study app of its own (`apple-style-study`, built beside the test
/// bundle) against the test's daemon: its own process, so no other test's client is disturbed.
struct StudyApp {
    let socket: String

    init(run: IIODaemonRun) { socket = run.socket }

    static var binary: String {
        (IIODaemonRun.daemonBinary as NSString).deletingLastPathComponent + "/apple-style-study"
    }

    /// What the study printed for the last hour of `sensor`, a line per report or visit.
    func fetchLastHour(_ sensor: SRSensor) throws -> [String] {
        let (status, output) = try CommandOutput.run(
            ["/usr/bin/timeout", "-s", "KILL", "30", Self.binary, sensor.rawValue],
            environment: ["SENSORKIT_APP": IIODaemonRun.app, "SENSORKIT_SOCKET": socket])
        guard status == 0 else { throw TestFailure("the study app failed (\(status)): \(output)") }
        return output.split(separator: "\n").map(String.init)
    }
}
