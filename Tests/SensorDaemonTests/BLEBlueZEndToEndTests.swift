import BLETestKit
import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import SensorTestKit
import SystemBus
import Testing

/// The real `sensorkitd` recording emulated wearables with `[ble] transport = bluez`, through the
/// bluetoothd stand-in on a private bus that the daemon takes for its system bus (`BlueZDaemonRig`):
/// what `BLEEndToEndTests` checks over the emulated transport — values, the clock mapping, a link
/// loss as one deletion record, PMD STOP at shutdown — holds through bluetoothd too, and through
/// what bluetoothd does to a client: a restart, a refused AcquireNotify, a pairing request, hostile
/// property values, a keyboard of the user's own it must leave alone (docs/ble.md §5a).
@Suite(.serialized) struct BLEBlueZEndToEndTests {
    static let h10Only = """
        [wearable chest]
        name = Polar H10 *
        streams = heartRate, electrocardiogram
        """
    /// The PMD Data characteristic, which carries the ECG frames.
    static let pmdData = "fb005c82-02e7-f387-1cad-8acd2d8df0c8"

    /// A rig recording one H10's heart rate and ECG, its stand-in turned by `prepare` before the daemon starts.
    static func h10Rig(_ prepare: (BlueZDaemonRig) throws -> Void = { _ in }) throws
        -> (BlueZDaemonRig, H10ECGFeed, ReaderConnection, start: Int64, anchor: Int64)
    {
        let rig = try BlueZDaemonRig(
            sensors: "heartRate, electrocardiogram", entitlements: ["heart-rate", "ecg"], wearables: h10Only)
        do {
            let h10 = try EmulatedPeripheral(directory: rig.directory, profile: .h10(address: BLEEndToEndTests.h10))
            try prepare(rig)
            let app = try rig.start()
            let (start, anchor) = try rig.run.timeline(app)
            for sensor in [SRSensor.heartRate, .electrocardiogram] { try rig.run.startRecording(app, sensor) }
            return (rig, H10ECGFeed(h10), app, start, anchor)
        } catch {
            rig.stop()
            throw error
        }
    }

