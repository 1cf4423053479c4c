import BLETestKit
import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import Testing

/// The real `sensorkitd` against wearables that misbehave on purpose (docs/reliability.md,
/// "A hostile or broken wearable"): each is contained — bounded records, bounded log lines,
/// bounded work — while another strap on the same driver stays on time.
@Suite(.serialized, .timeLimit(.minutes(3))) struct BLEHostileWearableTests {
    static let h10 = "C0:FF:EE:00:00:10"
    static let strap = "C0:FF:EE:00:00:01"
    static let hrm: [UInt8] = [0x37, 0x2A]
    let e2e = BLEEndToEndTests()

    /// 115 delta blocks of width 0 and 255 samples each: 230 bytes.
    static let widthZeroBlocks: [UInt8] = (0..<230).map { $0 % 2 == 0 ? 0 : 255 }

    static func le64(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

    /// The resident set of the daemon serving `folder`, in KiB (0 when not found).
    static func rss(_ folder: String) -> Int {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return 0 }
        for pid in entries where Int(pid) != nil {
            guard let cmdline = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"),
                let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe"),
                exe.hasSuffix("/sensorkitd"),
                String(decoding: cmdline, as: UTF8.self).contains(folder),
                let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
            else { continue }
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        return 0
    }

    static func occurrences(_ text: String, _ part: String) -> Int { text.components(separatedBy: part).count - 1 }

    /// An H10 recording heart rate and ECG beside a strap recording heart rate.
    static func chestAndStrap() throws -> WearableRig {
        try WearableRig(
            sensors: "heartRate, electrocardiogram", entitlements: ["heart-rate", "ecg"],
            wearables: """
                [wearable chest]
                address = \(h10)
                streams = heartRate, electrocardiogram
                [wearable strap]
                address = \(strap)
                streams = heartRate
                """)
    }

    @Test func aFloodOfGoodAndUndecodableFramesIsOneRecordPerRunAndTheOtherStrapStaysOnTime() throws {
        let rig = try Self.chestAndStrap()
        defer { rig.stop() }
        let h10 = try EmulatedPeripheral(directory: rig.directory, profile: .h10(address: Self.h10))
        let strap = try EmulatedPeripheral(directory: rig.directory, profile: .strap(address: Self.strap))
        let app = try rig.start()
        let run = rig.run
        let (startSR, anchor) = try run.timeline(app)
        for sensor in [SRSensor.heartRate, .electrocardiogram] { try run.startRecording(app, sensor) }
        #expect(IIODaemonRun.eventually(15) { h10.runningMeasurements.contains(0) && strap.isSubscribed(Self.hrm) }, "\(run.log)")
        let rssBefore = Self.rss(run.folder)

        // 3 s of a good 13-sample frame and an undecodable one, as fast as the socket takes them,
        // while the other strap sends a heart rate every 250 ms.
        let clock = LinuxSystemClock()
        let start = clock.boottimeNanoseconds()
        var device = UInt64(820_000_000) * 1_000_000_000
        let good: [UInt8] = (0..<39).map { $0 % 3 == 0 ? 1 : 0 }
        var sentAt: [Int64] = []
        var frames = 0
        while clock.boottimeNanoseconds() - start < 3_000_000_000 {
            let now = clock.boottimeNanoseconds()
            if now - start >= Int64(sentAt.count) * 250_000_000 {
                if strap.notifyHeartRate([0x06, UInt8(60 + sentAt.count % 40)]) { sentAt.append(now) }
            }
            device += 100_000_000
            if h10.sendRawFrame([0x00] + Self.le64(device) + [0x00] + good) { frames += 1 }
            if h10.sendRawFrame([0x00] + Self.le64(device) + [0x00, 1, 2]) { frames += 1 }
        }
        let flooded = Double(clock.boottimeNanoseconds() - start) / 1e9
        let rssAfter = Self.rss(run.folder)
        usleep(1_500_000)  // the settling run ends, the last heart rates are stored
        let now = try run.timeline(app).now
        let records = e2e.fetch(
            app, SRSensor.electrocardiogram.deletionRecordSensor!, device: "ble:" + Self.h10, from: startSR, to: now)
        let log = run.log
        let lostLines = Self.occurrences(log, "ble:\(Self.h10)#\(SRSensor.electrocardiogram.rawValue): lost")
        let heart = e2e.fetch(app, .heartRate, device: "ble:" + Self.strap, from: startSR, to: now)
        let lateness = zip(heart.times, sentAt).map { $0 - (anchor + $1) }
        print(
            "flood: \(frames) frames in \(String(format: "%.1f", flooded)) s; \(records.times.count) ECG deletion records, \(lostLines) 'lost' lines, \(log.split(separator: "\n").count) log lines; other strap \(heart.times.count) of \(sentAt.count) heart rates, latest \(lateness.max() ?? -1) ns late; RSS \(rssBefore) → \(rssAfter) KiB"
        )
        #expect(frames > 1000, "the flood did not get going")
        #expect(
            records.times.count >= 1 && records.times.count <= 7,
            "\(records.times.count) ECG deletion records\n\(log.suffix(3000))")
        #expect(lostLines <= 7)
        #expect(log.split(separator: "\n").count < 100, "\(log.split(separator: "\n").count) log lines")
        #expect(heart.times.count == sentAt.count, "the other strap: \(heart.times.count) of \(sentAt.count) heart rates")
        #expect((lateness.max() ?? .max) < 250_000_000, "the other strap's heart rates up to \(lateness.max() ?? -1) ns late")
    }

    @Test func impossibleFramesAnEndlessContinuationAndADeviceThatKeepsStoppingAreContained() throws {
        let rig = try Self.chestAndStrap()
        defer { rig.stop() }
        let h10 = try EmulatedPeripheral(directory: rig.directory, profile: .h10(address: Self.h10))
        let strap = try EmulatedPeripheral(directory: rig.directory, profile: .strap(address: Self.strap))
        let app = try rig.start()
        let run = rig.run
        let (startSR, anchor) = try run.timeline(app)
        for sensor in [SRSensor.heartRate, .electrocardiogram] { try run.startRecording(app, sensor) }
        #expect(IIODaemonRun.eventually(15) { h10.runningMeasurements.contains(0) && strap.isSubscribed(Self.hrm) }, "\(run.log)")
        let clock = LinuxSystemClock()
        var device = UInt64(820_000_000) * 1_000_000_000

        // Width-0 delta blocks: 243 bytes claiming 29,326 samples, 50 times.
        for _ in 0..<50 {
            device += 100_000_000
            h10.sendRawFrame([0x00] + Self.le64(device) + [0x80, 1, 0, 0] + Self.widthZeroBlocks)
        }
        // A settings response that never ends: 5,000 parts of 200 bytes, `more = 1` each.
        let part: [UInt8] = [0xF0, 0x01, 0x00, 0x00, 0x01] + [UInt8](repeating: 7, count: 200)
        var sentAt: [Int64] = []
        for index in 0..<5000 {
            h10.indicateControlPoint(part)
            if index % 500 == 0, strap.notifyHeartRate([0x06, 70]) { sentAt.append(clock.boottimeNanoseconds()) }
        }
        // The device stops its ECG stream by itself, again and again.
        let startsBefore = Self.occurrences(run.log, "PMD ecg streaming")
        let stopsFrom = clock.boottimeNanoseconds()
        for _ in 0..<300 {
            h10.indicateControlPoint([0x01, 0x00])
            usleep(5000)
        }
        usleep(500_000)
        // Pauses of 0.5, 1, 2, 4 … s: the restarts that fit the time this took (a loaded machine
        // stretches it), not one per indication.
        let elapsed = Double(clock.boottimeNanoseconds() - stopsFrom) / 1e9
        let allowed = Int(log2(elapsed / 0.5 + 1)) + 1
        let now = try run.timeline(app).now
        let log = run.log
        let ecg = e2e.fetch(app, .electrocardiogram, device: "ble:" + Self.h10, from: startSR, to: now)
        let heart = e2e.fetch(app, .heartRate, device: "ble:" + Self.strap, from: startSR, to: now)
        let lateness = zip(heart.times, sentAt).map { $0 - (anchor + $1) }
        let starts = Self.occurrences(log, "PMD ecg streaming") - startsBefore
        print(
            "hostile: \(ecg.times.count) ECG samples stored; \(Self.occurrences(log, "stopped PMD")) 'stopped PMD' lines, \(starts) restarts; other strap latest \(lateness.max() ?? -1) ns late"
        )
        #expect(ecg.times.count < 1000, "\(ecg.times.count) ECG samples from frames that hold none")
        #expect(log.contains("holding more samples than 260"), "\(log)")
        #expect(log.contains("a PMD control-point response in parts was dropped (more than 16 parts)"), "\(log)")
        #expect(Self.occurrences(log, "stopped PMD") <= 2, "\(log)")
        #expect(starts >= 1 && starts <= allowed, "\(starts) restarts in \(elapsed) s")
        #expect(heart.times.count == sentAt.count)
        #expect((lateness.max() ?? .max) < 250_000_000, "the other strap's heart rates up to \(lateness.max() ?? -1) ns late")
        #expect(IIODaemonRun.eventually(5) { (try? run.timeline(app)) != nil }, "the daemon stopped answering")
    }

    @Test func aHalfSpeedClockAndAnMTUTooSmallForECGEachLeaveARecord() throws {
        let small = "C0:FF:EE:00:00:11"
        let rig = try WearableRig(
            sensors: "electrocardiogram", entitlements: ["ecg"],
            wearables: """
                [wearable chest]
                address = \(Self.h10)
                streams = electrocardiogram
                [wearable small-mtu]
                address = \(small)
                streams = electrocardiogram
                """)
        defer { rig.stop() }
        let h10 = try EmulatedPeripheral(directory: rig.directory, profile: .h10(address: Self.h10))
        let tiny = try EmulatedPeripheral(directory: rig.directory, profile: .h10(address: small))
        tiny.setFaults { $0.serverMTU = 23 }
        let app = try rig.start()
        let run = rig.run
        let (startSR, _) = try run.timeline(app)
        try run.startRecording(app, .electrocardiogram)
        #expect(IIODaemonRun.eventually(15) { h10.runningMeasurements.contains(0) && tiny.connections == 1 }, "\(run.log)")
        #expect(
            IIODaemonRun.eventually(5) {
                (try? run.devices())?.contains {
                    $0.device == "ble:" + small && $0.details["pmd"]?.hasPrefix("not recorded: the link's ATT MTU is 23") == true
                } == true
            },
            "\((try? run.devices()) ?? [])")
        // 3 s of host time, 1.5 s of device time: the strap's clock runs at half speed.
        let clock = LinuxSystemClock()
        let hostBase = clock.boottimeNanoseconds()
        let deviceBase = UInt64(820_000_000) * 1_000_000_000
        for frame in 0..<30 {
            let due = hostBase + Int64(frame + 1) * 100_000_000
            let wait = due - clock.boottimeNanoseconds()
            if wait > 0 { usleep(useconds_t(wait / 1000)) }
            h10.sendECG(timestamp: deviceBase + UInt64(frame + 1) * 50_000_000, microvolts: .init(repeating: 100, count: 13))
        }
        #expect(app.call(.stopRecording) { $0.sensor = SRSensor.electrocardiogram.rawValue }.error == nil)
        var records = BLEEndToEndTests.Fetch(reply: WireReply())
        var tinyRecords = BLEEndToEndTests.Fetch(reply: WireReply())
        _ = try IIODaemonRun.eventually(5) {
            let now = try run.timeline(app).now
            records = e2e.fetch(
                app, SRSensor.electrocardiogram.deletionRecordSensor!, device: "ble:" + Self.h10, from: startSR, to: now)
            tinyRecords = e2e.fetch(
                app, SRSensor.electrocardiogram.deletionRecordSensor!, device: "ble:" + small, from: startSR, to: now)
            return !records.times.isEmpty && !tinyRecords.times.isEmpty
        }
        let now = try run.timeline(app).now
        let ecg = e2e.fetch(app, .electrocardiogram, device: "ble:" + Self.h10, from: startSR, to: now)
        let log = run.log
        #expect(records.times.count == 1, "\(records)\n\(log)")
        #expect(ecg.times.isEmpty, "\(ecg.times.count) ECG samples timed by a clock at half speed")
        #expect(log.contains("device clock runs at a rate the host clock disagrees with"), "\(log)")
        #expect(tinyRecords.times.count == 1, "\(tinyRecords)\n\(log)")
        #expect(
            Self.occurrences(log, "the link's ATT MTU is 23, PMD needs at least 232; recording heart rate only") == 1, "\(log)")
    }

    @Test func wristStateIsRecordedAgainAfterAReconnectAndItsRecordSpansTheLossOnly() throws {
        let rig = try WearableRig(
            sensors: "onWristState", entitlements: ["on-wrist"],
            wearables: """
                [wearable strap]
                address = \(Self.strap)
                streams = onWristState
                """)
        defer { rig.stop() }
        let strap = try EmulatedPeripheral(directory: rig.directory, profile: .strap(address: Self.strap))
        let app = try rig.start()
        let run = rig.run
        let (startSR, anchor) = try run.timeline(app)
        #expect(IIODaemonRun.eventually(15) { strap.isSubscribed(Self.hrm) }, "\(run.log)")
        #expect(IIODaemonRun.eventually(15) { (try? run.devices().count) == 1 }, "\(run.log)")
        try run.startRecording(app, .onWristState)  // staked while connected: no gap before the first state
        usleep(200_000)  // the stake reaches the stream
        let clock = LinuxSystemClock()
        // On the wrist from the start, unchanged for 2 s; then the link drops.
        for _ in 0..<8 {
            strap.notifyHeartRate([0x06, 70])
            usleep(250_000)
        }
        let lostAt = clock.boottimeNanoseconds()
        strap.disconnect()
        #expect(IIODaemonRun.eventually(15) { strap.connections == 2 && strap.isSubscribed(Self.hrm) }, "\(run.log)")
        let backAt = clock.boottimeNanoseconds()
        strap.notifyHeartRate([0x06, 71])
        var wrist = BLEEndToEndTests.Fetch(reply: WireReply())
        _ = try IIODaemonRun.eventually(5) {
            wrist = e2e.fetch(app, .onWristState, device: "ble:" + Self.strap, from: startSR, to: try run.timeline(app).now)
            return wrist.times.count == 2
        }
        #expect(wrist.columns.first == [1, 1], "the state after the reconnect is recorded again: \(wrist.columns)")
        let records = e2e.fetch(
            app, SRSensor.onWristState.deletionRecordSensor!, device: "ble:" + Self.strap, from: startSR,
            to: try run.timeline(app).now)
        #expect(records.times.count == 1, "\(records)\n\(run.log)")
        if let from = records.times.first, let to = records.columns.first?.first {
            #expect(
                from >= anchor + lostAt - 300_000_000,
                "the record starts \(Double(anchor + lostAt - from) / 1e9) s before the loss")
            #expect(Int64(to) >= anchor + backAt && Int64(to) - from < backAt - lostAt + 1_000_000_000)
        }
    }

    @Test func anImpostorAdvertisingTheNameLosesAfterALostLink() throws {
        let impostorAddress = "C0:FF:EE:00:00:02", realAddress = "C0:FF:EE:00:00:09"
        let rig = try WearableRig(
            sensors: "heartRate", entitlements: ["heart-rate"],
            wearables: """
                [wearable chest]
                name = Polar H10 *
                streams = heartRate
                """)
        defer { rig.stop() }
        var fake = EmulatedPeripheral.Profile.strap(address: impostorAddress)
        fake.name = "Polar H10 FAKE"
        let impostor = try EmulatedPeripheral(directory: rig.directory, profile: fake)
        let app = try rig.start()
        let run = rig.run
        let (startSR, _) = try run.timeline(app)
        try run.startRecording(app, .heartRate)
        #expect(IIODaemonRun.eventually(15) { impostor.isSubscribed(Self.hrm) }, "\(run.log)")
        var genuine = EmulatedPeripheral.Profile.strap(address: realAddress)
        genuine.name = "Polar H10 REAL"
        let real = try EmulatedPeripheral(directory: rig.directory, profile: genuine)
        impostor.disconnect()  // it stays in range, advertising the name
        #expect(IIODaemonRun.eventually(15) { real.isSubscribed(Self.hrm) }, "the real strap was never chosen\n\(run.log)")
        var heart = BLEEndToEndTests.Fetch(reply: WireReply())
        _ = try IIODaemonRun.eventually(5) {  // its streams are registered once its setup is read
            real.notifyHeartRate([0x06, 66])
            usleep(100_000)
            heart = e2e.fetch(app, .heartRate, device: "ble:" + realAddress, from: startSR, to: try run.timeline(app).now)
            return !heart.times.isEmpty
        }
        #expect(heart.columns.first?.first == 66, "\(run.log)")
        let log = run.log
        for address in [impostorAddress, realAddress] {
            #expect(log.contains("\(address) advertises the name"), "candidate \(address) not logged\n\(log)")
        }
    }
}
