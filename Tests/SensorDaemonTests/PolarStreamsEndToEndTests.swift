import BLEBridge
import BLETestKit
import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import Testing

/// The real `sensorkitd` recording the Polar streams beyond ECG from two emulated wearables
/// (docs/ble.md, "PMD"): an H10's accelerometer (compressed ACC frames, 50 Hz, on its device
/// clock) fetched in g, exactly the mG sent ÷ 1000 as the motion family maps it, within one
/// sample period of the truth; and a Verity Sense's PP intervals as heart-rate rows, with no
/// second row from its Heart Rate Service while PPI delivers.
@Suite(.serialized) struct PolarStreamsEndToEndTests {
    static let h10 = "C0:FF:EE:00:00:10"
    static let verity = "C0:FF:EE:00:00:20"
    static let period = 1e9 / 50
    static let samplesPerFrame = 25

    @Test func accAndPPIAreRecordedExactlyWithoutDuplicateHeartRateRows() throws {
        let rig = try WearableRig(
            sensors: "heartRate, accelerometer", entitlements: ["heart-rate", "motion-accelerometer"],
            wearables: """
                [wearable chest]
                address = \(Self.h10)
                streams = heartRate, accelerometer
                [wearable arm]
                address = \(Self.verity)
                streams = heartRate
                """)
        defer { rig.stop() }
        let h10 = try EmulatedPeripheral(directory: rig.directory, profile: .h10(address: Self.h10))
        let verity = try EmulatedPeripheral(directory: rig.directory, profile: .veritySense(address: Self.verity))
        let app = try rig.start()
        let run = rig.run
        let e2e = BLEEndToEndTests()
        let (startSR, anchor) = try run.timeline(app)
        for sensor in [SRSensor.heartRate, .accelerometer] { try run.startRecording(app, sensor) }
        let hrm: [UInt8] = [0x37, 0x2A]
        #expect(
            IIODaemonRun.eventually(15) {
                h10.runningMeasurements.contains(2) && verity.runningMeasurements.contains(3) && verity.isSubscribed(hrm)
            }, "the daemon did not start ACC and PPI\n\(run.log)")

        // Verity Sense: one HRS row before PPI delivers, then PP intervals; the HRS measurements
        // sent between them (bpm 99) make no row.
        let sentPulses = VerityStreams.sendPulses(verity)

        // H10: compressed ACC frames in mG on a device clock = host boot ns + offset.
        let clock = LinuxSystemClock()
        let hostBase = clock.boottimeNanoseconds() + 200_000_000
        let deviceOffset = Int64(820_000_000) * 1_000_000_000 - hostBase
        func trueTime(_ n: Int) -> Int64 { hostBase + Int64((Double(n) * Self.period).rounded()) }
        var sent: [(time: Int64, mG: [Int32])] = []
        for frame in 0..<6 {
            let first = frame * Self.samplesPerFrame
            let last = first + Self.samplesPerFrame - 1
            let wait = trueTime(last) - clock.boottimeNanoseconds()
            if wait > 0 { usleep(useconds_t(wait / 1000)) }
            let values = (first...last).map { [Int32(($0 * 37) % 2001) - 1000, Int32(-$0), 1000] }
            if h10.sendACC(timestamp: UInt64(trueTime(last) + deviceOffset), samples: values, compressed: true) {
                for (index, n) in (first...last).enumerated() { sent.append((trueTime(n), values[index])) }
            }
        }

        var acc = BLEEndToEndTests.Fetch(reply: WireReply())
        _ = try IIODaemonRun.eventually(10) {
            acc = e2e.fetch(app, .accelerometer, device: "ble:" + Self.h10, from: startSR, to: try run.timeline(app).now)
            return acc.times.count >= sent.count
        }
        #expect(acc.reply.error == nil, "\(String(describing: acc.reply.error))")
        #expect(acc.times.count == sent.count, "ACC samples \(acc.times.count) of \(sent.count)\n\(run.log)")
        // Stored as integer micro-g with scale g/10⁶ m/s²; fetched ÷ g (motion family, identity
        // mount matrix): a = (1 · scale) / g, value = 0 + a · count, bit for bit.
        let a = (1 * WearableSamples.accelerationScale) / UnitConversion.standardGravity
        var worst: Int64 = 0
        for (index, truth) in sent.enumerated() where index < acc.times.count {
            for axis in 0..<3 {
                let value = acc.columns[axis][index]
                #expect(value == 0 + a * Double(Int64(truth.mG[axis]) * 1000), "sample \(index) axis \(axis)")
                #expect(abs(value - Double(truth.mG[axis]) / 1000) < 1e-12)
            }
            worst = max(worst, abs(acc.times[index] - (anchor + truth.time)))
        }
        #expect(worst <= Int64(Self.period), "worst ACC time error \(worst) ns")
        #expect(zip(acc.times, acc.times.dropFirst()).allSatisfy { $0 < $1 })