    /// A Verity Sense recording heart rate (PP intervals) and PPG through bluetoothd, once the
    /// daemon has started both PMD streams and the Heart Rate Measurement.
    static func verityRig() throws -> (BlueZDaemonRig, EmulatedPeripheral, ReaderConnection, start: Int64, anchor: Int64) {
        let address = PolarStreamsEndToEndTests.verity
        let rig = try BlueZDaemonRig(
            sensors: "heartRate, photoplethysmogram", entitlements: ["heart-rate", "ppg"],
            wearables: """
                [wearable arm]
                address = \(address)
                streams = heartRate, photoplethysmogram
                """)
        do {
            let verity = try EmulatedPeripheral(directory: rig.directory, profile: .veritySense(address: address))
            let app = try rig.start()
            let (start, anchor) = try rig.run.timeline(app)
            for sensor in [SRSensor.heartRate, .photoplethysmogram] { try rig.run.startRecording(app, sensor) }
            #expect(
                IIODaemonRun.eventually(20) {
                    verity.runningMeasurements.isSuperset(of: [1, 3]) && verity.isSubscribed([0x37, 0x2A])
                }, "the daemon did not start PPG and PPI through bluetoothd\n\(rig.logs)")
            return (rig, verity, app, start, anchor)
        } catch {
            rig.stop()
            throw error
        }
    }

    /// Every ECG sample and heart rate the H10 accepted is in the store, exact and on time, with
    /// `gaps` systemInitiated deletion records per stream.
    static func expectExact(_ feed: H10ECGFeed, _ recorded: H10ECGFeed.Recorded, gaps: Int, _ logs: @autoclosure () -> String) {
        #expect(recorded.settled, "ECG samples \(recorded.ecgTimes.count) of \(feed.sent.count)\n\(logs())")
        #expect(!feed.sent.isEmpty)
        #expect(recorded.ecgValues == feed.sent.map { Double($0.microvolts) })
        #expect(recorded.worstError <= Int64(BLEEndToEndTests.period), "worst ECG time error \(recorded.worstError) ns")
        #expect(!feed.beats.isEmpty && recorded.beats == feed.beats, "\(recorded.beats) \(feed.beats)")
        for sensor in [SRSensor.heartRate, .electrocardiogram] {
            #expect(recorded.gaps[sensor] == gaps, "\(sensor.rawValue): \(recorded.gaps)\n\(logs())")
        }
    }

    @Test(.timeLimit(.minutes(3)), .needs(BlueZDaemonRig.needs))
    func anH10IsRecordedThroughBluetoothd() throws {
        let (rig, feed, app, start, anchor) = try Self.h10Rig()
        defer { rig.stop() }
        let h10 = feed.h10
        #expect(rig.run.log.contains("ble: 1 wearable(s) over bluez (hci0)"), "\(rig.run.log)")
        #expect(IIODaemonRun.eventually(20) { feed.streaming }, "the daemon did not start ECG through bluetoothd\n\(rig.logs)")
        feed.feed(seconds: 2)
        // What is in flight when the link drops is lost inside the gap: the link drops once the
        // daemon has everything sent so far, so every value can be checked.
        #expect(feed.recorded(app, rig.run, from: start, anchor: anchor).settled, "\(rig.logs)")
        // The link drops (bluetoothd sees the device go); the daemon reconnects through it.
        h10.disconnect()
        #expect(
            IIODaemonRun.eventually(20) { h10.connections >= 2 && feed.streaming },
            "the daemon did not reconnect through bluetoothd\n\(rig.logs)")
        feed.skipToNow()
        feed.feed(seconds: 2)
        // The link loss: one systemInitiated deletion record per stream.
        Self.expectExact(feed, feed.recorded(app, rig.run, from: start, anchor: anchor), gaps: 1, rig.logs)
        // The ECG frames came through the acquired socket, not as D-Bus messages.
        #expect(try rig.count("notification:fd:" + Self.pmdData) >= feed.sent.count / BLEEndToEndTests.samplesPerFrame)
        #expect(try rig.count("notification:signal:" + Self.pmdData) == 0)
        // SIGTERM: PMD STOP reaches the H10 through bluetoothd before the link closes.
        rig.run.stopDaemon()
        #expect(h10.commands.last == [0x03, 0x00], "\(h10.commands)")
        #expect(h10.runningMeasurements.isEmpty)
    }

    /// A Verity Sense through bluetoothd, as `PolarStreamsEndToEndTests` checks it over the
    /// emulated transport: its PP intervals as heart-rate rows (no second row from its HRS while
    /// PPI delivers) and compressed PPG frames of types 0, 7 and 10, every value exact and on
    /// time; PMD STOP for both at shutdown.
    @Test(.timeLimit(.minutes(3)), .needs(BlueZDaemonRig.needs))
    func aVeritySenseIsRecordedThroughBluetoothd() throws {
        let address = PolarStreamsEndToEndTests.verity
        let (rig, verity, app, start, anchor) = try Self.verityRig()
        defer { rig.stop() }
        let run = rig.run
        let ppg = VerityStreams.PPGFeed(verity, kinds: [.type0, .type0, .type0, .type7, .type7, .type10, .type10])
        let pulses = VerityStreams.sendPulses(verity)
        #expect(ppg.sent.count == 7 * VerityStreams.PPGFeed.perFrame)
        try VerityStreams.expectPulses(app, run, device: "ble:" + address, from: start, sent: pulses)
        try ppg.expectStored(app, run, device: "ble:" + address, from: start, anchor: anchor)
        #expect(try rig.count("notification:fd:" + Self.pmdData) > 0 && rig.count("notification:signal:" + Self.pmdData) == 0)
        run.stopDaemon()
        #expect(verity.commands.contains([0x03, 0x01]) && verity.commands.contains([0x03, 0x03]), "\(verity.commands)")
        #expect(verity.runningMeasurements.isEmpty)
    }

    /// PP intervals for about a second before a Verity's first PPG frame, then frames of types 0,
    /// 7 and 10: the stream of each new type is registered while the previous type's may itself
    /// still wait for the pipeline to start it, and it holds its first frames all the same
    /// (`WearableStream.sibling`), so every sample of every type is stored, exact and on time.
    @Test(.timeLimit(.minutes(3)), .needs(BlueZDaemonRig.needs))
    func aVeritysFirstFrameOfEachPPGTypeIsStoredOverBluez() throws {
        let address = PolarStreamsEndToEndTests.verity
        let (rig, verity, app, start, anchor) = try Self.verityRig()
        defer { rig.stop() }
        let run = rig.run
        let pulses = VerityStreams.sendPulses(verity)
        let ppg = VerityStreams.PPGFeed(verity, kinds: [.type0, .type0, .type0, .type7, .type7, .type10, .type10])
        #expect(ppg.sent.count == 7 * VerityStreams.PPGFeed.perFrame)
        try VerityStreams.expectPulses(app, run, device: "ble:" + address, from: start, sent: pulses)
        #expect(try rig.count("notification:fd:" + Self.pmdData) == UInt32(pulses.count + 7))
        try ppg.expectStored(app, run, device: "ble:" + address, from: start, anchor: anchor)
    }

    /// bluetoothd goes away mid-recording and comes back (a crash, `systemctl restart bluetooth`):
    /// the outage is one deletion record per stream, and the daemon finds, connects and records
    /// the H10 again through the new bluetoothd, every value exact.
    @Test(.timeLimit(.minutes(3)), .needs(BlueZDaemonRig.needs))
    func aBluetoothdRestartIsOneGapAndRecordingResumes() throws {
        let (rig, feed, app, start, anchor) = try Self.h10Rig()
        defer { rig.stop() }
        let h10 = feed.h10
        #expect(IIODaemonRun.eventually(20) { feed.streaming }, "the daemon did not start ECG\n\(rig.logs)")
        feed.feed(seconds: 2)
        // What bluetoothd has in flight when it dies is lost with it (and inside the gap); the
        // test stops it once the daemon has everything sent so far, so every value can be checked.
        #expect(feed.recorded(app, rig.run, from: start, anchor: anchor).settled, "\(rig.logs)")
        rig.stopStandIn()
        #expect(IIODaemonRun.eventually(10) { !h10.isConnected }, "the H10 kept its link without bluetoothd")
        usleep(1_000_000)
        try rig.startStandIn()
        #expect(
            IIODaemonRun.eventually(25) { h10.connections >= 2 && feed.streaming },
            "the daemon did not record again through the new bluetoothd\n\(rig.logs)")
        feed.skipToNow()
        feed.feed(seconds: 2)
        Self.expectExact(feed, feed.recorded(app, rig.run, from: start, anchor: anchor), gaps: 1, rig.logs)
        #expect(try rig.count("AcquireNotify") > 0, "the new bluetoothd served no notifications")
    }

    /// bluetoothd refuses AcquireNotify on the ECG's characteristic (BlueZ 5.66 answers InProgress
    /// when another client started notifications): the daemon subscribes with StartNotify and the
    /// frames arrive as PropertiesChanged, every sample still exact.
    @Test(.timeLimit(.minutes(3)), .needs(BlueZDaemonRig.needs))
    func aRefusedAcquireNotifyFallsBackToStartNotify() throws {
        let (rig, feed, app, start, anchor) = try Self.h10Rig { rig in
            try rig.knob("RefuseAcquireNotify", [.string(Self.pmdData), .string("org.bluez.Error.InProgress")])
        }
        defer { rig.stop() }
        #expect(IIODaemonRun.eventually(20) { feed.streaming }, "the daemon did not start ECG\n\(rig.logs)")
        feed.feed(seconds: 2)
        Self.expectExact(feed, feed.recorded(app, rig.run, from: start, anchor: anchor), gaps: 0, rig.logs)
        #expect(
            try rig.count("AcquireNotify:" + Self.pmdData) == 1 && rig.count("StartNotify:" + Self.pmdData) == 1, "\(rig.logs)")
        #expect(
            try rig.count("notification:signal:" + Self.pmdData) >= feed.sent.count / BLEEndToEndTests.samplesPerFrame,
            "the ECG frames did not come through StartNotify")
    }

    /// The H10 wants bonding (bluetoothd answers NotPermitted "Not paired"): the daemon pairs it
    /// once through bluetoothd, which asks the daemon's NoInputNoOutput agent; recording goes on
    /// exactly, and `sensorkitctl devices` says who paired it.
    @Test(.timeLimit(.minutes(3)), .needs(BlueZDaemonRig.needs))
    func aWearableThatWantsBondingIsPairedByTheDaemon() throws {
        let (rig, feed, app, start, anchor) = try Self.h10Rig { rig in
            try rig.knob("RequirePairing", [.string(BLEEndToEndTests.h10)])
        }
        defer { rig.stop() }
        #expect(IIODaemonRun.eventually(20) { feed.streaming }, "the daemon did not start ECG\n\(rig.logs)")
        feed.feed(seconds: 2)
        Self.expectExact(feed, feed.recorded(app, rig.run, from: start, anchor: anchor), gaps: 0, rig.logs)
        #expect(try rig.count("RegisterAgent:NoInputNoOutput") == 1)
        #expect(try rig.count("Pair:" + BLEEndToEndTests.h10) == 1 && rig.count("agent confirmed") == 1, "\(rig.logs)")
        let line = "paired by sensorkitd through bluetoothd (agent NoInputNoOutput)"
        var sources: [WireSource] = []
        let shown = try IIODaemonRun.eventually(10) {
            sources = try rig.run.devices().filter { $0.device == "ble:" + BLEEndToEndTests.h10 }
            return !sources.isEmpty && sources.allSatisfy { $0.details["pairing"] == line }
        }
        #expect(shown, "\(sources)")
        #expect(rig.run.log.contains("was paired through bluetoothd (agent NoInputNoOutput)"), "\(rig.run.log)")
    }

    /// Property values no bluetoothd would send arrive mid-recording: the daemon records on; when
    /// the link drops it discovers again among the hostile objects, logs what it left out (the
    /// object tree is read, and its problems reported, at discovery), and reconnects the H10; every
    /// sample exact, the drop one gap.
    @Test(.timeLimit(.minutes(3)), .needs(BlueZDaemonRig.needs))
    func hostilePropertiesDoNotStopTheRecording() throws {
        let (rig, feed, app, start, anchor) = try Self.h10Rig()
        defer { rig.stop() }
        #expect(IIODaemonRun.eventually(20) { feed.streaming }, "the daemon did not start ECG\n\(rig.logs)")
        feed.feed(seconds: 1)
        try rig.knob("Hostile")
        feed.feed(seconds: 1)
        #expect(feed.recorded(app, rig.run, from: start, anchor: anchor).settled, "\(rig.logs)")
        feed.h10.disconnect()
        #expect(
            IIODaemonRun.eventually(20) { feed.h10.connections >= 2 && feed.streaming },
            "the daemon did not reconnect among hostile objects\n\(rig.logs)")
        feed.skipToNow()
        feed.feed(seconds: 1)
        Self.expectExact(feed, feed.recorded(app, rig.run, from: start, anchor: anchor), gaps: 1, rig.logs)
        let logged = IIODaemonRun.eventually(5) {
            let log = rig.run.log
            return log.contains("Device1 without a valid Address") && log.contains("MTU 65535")
        }
        #expect(logged, "\(rig.run.log)")
        // Hostile text is not logged raw: no line of it starts with the name's tail.
        #expect(!rig.run.log.contains("\n" + String(repeating: "x", count: 100)))
    }

    /// A keyboard the user paired, which bluetoothd keeps connected: the daemon records the H10
    /// beside it and never connects, disconnects or pairs the keyboard, not even at shutdown.
    @Test(.timeLimit(.minutes(3)), .needs(BlueZDaemonRig.needs))
    func aPairedKeyboardIsLeftAlone() throws {
        let keyboard = "DC:2C:26:00:00:01"
        let (rig, feed, app, start, anchor) = try Self.h10Rig { rig in
            try rig.knob("AddPairedKeyboard", [.string(keyboard), .string("Keyboard K380")])
        }
        defer { rig.stop() }
        #expect(IIODaemonRun.eventually(20) { feed.streaming }, "the daemon did not start ECG\n\(rig.logs)")
        feed.feed(seconds: 1)
        Self.expectExact(feed, feed.recorded(app, rig.run, from: start, anchor: anchor), gaps: 0, rig.logs)
        rig.run.stopDaemon()
        // The counters count: the H10 was connected and disconnected by the daemon.
        #expect(try rig.count("Connect:" + BLEEndToEndTests.h10) >= 1)
        for call in ["Connect", "Disconnect", "Pair"] {
            #expect(try rig.count(call + ":" + keyboard) == 0, "\(call) on the keyboard\n\(rig.logs)")
        }
    }

    /// Whether `name` has an owner on the bus at `address` (`busctl status`).
    static func owned(_ name: String, on address: String) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/busctl")
        process.arguments = ["--address=" + address, "status", name]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}
