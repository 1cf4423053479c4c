import BLETestKit
import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import Synchronization
import Testing

/// The real `sensorkitd` binary recording two emulated wearables over `[ble] transport =
/// emulated:DIR` (docs/ble.md): an H10-like strap (heart rate + ECG, found by name) and a plain
/// heart-rate strap (found by address), hosted by this test process. Both go through a
/// disconnect-and-return, the H10's device clock resets mid-stream; an app then fetches every
/// heart rate with its RR intervals, the wrist-state changes, every ECG sample in µV within one
/// sample period of the truth, and exactly one deletion record per real gap. The wrist state is
/// recorded again after the reconnect (the state while the link was down is unknown).
/// The first test runs twice: over the emulated transport, and over `hci-socket:` through the
/// emulated HCI controller (our own host on H4 packets, the same peripherals behind it).
@Suite(.serialized) struct BLEEndToEndTests {
    static let app = "org.sensorkit.ble-e2e"
    static let h10 = "C0:FF:EE:00:00:10"
    static let strap = "C0:FF:EE:00:00:01"
    static let period = 1e9 / 130
    static let samplesPerFrame = 13

    /// What the test sent and the daemon must give back.
    struct Sent {
        var ecg: [(time: Int64, microvolts: Int32)] = []
        var beats: [String: [(bpm: UInt8, rr: [UInt16])]] = [:]
        var wrist: [String: [Bool]] = [:]
    }

    enum Transport: String, CaseIterable, Sendable { case emulated, hciController }

    @Test(.timeLimit(.minutes(3)), arguments: Transport.allCases)
    func wearablesAreRecordedThroughALinkLossAndAClockReset(over transport: Transport) throws {
        let rig = try WearableRig(
            throughController: transport == .hciController,
            sensors: "heartRate, onWristState, electrocardiogram", entitlements: ["heart-rate", "on-wrist", "ecg"],
            wearables: """
                [wearable chest]
                name = Polar H10 *
                streams = heartRate, onWristState, electrocardiogram
                [wearable strap]
                address = \(Self.strap.lowercased())
                streams = heartRate, onWristState
                """)
        defer { rig.stop() }
        let h10 = try EmulatedPeripheral(directory: rig.directory, profile: .h10(address: Self.h10))
        let strap = try EmulatedPeripheral(directory: rig.directory, profile: .strap(address: Self.strap))

        let app = try rig.start()
        let run = rig.run
        if let controller = rig.controller {
            #expect(IIODaemonRun.eventually(15) { controller.history.connections >= 2 }, "\(run.log)")
        }
        let (startSR, anchor) = try run.timeline(app)
        for sensor in [SRSensor.heartRate, .onWristState, .electrocardiogram] { try run.startRecording(app, sensor) }

        let hrm: [UInt8] = [0x37, 0x2A]
        func streaming() -> Bool {
            h10.runningMeasurements.contains(0) && h10.isSubscribed(hrm) && strap.isSubscribed(hrm)
        }
        #expect(IIODaemonRun.eventually(15, streaming), "the daemon did not connect and start ECG\n\(run.log)")

        // The H10's clock: device ns since 2000 = host boot ns + offset (reset: from 2019-01-01 + 5 s).
        let clock = LinuxSystemClock()
        let hostBase = clock.boottimeNanoseconds() + 200_000_000
        var deviceOffset = Int64(820_000_000) * 1_000_000_000 - hostBase
        var sent = Sent()
        var sample = 0
        var beat = 0
        // Straps whose link came back: their next contact state is recorded even if unchanged.
        var reconnected: Set<String> = []
        func trueTime(_ n: Int) -> Int64 { hostBase + Int64((Double(n) * Self.period).rounded()) }
        /// Sends `seconds` of ECG (13-sample frames at 130 Hz, on time) and a heart-rate
        /// measurement from each strap every 0.5 s; what was delivered is the truth.
        func feed(seconds: Double, strapContact: (Int) -> UInt8 = { _ in 3 }) {
            let frames = Int(seconds * 130) / Self.samplesPerFrame
            for _ in 0..<frames {
                let last = sample + Self.samplesPerFrame - 1
                let due = trueTime(last)
                let wait = due - clock.boottimeNanoseconds()
                if wait > 0 { usleep(useconds_t(wait / 1000)) }
                let values = (sample...last).map { Int32(($0 * 37) % 2001) - 1000 }
                if h10.sendECG(timestamp: UInt64(trueTime(last) + deviceOffset), microvolts: values) {
                    for (index, n) in (sample...last).enumerated() { sent.ecg.append((trueTime(n), values[index])) }
                }
                sample = last + 1
                if sample % (Self.samplesPerFrame * 5) == 0 {
                    beat += 1
                    for (address, peripheral, contact) in [(Self.h10, h10, UInt8(3)), (Self.strap, strap, strapContact(beat))] {
                        let bpm = UInt8(60 + beat % 40)
                        let rr: [UInt16] = beat % 3 == 0 ? [] : [UInt16(900 + beat), UInt16(910 + beat)]
                        var value: [UInt8] = [(rr.isEmpty ? 0 : 0x10) | contact << 1, bpm]
                        for interval in rr { value += [UInt8(interval & 0xFF), UInt8(interval >> 8)] }
                        guard peripheral.notifyHeartRate(value) else { continue }
                        if contact != 2 { sent.beats[address, default: []].append((bpm, rr)) }
                        if contact >= 2, reconnected.remove(address) != nil || sent.wrist[address]?.last != (contact == 3) {
                            sent.wrist[address, default: []].append(contact == 3)
                        }
                    }
                }
            }
        }

        feed(seconds: 3, strapContact: { $0 == 6 ? 2 : 3 })  // the strap is off the skin once, then back
        // Both links drop; the devices keep their clocks; nothing is sent until the daemon is back.
        h10.disconnect()
        strap.disconnect()
        #expect(
            IIODaemonRun.eventually(15) { h10.connections == 2 && strap.connections == 2 && streaming() },
            "the daemon did not reconnect\n\(run.log)")
        reconnected = [Self.h10, Self.strap]
        let skipped = Int(Double(clock.boottimeNanoseconds() - hostBase) / Self.period) + Self.samplesPerFrame - sample
        sample += max(0, skipped / Self.samplesPerFrame + 1) * Self.samplesPerFrame
        feed(seconds: 3)
        // The H10's clock falls back to its power-on instant mid-stream.
        deviceOffset = Int64(PMDTimeReset.instant) + 5_000_000_000 - trueTime(sample)
        feed(seconds: 3)

