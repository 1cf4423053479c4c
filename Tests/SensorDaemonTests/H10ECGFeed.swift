import BLETestKit
import Foundation
import Glibc
import SensorKit
import SensorSimulation
import SensorSystem

/// ECG frames and heart rates drip-fed to an emulated H10 at 130 Hz on its device clock (host
/// boot ns + a fixed offset), remembering what the peripheral accepted; and the daemon's answer
/// checked against it: every µV exact, each within one sample period of the truth.
final class H10ECGFeed {
    let h10: EmulatedPeripheral
    private(set) var sent: [(time: Int64, microvolts: Int32)] = []
    private(set) var beats: [UInt8] = []
    private let clock = LinuxSystemClock()
    private let hostBase: Int64
    private let deviceOffset: Int64
    private var sample = 0
    private let period = BLEEndToEndTests.period
    private let perFrame = BLEEndToEndTests.samplesPerFrame

    init(_ h10: EmulatedPeripheral) {
        self.h10 = h10
        hostBase = clock.boottimeNanoseconds() + 200_000_000
        deviceOffset = Int64(820_000_000) * 1_000_000_000 - hostBase
    }

    /// Whether the daemon has started ECG and subscribed to the Heart Rate Measurement.
    var streaming: Bool { h10.runningMeasurements.contains(0) && h10.isSubscribed([0x37, 0x2A]) }

    private func trueTime(_ n: Int) -> Int64 { hostBase + Int64((Double(n) * period).rounded()) }

    /// `seconds` of frames, each sent when its last sample is due; a heart rate every fifth frame.
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

    /// After an outage: the samples due while nothing was sent are skipped, as a real strap's are.
    func skipToNow() {
        let skipped = Int(Double(clock.boottimeNanoseconds() - hostBase) / period) + perFrame - sample
        sample += max(0, skipped / perFrame + 1) * perFrame
    }

    /// What the daemon recorded of the H10 from `start` on, once every sent sample is in (or 10 s).
    struct Recorded {
        var ecgTimes: [Int64] = []
        var ecgValues: [Double] = []
        var beats: [UInt8] = []
        /// systemInitiated deletion records per stream.
        var gaps: [SRSensor: Int] = [:]
        var settled = false
        /// The worst distance of an ECG sample's time from the truth.
        var worstError: Int64 = 0
    }

    func recorded(_ app: ReaderConnection, _ run: IIODaemonRun, from start: Int64, anchor: Int64) -> Recorded {
        var result = Recorded()
        var now: Int64 = 0
        let device = "ble:" + h10.profile.address
        result.settled = IIODaemonRun.eventually(10) {
            guard let timeline = try? run.timeline(app) else { return false }
            now = timeline.now
            let (batches, _) = DaemonHarness.fetchAll(
                app, sensor: .electrocardiogram, from: start, to: now, device: device, timeout: 10)
            result.ecgTimes = batches.flatMap(\.sensorTimes)
            result.ecgValues = batches.flatMap { $0.columns[0] }
            // The heart rates are a stream of their own, stored on their own schedule: the last
            // one may come after the last ECG frame is in.
            let (heart, _) = DaemonHarness.fetchAll(app, sensor: .heartRate, from: start, to: now, device: device, timeout: 10)
            result.beats = heart.flatMap { $0.columns[0] }.map { UInt8($0) }
            return result.ecgTimes.count >= sent.count && result.beats.count >= beats.count
        }
        result.worstError = zip(result.ecgTimes, sent).map { abs($0 - (anchor + $1.time)) }.max() ?? 0
        for sensor in [SRSensor.heartRate, .electrocardiogram] {
            let (records, _) = DaemonHarness.fetchAll(
                app, sensor: sensor.deletionRecordSensor!, from: start, to: now, device: device, timeout: 10)
            result.gaps[sensor] =
                records.flatMap { $0.columns[1] }
                .filter { $0 == Double(SRDeletionReason.systemInitiated.rawValue) }.count
        }
        return result
    }
}