        try VerityStreams.expectPulses(app, run, device: "ble:" + Self.verity, from: startSR, sent: sentPulses)

        // sensorkitctl devices: the PMD streams' states.
        let sources = try run.devices()
        let accSource = sources.first { $0.device == "ble:" + Self.h10 && $0.sensor == SRSensor.accelerometer.rawValue }
        #expect(accSource?.details["acc"] == "running", "\(sources)")
        let pulseSource = sources.first { $0.device == "ble:" + Self.verity && $0.sensor == SRSensor.heartRate.rawValue }
        #expect(pulseSource?.details["ppi"]?.hasPrefix("running") == true, "\(sources)")
        let chestHeart = sources.first { $0.device == "ble:" + Self.h10 && $0.sensor == SRSensor.heartRate.rawValue }
        #expect(chestHeart?.details["ppi"] == "not recorded: the device does not offer PMD ppi", "\(sources)")

        // SIGTERM: PMD STOP for ACC and PPI before the links close.
        run.stopDaemon()
        #expect(h10.commands.contains([0x03, 0x02]) && h10.runningMeasurements.isEmpty, "\(h10.commands)")
        #expect(verity.commands.contains([0x03, 0x03]) && verity.runningMeasurements.isEmpty, "\(verity.commands)")
    }

    /// docs/ble.md §2, §8: a Verity Sense switching PPG frame types mid-stream — type 0 (three
    /// optical channels and ambient), type 7 (16 channels and status), type 10 (20 channels and
    /// status), compressed frames drip-fed on its device clock at 55 Hz. Each type's samples are
    /// stored in a stream of its own columns and fetched through layout 15: every value exact
    /// (the status word as its 24 bits), the columns a type lacks NaN, times within one sample
    /// period of the truth and ascending, no sample lost and no deletion record at the switches.
    @Test(.timeLimit(.minutes(3))) func everyPPGFrameTypeIsStoredExactlyInItsOwnColumns() throws {
        let rig = try WearableRig(
            sensors: "photoplethysmogram", entitlements: ["ppg"],
            wearables: """
                [wearable arm]
                address = \(Self.verity)
                streams = photoplethysmogram
                """)
        defer { rig.stop() }
        let verity = try EmulatedPeripheral(directory: rig.directory, profile: .veritySense(address: Self.verity))
        let app = try rig.start()
        let run = rig.run
        let e2e = BLEEndToEndTests()
        let (startSR, anchor) = try run.timeline(app)
        try run.startRecording(app, .photoplethysmogram)
        #expect(
            IIODaemonRun.eventually(15) { verity.runningMeasurements.contains(1) }, "the daemon did not start PPG\n\(run.log)")

        let kinds: [PPGFrameKind] = [.type0, .type0, .type0, .type7, .type7, .type7, .type10, .type10, .type10]
        let feed = VerityStreams.PPGFeed(verity, kinds: kinds)
        #expect(feed.sent.count == kinds.count * VerityStreams.PPGFeed.perFrame)
        try feed.expectStored(app, run, device: "ble:" + Self.verity, from: startSR, anchor: anchor)

        // Three streams, one per frame type; no deletion record: switching lost nothing.
        let sources = try run.devices().filter { $0.device == "ble:" + Self.verity }
        let base = "ble:" + Self.verity + "#" + SRSensor.photoplethysmogram.rawValue
        let expected: Set<String> = [base, base + "#frame7", base + "#frame10"]
        #expect(Set(sources.map(\.source)) == expected, "\(sources)")
        let deletions = try #require(SRSensor.photoplethysmogram.deletionRecordSensor)
        let tombstones = e2e.fetch(
            app, deletions, device: "ble:" + Self.verity, from: startSR,
            to: try run.timeline(app).now)
        #expect(tombstones.times.isEmpty, "\(tombstones.times)\n\(run.log)")
        run.stopDaemon()
    }
}