        // ECG: every sample sent, its value, and its time within one sample period.
        let (ecg, now) = try settled(run, app, device: "ble:" + Self.h10, from: startSR, expecting: sent.ecg.count)
        #expect(ecg.reply.error == nil, "\(String(describing: ecg.reply.error))")
        #expect(ecg.times.count == sent.ecg.count, "ECG samples \(ecg.times.count) of \(sent.ecg.count)\n\(run.log)")
        var worst: Int64 = 0
        for (index, truth) in sent.ecg.enumerated() where index < ecg.times.count {
            #expect(ecg.columns[0][index] == Double(truth.microvolts))
            worst = max(worst, abs(ecg.times[index] - (anchor + truth.time)))
        }
        #expect(worst <= Int64(Self.period), "worst ECG time error \(worst) ns")
        #expect(zip(ecg.times, ecg.times.dropFirst()).allSatisfy { $0 < $1 })
        // `sessionStart` is SR ns (docs/protocol.md §5.2): the PMD start of the sample's session,
        // after recording began and before the sample.
        let sessions = ecg.columns[ElectrocardiogramFamily.Wire.sessionStart.ordinal]
        #expect(
            !sessions.isEmpty
                && sessions.indices.allSatisfy { Int64(sessions[$0]) >= startSR && Int64(sessions[$0]) <= ecg.times[$0] },
            "sessionStart \(sessions.first ?? 0) is not the SR time of a PMD start after \(startSR)")

        for address in [Self.h10, Self.strap] {
            let device = "ble:" + address
            let hr = fetch(app, .heartRate, device: device, from: startSR, to: now)
            let expected = sent.beats[address] ?? []
            #expect(hr.columns.first?.map { UInt8($0) } == expected.map(\.bpm), "\(address) heart rates")
            #expect(hr.ragged == expected.flatMap(\.rr).map { Double($0) / 1024 }, "\(address) RR intervals")
            let wrist = fetch(app, .onWristState, device: device, from: startSR, to: now)
            #expect(wrist.columns.first?.map { $0 != 0 } == sent.wrist[address], "\(address) wrist states")
            // One deletion record per real gap: the link loss (and, for ECG, the clock reset).
            let sensors: [(SRSensor, Int)] =
                address == Self.h10
                ? [(.heartRate, 1), (.onWristState, 1), (.electrocardiogram, 2)] : [(.heartRate, 1), (.onWristState, 1)]
            for (sensor, count) in sensors {
                let records = fetch(app, sensor.deletionRecordSensor!, device: device, from: startSR, to: now)
                let systemInitiated =
                    records.columns.count > 1
                    ? records.columns[1].filter { $0 == Double(SRDeletionReason.systemInitiated.rawValue) }.count : 0
                #expect(
                    systemInitiated == count,
                    "\(address) \(sensor.rawValue): \(systemInitiated) deletion records, expected \(count)\n\(run.log)")
            }
        }

        // Each wearable is its own SRDevice, from its Device Information Service.
        let devices = app.call(.fetchDevices) { $0.sensor = SRSensor.heartRate.rawValue }.devices ?? []
        let chest = devices.first { $0.identifier == "ble:" + Self.h10 }
        #expect(chest?.model == "H10" && chest?.systemVersion == "3.1.1" && chest?.systemName == "Polar Electro Oy", "\(devices)")
        #expect(devices.first { $0.identifier == "ble:" + Self.strap }?.model == "Strap", "\(devices)")

        // sensorkitd devices: link, battery and the ECG stream's clock-mapping uncertainty.
        let sources = try run.devices()
        let ecgSource = sources.first { $0.device == "ble:" + Self.h10 && $0.sensor == SRSensor.electrocardiogram.rawValue }
        #expect(ecgSource?.details["link"] == "ready" && ecgSource?.details["battery"] == "87 %", "\(sources)")
        #expect(ecgSource?.details["clockUncertainty"]?.hasSuffix(" ms") == true, "\(sources)")

        // As a person sees it: `sensorkitctl devices`.
        let ctl = Process()
        ctl.executableURL = URL(fileURLWithPath: DaemonHarness.productsFolder + "/sensorkitctl")
        ctl.arguments = ["--socket", run.socket, "devices"]
        let pipe = Pipe()
        ctl.standardOutput = pipe
        try ctl.run()
        let printed = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        ctl.waitUntilExit()
        for line in [
            "electrocardiogram on ble:\(Self.h10): ble:\(Self.h10)#\(SRSensor.electrocardiogram.rawValue) (recording)",
            "heartRate on ble:\(Self.strap)", "    link: ready", "    battery: 87 %", "    deviceModel: H10",
            "    clockUncertainty: ",
        ] {
            #expect(printed.contains(line), "'\(line)' missing from sensorkitctl devices:\n\(printed)")
        }

        // SIGTERM: PMD STOP reaches the H10 before the link closes.
        run.stopDaemon()
        #expect(h10.commands.last == [0x03, 0x00], "\(h10.commands)")
        #expect(h10.runningMeasurements.isEmpty)
        if let controller = rig.controller {
            // Through the controller: both links came back once, and the ATT requests went as ACL (four discoveries).
            #expect(controller.history.connections == 4 && controller.history.aclPackets > 40, "\(controller.history)")
            #expect(controller.history.unsentPackets == 0, "\(controller.history)")
        }
    }

    @Test func malformedInputIsCountedLoggedOnceAndNeverCorruptsAStream() throws {
        let rig = try WearableRig(
            sensors: "heartRate, electrocardiogram", entitlements: ["heart-rate", "ecg"],
            wearables: """
                [wearable chest]
                address = \(Self.h10)
                streams = heartRate, electrocardiogram
                [wearable small-mtu]
                address = C0:FF:EE:00:00:11
                streams = heartRate, electrocardiogram
                """)
        defer { rig.stop() }
        let h10 = try EmulatedPeripheral(directory: rig.directory, profile: .h10(address: Self.h10))
        let small = try EmulatedPeripheral(directory: rig.directory, profile: .h10(address: "C0:FF:EE:00:00:11"))
        small.setFaults { $0.serverMTU = 185 }
        let app = try rig.start()
        let run = rig.run
        let (startSR, anchor) = try run.timeline(app)
        for sensor in [SRSensor.heartRate, .electrocardiogram] { try run.startRecording(app, sensor) }
        let hrm: [UInt8] = [0x37, 0x2A]
        #expect(IIODaemonRun.eventually(15) { h10.runningMeasurements.contains(0) && small.isSubscribed(hrm) }, "\(run.log)")

        let clock = LinuxSystemClock()
        let hostBase = clock.boottimeNanoseconds() + 200_000_000
        var deviceOffset = Int64(820_000_000) * 1_000_000_000 - hostBase
        var truth: [(time: Int64, microvolts: Int32)] = []
        var faults: [Int] = []  // indices into truth: the last good sample before each gap
        func trueTime(_ n: Int) -> Int64 { hostBase + Int64((Double(n) * Self.period).rounded()) }
        var previous: (timestamp: UInt64, values: [Int32])?
        for frame in 0..<30 {
            let first = frame * Self.samplesPerFrame, last = first + Self.samplesPerFrame - 1
            let wait = trueTime(last) - clock.boottimeNanoseconds()
            if wait > 0 { usleep(useconds_t(wait / 1000)) }
            switch frame {
            case 5:
                h10.sendPacket([0xFF, 0x00])  // an opcode nobody knows
                h10.sendPacket([0x1B, 0x01])  // a notification cut short
            case 8:
                if let previous { h10.sendECG(timestamp: previous.timestamp, microvolts: previous.values) }  // a duplicate
            case 10, 14:
                faults.append(truth.count - 1)
                h10.sendRawFrame(frame == 10 ? [0x00, 1, 2, 3] : [0x00] + [UInt8](repeating: 7, count: 8) + [0x00, 1, 2, 3, 4])
            case 12:
                h10.notifyHeartRate([0x10, 70, 0x01])  // an odd number of RR bytes
                h10.notifyHeartRate([0x10, 70, 0x01])
            case 20:
                faults.append(truth.count - 1)
                deviceOffset += 3_600_000_000_000  // the device clock jumps an hour ahead
            default: break
            }
            let values = (first...last).map { Int32(($0 * 53) % 1601) - 800 }
            let timestamp = UInt64(trueTime(last) + deviceOffset)
            if h10.sendECG(timestamp: timestamp, microvolts: values) {
                for (index, n) in (first...last).enumerated() { truth.append((trueTime(n), values[index])) }
            }
            previous = (timestamp, values)
            if frame % 5 == 0 {
                h10.notifyHeartRate([0x06, 72])
                small.notifyHeartRate([0x06, 64])
            }
        }
        let (ecg, now) = try settled(run, app, device: "ble:" + Self.h10, from: startSR, expecting: truth.count)
        #expect(ecg.times.count == truth.count, "ECG samples \(ecg.times.count) of \(truth.count)\n\(run.log)")
        #expect(ecg.columns.first.map { $0 == truth.map { Double($0.microvolts) } } == true)
        let worst = zip(ecg.times, truth).map { abs($0 - (anchor + $1.time)) }.max() ?? .max
        #expect(worst <= Int64(Self.period), "worst ECG time error \(worst) ns")
        #expect(zip(ecg.times, ecg.times.dropFirst()).allSatisfy { $0 < $1 })
        // One deletion record per gap, from the last good sample before it to the first after.
        let records = fetch(
            app, SRSensor.electrocardiogram.deletionRecordSensor!, device: "ble:" + Self.h10, from: startSR, to: now)
        #expect(
            records.times.count == faults.count,
            "\(records.times.count) ECG deletion records for \(faults.count) gaps\n\(run.log)")
        for (index, fault) in faults.enumerated() where index < records.times.count && fault + 1 < truth.count {
            #expect(abs(records.times[index] - (anchor + truth[fault].time)) <= Int64(Self.period), "gap \(index) start")
            #expect(
                abs(Int64(records.columns[0][index]) - (anchor + truth[fault + 1].time)) <= Int64(Self.period), "gap \(index) end"
            )
        }
        #expect(fetch(app, .heartRate, device: "ble:" + Self.h10, from: startSR, to: now).times.count == 6)

        // Each cause is logged once, however often it happens.
        let log = run.log
        for cause in [
            "dropped a PDU that does not decode", "frame repeating the previous timestamp", "frame that does not decode dropped",
            "heart-rate measurement that does not decode", "device time jumped",
        ] {
            #expect(
                log.components(separatedBy: cause).count == 2,
                "'\(cause)' logged \(log.components(separatedBy: cause).count - 1) times\n\(log)")
        }
        // An MTU below 232: heart rate only, and the log says why.
        #expect(
            log.contains(
                "wearable small-mtu (C0:FF:EE:00:00:11): the link's ATT MTU is 185, PMD needs at least 232; recording heart rate only"
            ))
        #expect(small.commands.isEmpty)
        #expect(fetch(app, .heartRate, device: "ble:C0:FF:EE:00:00:11", from: startSR, to: now).times.count == 6)
    }

    @Test func aStakeTakenWhileTheWearableIsAwayIsAGapUntilItIsBack() throws {
        let rig = try WearableRig(
            sensors: "heartRate", entitlements: ["heart-rate"],
            wearables: """
                [wearable strap]
                address = \(Self.strap)
                streams = heartRate
                """)
        defer { rig.stop() }
        var strap = try EmulatedPeripheral(directory: rig.directory, profile: .strap(address: Self.strap))
        let app = try rig.start()
        let run = rig.run
        let hrm: [UInt8] = [0x37, 0x2A]
        #expect(IIODaemonRun.eventually(15) { strap.isSubscribed(hrm) }, "\(run.log)")
        #expect(IIODaemonRun.eventually(15) { (try? run.devices().count) == 1 }, "\(run.log)")
        strap.remove()
        #expect(IIODaemonRun.eventually(15) { run.log.contains("link lost") }, "\(run.log)")
        let beforeStake = try run.timeline(app).now
        try run.startRecording(app, .heartRate)
        let afterStake = try run.timeline(app).now
        usleep(300_000)
        strap = try EmulatedPeripheral(directory: rig.directory, profile: .strap(address: Self.strap))
        #expect(IIODaemonRun.eventually(15) { strap.isSubscribed(hrm) }, "\(run.log)")
        for bpm in [70, 71, 72] as [UInt8] {
            strap.notifyHeartRate([0x06, bpm])
            usleep(100_000)
        }
        var heart = Fetch(reply: WireReply())
        _ = try IIODaemonRun.eventually(10) {
            heart = fetch(app, .heartRate, device: "ble:" + Self.strap, from: beforeStake, to: try run.timeline(app).now)
            return heart.times.count == 3
        }
        #expect(heart.columns.first == [70, 71, 72], "\(run.log)")
        let records = fetch(
            app, SRSensor.heartRate.deletionRecordSensor!, device: "ble:" + Self.strap, from: beforeStake,
            to: try run.timeline(app).now)
        #expect(records.times.count == 1, "\(run.log)")
        if let start = records.times.first, let end = records.columns.first?.first, let first = heart.times.first {
            // The stake reaches the stream shortly after the reply (the pipeline applies it on its queue).
            #expect(start >= beforeStake && start < first, "\(start - afterStake) ns after the reply")
            #expect(Int64(end) == first)
        }
    }

    @Test func endingAnECGStakeKeepsTheFramesHeldForTheFitAndStopsTheStream() throws {
        let rig = try WearableRig(
            sensors: "electrocardiogram", entitlements: ["ecg"],
            wearables: """
                [wearable chest]
                address = \(Self.h10)
                streams = electrocardiogram
                """)
        defer { rig.stop() }
        let h10 = try EmulatedPeripheral(directory: rig.directory, profile: .h10(address: Self.h10))
        let app = try rig.start()
        let run = rig.run
        let (startSR, _) = try run.timeline(app)
        try run.startRecording(app, .electrocardiogram)
        #expect(IIODaemonRun.eventually(15) { h10.runningMeasurements.contains(0) }, "\(run.log)")
        let clock = LinuxSystemClock()
        let hostBase = clock.boottimeNanoseconds() + 100_000_000
        var sent = 0
        for frame in 0..<15 {
            let last = (frame + 1) * Self.samplesPerFrame - 1
            let due = hostBase + Int64((Double(last) * Self.period).rounded())
            let wait = due - clock.boottimeNanoseconds()
            if wait > 0 { usleep(useconds_t(wait / 1000)) }
            if h10.sendECG(
                timestamp: UInt64(820_000_000_000_000_000 + due),
                microvolts: .init(repeating: Int32(frame), count: Self.samplesPerFrame))
            {
                sent += Self.samplesPerFrame
            }
        }
        usleep(100_000)  // the last frame has arrived; up to 1 s of frames is still held
        let reply = app.call(.stopRecording) { $0.sensor = SRSensor.electrocardiogram.rawValue }
        #expect(reply.error == nil)
        #expect(IIODaemonRun.eventually(5) { h10.runningMeasurements.isEmpty }, "PMD STOP at the end of the stake\n\(run.log)")
        #expect(h10.commands.last == [0x03, 0x00])
        let (ecg, _) = try settled(run, app, device: "ble:" + Self.h10, from: startSR, expecting: sent)
        #expect(ecg.times.count == sent, "\(ecg.times.count) of \(sent) ECG samples after the stake ended\n\(run.log)")
    }

    @Test func aStakeEndingWhileTheLinkIsDownClosesTheGapAtTheStop() throws {
        let rig = try WearableRig(
            sensors: "heartRate", entitlements: ["heart-rate"],
            wearables: """
                [wearable strap]
                address = \(Self.strap)
                streams = heartRate
                """)
        defer { rig.stop() }
        let strap = try EmulatedPeripheral(directory: rig.directory, profile: .strap(address: Self.strap))
        let app = try rig.start()
        let run = rig.run
        let (startSR, _) = try run.timeline(app)
        try run.startRecording(app, .heartRate)
        #expect(IIODaemonRun.eventually(15) { strap.isSubscribed([0x37, 0x2A]) }, "\(run.log)")
        strap.notifyHeartRate([0x06, 70])
        var heart = Fetch(reply: WireReply())
        _ = try IIODaemonRun.eventually(10) {
            heart = fetch(app, .heartRate, device: "ble:" + Self.strap, from: startSR, to: try run.timeline(app).now)
            return heart.times.count == 1
        }
        strap.remove()
        #expect(IIODaemonRun.eventually(15) { run.log.contains("link lost") }, "\(run.log)")
        let beforeStop = try run.timeline(app).now
        #expect(app.call(.stopRecording) { $0.sensor = SRSensor.heartRate.rawValue }.error == nil)
        let afterStop = try run.timeline(app).now
        var records = Fetch(reply: WireReply())
        var lost: [Int] = []
        _ = try IIODaemonRun.eventually(5) {  // the stop reaches the stream after the reply
            records = fetch(
                app, SRSensor.heartRate.deletionRecordSensor!, device: "ble:" + Self.strap, from: startSR,
                to: try run.timeline(app).now)
            lost =
                records.columns.count > 1
                ? (0..<records.times.count).filter { records.columns[1][$0] == Double(SRDeletionReason.systemInitiated.rawValue) }
                : []
            return !lost.isEmpty
        }
        #expect(lost.count == 1, "\(records)\n\(run.log)")
        if let index = lost.first, let last = heart.times.first {
            #expect(records.times[index] == last)
            // The stop reaches the stream shortly after the reply (the pipeline applies it on its queue).
            #expect(
                Int64(records.columns[0][index]) >= beforeStop,
                "\(Int64(records.columns[0][index]) - afterStop) ns after the reply")
        }
    }

    /// The ECG fetch once the daemon has released and stored every frame (held frames go out
    /// after 1 s; a loaded machine may take longer), at most 10 s; and the SR time it ended at.
    func settled(_ run: IIODaemonRun, _ app: ReaderConnection, device: String, from: Int64, expecting count: Int) throws -> (
        Fetch, Int64
    ) {
        var result: (Fetch, Int64)?
        _ = try IIODaemonRun.eventually(10) {
            let now = try run.timeline(app).now
            result = (fetch(app, .electrocardiogram, device: device, from: from, to: now), now)
            return result!.0.times.count >= count
        }
        return result!
    }

    struct Fetch {
        var times: [Int64] = []
        var columns: [[Double]] = []
        var ragged: [Double] = []
        var reply: WireReply
    }

    func fetch(_ connection: ReaderConnection, _ sensor: SRSensor, device: String, from: Int64, to: Int64) -> Fetch {
        let (batches, reply) = DaemonHarness.fetchAll(connection, sensor: sensor, from: from, to: to, device: device, timeout: 20)
        var result = Fetch(reply: reply)
        for batch in batches {
            result.times += batch.sensorTimes
            result.ragged += batch.ragged
            if result.columns.isEmpty {
                result.columns = batch.columns
            } else {
                for index in result.columns.indices { result.columns[index] += batch.columns[index] }
            }
        }
        return result
    }
}

