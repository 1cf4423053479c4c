import BLETestKit
import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import SensorTestKit
import Testing

/// The real `sensorkitd` recording an emulated H10 with `[ble] transport = bluez`, through the
/// bluetoothd stand-in (`Tests/Fixtures/bluez/bluetoothd_standin.py`) on a private bus that the
/// daemon takes for its system bus: what `BLEEndToEndTests` checks over the emulated transport —
/// values, the clock mapping, a link loss as one deletion record, PMD STOP at shutdown — holds
/// through bluetoothd too.
@Suite(.serialized) struct BLEBlueZEndToEndTests {
    @Test(.timeLimit(.minutes(3)), .needs(BlueZDaemonRig.needs))
    func anH10IsRecordedThroughBluetoothd() throws {
        let bluez = try BlueZDaemonRig(transport: "bluez")
        defer { bluez.stop() }
        let (bus, h10) = (bluez.bus, bluez.h10)
        try bluez.startStandIn()

        let app = try bluez.startDaemon()
        let run = bluez.run
        let (startSR, anchor) = try run.timeline(app)
        for sensor in [SRSensor.heartRate, .electrocardiogram] { try run.startRecording(app, sensor) }
        #expect(run.log.contains("ble: 1 wearable(s) over bluez (hci0)"), "\(run.log)")
        let streaming = bluez.streaming
        #expect(
            IIODaemonRun.eventually(20, streaming),
            "the daemon did not start ECG through bluetoothd\n\(run.log)\n\(bus.logText())")

        let clock = LinuxSystemClock()
        let hostBase = clock.boottimeNanoseconds() + 200_000_000
        let deviceOffset = Int64(820_000_000) * 1_000_000_000 - hostBase
        let period = BLEEndToEndTests.period, perFrame = BLEEndToEndTests.samplesPerFrame
        var sent: [(time: Int64, microvolts: Int32)] = []
        var beats: [UInt8] = []
        var sample = 0
        func trueTime(_ n: Int) -> Int64 { hostBase + Int64((Double(n) * period).rounded()) }
        func feed(seconds: Double) {
            for _ in 0..<(Int(seconds * 130) / perFrame) {
                let last = sample + perFrame - 1
                let wait = trueTime(last) - clock.boottimeNanoseconds()
                if wait > 0 { usleep(useconds_t(wait / 1000)) }
                let values = (sample...last).map { Int32(($0 * 37) % 2001) - 1000 }
                if h10.sendECG(timestamp: UInt64(trueTime(last) + deviceOffset), microvolts: values) {
                    for (index, n) in (sample...last).enumerated() { sent.append((trueTime(n), values[index])) }
                }
                sample = last + 1
                if sample % (perFrame * 5) == 0 {
                    let bpm = UInt8(60 + sample / perFrame % 40)
                    if h10.notifyHeartRate([0x06, bpm]) { beats.append(bpm) }
                }
            }
        }
        feed(seconds: 2)
        // The link drops (bluetoothd sees the device go); the daemon reconnects through it.
        h10.disconnect()
        #expect(
            IIODaemonRun.eventually(20) { h10.connections >= 2 && streaming() },
            "the daemon did not reconnect through bluetoothd\n\(run.log)\n\(bus.logText())")
        let skipped = Int(Double(clock.boottimeNanoseconds() - hostBase) / period) + perFrame - sample
        sample += max(0, skipped / perFrame + 1) * perFrame
        feed(seconds: 2)

        var ecgTimes: [Int64] = [], ecgValues: [Double] = [], now: Int64 = 0
        let settled = IIODaemonRun.eventually(10) {
            guard let timeline = try? run.timeline(app) else { return false }
            now = timeline.now
            let (batches, _) = DaemonHarness.fetchAll(
                app, sensor: .electrocardiogram, from: startSR, to: now, device: "ble:" + BLEEndToEndTests.h10, timeout: 10)
            ecgTimes = batches.flatMap(\.sensorTimes)
            ecgValues = batches.flatMap { $0.columns[0] }
            return ecgTimes.count >= sent.count
        }
        #expect(settled, "ECG samples \(ecgTimes.count) of \(sent.count)\n\(run.log)")
        #expect(ecgValues == sent.map { Double($0.microvolts) })
        let worst = zip(ecgTimes, sent).map { abs($0 - (anchor + $1.time)) }.max() ?? 0
        #expect(worst <= Int64(period), "worst ECG time error \(worst) ns")

        let (heart, _) = DaemonHarness.fetchAll(
            app, sensor: .heartRate, from: startSR, to: now, device: "ble:" + BLEEndToEndTests.h10, timeout: 10)
        #expect(heart.flatMap { $0.columns[0] }.map { UInt8($0) } == beats)
        // The link loss: one systemInitiated deletion record per stream.
        for sensor in [SRSensor.heartRate, .electrocardiogram] {
            let (records, _) = DaemonHarness.fetchAll(
                app, sensor: sensor.deletionRecordSensor!, from: startSR, to: now, device: "ble:" + BLEEndToEndTests.h10,
                timeout: 10)
            let reasons = records.flatMap { $0.columns[1] }
            #expect(
                reasons.filter { $0 == Double(SRDeletionReason.systemInitiated.rawValue) }.count == 1,
                "\(sensor.rawValue): \(reasons)\n\(run.log)")
        }
        // SIGTERM: PMD STOP reaches the H10 through bluetoothd before the link closes.
        run.stopDaemon()
        #expect(h10.commands.last == [0x03, 0x00], "\(h10.commands)")
        #expect(h10.runningMeasurements.isEmpty)
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
