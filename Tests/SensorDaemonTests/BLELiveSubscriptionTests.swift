import BLETestKit
import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import Synchronization
import Testing

/// A live subscriber of the real `sensorkitd` in the lab profile (docs/live.md) watching an H10
/// on the emulated transport, driven by this test: every heart rate with its RR intervals and
/// every ECG sample arrives once, in order, with the values sent, and bit for bit what a later
/// fetch of the same range returns.
@Suite struct BLELiveSubscriptionTests {
    static let h10 = "C0:FF:EE:00:00:10"
    static let period = 1e9 / 130
    static let samplesPerFrame = 13

    /// What one subscription received, merged in arrival order.
    final class Received: Sendable {
        let samples = Mutex(BLEEndToEndTests.Fetch(reply: WireReply()))
        let ended = Mutex<WireReply?>(nil)
        var count: Int { samples.withLock { $0.times.count } }
    }

    static func subscribe(_ connection: ReaderConnection, _ sensor: SRSensor) -> Received {
        let received = Received()
        _ = connection.subscribe(sensor: sensor, device: "ble:" + h10) { delivery in
            switch delivery {
            case .batch(let batch):
                received.samples.withLock { merged in
                    merged.times += batch.sensorTimes
                    merged.ragged += batch.ragged
                    if merged.columns.isEmpty {
                        merged.columns = batch.columns
                    } else {
                        for index in merged.columns.indices { merged.columns[index] += batch.columns[index] }
                    }
                }
            case .ended(let reply): received.ended.withLock { $0 = reply }
            default: break
            }
        }
        return received
    }

    @Test func aLabSubscriberGetsEveryHeartRateAndECGSampleOnceInOrderExact() throws {
        let rig = try WearableRig(
            sensors: "heartRate, electrocardiogram", entitlements: ["heart-rate", "ecg"],
            wearables: """
                [wearable chest]
                address = \(Self.h10)
                streams = heartRate, electrocardiogram
                """)
        defer { rig.stop() }
        let h10 = try EmulatedPeripheral(directory: rig.directory, profile: .h10(address: Self.h10))
        let app = try rig.start()
        let run = rig.run
        let (startSR, _) = try run.timeline(app)
        for sensor in [SRSensor.heartRate, .electrocardiogram] { try run.startRecording(app, sensor) }
        #expect(
            IIODaemonRun.eventually(15) { h10.runningMeasurements.contains(0) && h10.isSubscribed([0x37, 0x2A]) },
            "the daemon did not connect and start ECG\n\(run.log)")
        let heart = Self.subscribe(app, .heartRate)
        let ecg = Self.subscribe(app, .electrocardiogram)
        _ = app.call(.status)  // requests are handled in order: both subscriptions are in place

        // 4 s of ECG in 13-sample frames on time (device ns since 2000 = host boot ns + offset),
        // and a heart-rate measurement every 0.5 s, every third without RR intervals.
        let clock = LinuxSystemClock()
        let hostBase = clock.boottimeNanoseconds() + 200_000_000
        let deviceOffset = Int64(820_000_000) * 1_000_000_000 - hostBase
        func trueTime(_ n: Int) -> Int64 { hostBase + Int64((Double(n) * Self.period).rounded()) }
        var sentECG: [Int32] = []
        var sentBeats: [(bpm: UInt8, rr: [UInt16])] = []
        for frame in 0..<(4 * 130 / Self.samplesPerFrame) {
            let first = frame * Self.samplesPerFrame
            let last = first + Self.samplesPerFrame - 1
            let wait = trueTime(last) - clock.boottimeNanoseconds()
            if wait > 0 { usleep(useconds_t(wait / 1000)) }
            let values = (first...last).map { Int32(($0 * 37) % 2001) - 1000 }
            #expect(h10.sendECG(timestamp: UInt64(trueTime(last) + deviceOffset), microvolts: values))
            sentECG += values
            if frame % 5 == 4 {
                let beat = sentBeats.count
                let rr: [UInt16] = beat % 3 == 2 ? [] : [UInt16(900 + beat), UInt16(910 + beat)]
                var value: [UInt8] = [(rr.isEmpty ? 0 : 0x10) | 3 << 1, UInt8(60 + beat)]
                for interval in rr { value += [UInt8(interval & 0xFF), UInt8(interval >> 8)] }
                #expect(h10.notifyHeartRate(value))
                sentBeats.append((UInt8(60 + beat), rr))
            }
        }
        #expect(
            IIODaemonRun.eventually(10) { ecg.count >= sentECG.count && heart.count >= sentBeats.count },
            "ECG \(ecg.count) of \(sentECG.count), heart rate \(heart.count) of \(sentBeats.count)\n\(run.log)")
        #expect(ecg.ended.withLock { $0 } == nil && heart.ended.withLock { $0 } == nil)

        let live = ecg.samples.withLock { $0 }
        #expect(live.times.count == sentECG.count)
        #expect(live.columns.first?.map { Int32($0) } == sentECG)
        #expect(zip(live.times, live.times.dropFirst()).allSatisfy { $0 < $1 })
        let beats = heart.samples.withLock { $0 }
        #expect(beats.columns.first?.map { UInt8($0) } == sentBeats.map(\.bpm))
        #expect(beats.ragged == sentBeats.flatMap(\.rr).map { Double($0) / 1024 })
        #expect(zip(beats.times, beats.times.dropFirst()).allSatisfy { $0 < $1 })

        // What was sent live is what the store gives back, once committed (within half a second).
        let e2e = BLEEndToEndTests()
        var storedECG = BLEEndToEndTests.Fetch(reply: WireReply())
        var storedHeart = storedECG
        _ = try IIODaemonRun.eventually(10) {
            let now = try run.timeline(app).now
            storedECG = e2e.fetch(app, .electrocardiogram, device: "ble:" + Self.h10, from: startSR, to: now)
            storedHeart = e2e.fetch(app, .heartRate, device: "ble:" + Self.h10, from: startSR, to: now)
            return storedECG.times.count >= live.times.count && storedHeart.times.count >= beats.times.count
        }
        #expect(storedECG.times == live.times, "fetched \(storedECG.times.count), live \(live.times.count)")
        #expect(storedECG.columns == live.columns)
        #expect(storedHeart.times == beats.times, "fetched \(storedHeart.times.count), live \(beats.times.count)")
        #expect(storedHeart.columns == beats.columns && storedHeart.ragged == beats.ragged)
    }
}