/// The H10's power-on instant (2019-01-01T00:00:00Z in ns since 2000-01-01), written out here
/// rather than taken from the client under test.
enum PMDTimeReset {
    static let instant: UInt64 = (1_546_300_800 - 946_684_800) * 1_000_000_000
}

/// A real `sensorkitd` recording only wearables: `[iio] enabled = no`, `[ble] transport =
/// emulated:DIR` over a fresh folder the test's peripherals serve in, and the test's app granted
/// `sensors`. Peripherals are created in `directory` between `init` and `start`.
final class WearableRig {
    /// The `transport:` that leaves `[ble] transport =` out, so the daemon chooses.
    static let daemonChooses = ""
    let directory: String
    let run: IIODaemonRun
    /// With `throughController`: the emulated HCI controller in front of the folder's peripherals,
    /// which the daemon reaches with `transport = hci-socket:DIR/hci`.
    let controller: EmulatedController?
    private let entitlements: [String]
    private var app: ReaderConnection?

    init(
        throughController: Bool = false, sensors: String, entitlements: [String], wearables: String, transport: String? = nil
    ) throws {
        var template = Array("/tmp/skble-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemError("mkdtemp", errno: errno) }
        directory = String(cString: made)
        self.entitlements = entitlements
        controller = throughController ? try EmulatedController(directory: directory, socketPath: directory + "/hci") : nil
        let transport = throughController ? "hci-socket:\(directory)/hci" : transport
        run = try IIODaemonRun(
            extraConfig: """
                [grant \(BLEEndToEndTests.app)]
                sensors = \(sensors)
                [iio]
                enabled = no
                [ble]
                \(transport == Self.daemonChooses ? "" : "transport = " + (transport ?? "emulated:" + directory))
                \(wearables)
                """)
    }

    /// Installs the app, starts the daemon (with `environment`) and connects as the app.
    func start(environment: [String: String] = [:]) throws -> ReaderConnection {
        try DaemonHarness.writeApp(
            BLEEndToEndTests.app, in: run.folder + "/apps.d", entitlements: entitlements, users: [String(getuid())])
        try run.startPlain(environment: environment)
        let connection = try run.connect(app: BLEEndToEndTests.app)
        app = connection
        return connection
    }

    func stop() {
        app?.close()
        run.stop()
        controller?.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
