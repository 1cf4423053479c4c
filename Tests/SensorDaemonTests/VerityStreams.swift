import BLEBridge
import BLETestKit
import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import Testing

/// A Verity Sense's PP intervals and PPG frames as `PolarStreamsEndToEndTests` sends them, and
/// the expectations on what the daemon stored, for every transport that carries them.
enum VerityStreams {
    typealias Pulse = (bpm: UInt8, milliseconds: UInt16)

    /// One HRS measurement (bpm 70) before PPI delivers, then eight PP intervals, each followed
    /// by an HRS measurement (bpm 99) that must make no row while PPI delivers.
    static func sendPulses(_ verity: EmulatedPeripheral) -> [Pulse] {
        #expect(verity.notifyHeartRate([0x06, 70]))
        var sent: [Pulse] = []
        for index in 0..<8 {
            usleep(150_000)
            let pulse = (bpm: UInt8(60 + index), milliseconds: UInt16(800 + 10 * index))
            if verity.sendPPI(intervals: [
                .init(beatsPerMinute: pulse.bpm, milliseconds: pulse.milliseconds, errorEstimate: 6, flags: 0x06)
            ]) {
                sent.append(pulse)
            }
            verity.notifyHeartRate([0x06, 99])
        }
        return sent
    }

    /// The HRS row, then one heart-rate row per PP interval: bpm, interval and confidence exact.
    static func expectPulses(_ app: ReaderConnection, _ run: IIODaemonRun, device: String, from start: Int64, sent: [Pulse])
        throws
    {
        let e2e = BLEEndToEndTests()
        var heart = BLEEndToEndTests.Fetch(reply: WireReply())
        _ = try IIODaemonRun.eventually(10) {
            heart = e2e.fetch(app, .heartRate, device: device, from: start, to: try run.timeline(app).now)
            return heart.times.count >= 1 + sent.count
        }
        #expect(heart.columns.first == [70] + sent.map { Double($0.bpm) }, "\(heart.columns.first ?? [])\n\(run.log)")
        #expect(heart.ragged == sent.map { Double($0.milliseconds) * 0.001 })
        #expect(heart.columns.count > 2 && heart.columns[2] == [0] + sent.map { _ in 1 })
        #expect(zip(heart.times, heart.times.dropFirst()).allSatisfy { $0 < $1 })
    }

    /// PPG frames of `kinds`, compressed, drip-fed at 55 Hz on the device clock; what was accepted.
    struct PPGFeed {
        static let period = 1e9 / 55
        static let perFrame = 5
        var sent: [(time: Int64, values: [String: Double])] = []

        init(_ verity: EmulatedPeripheral, kinds: [PPGFrameKind]) {
            let clock = LinuxSystemClock()
            let hostBase = clock.boottimeNanoseconds() + 200_000_000
            let deviceOffset = Int64(820_000_000) * 1_000_000_000 - hostBase
            func trueTime(_ n: Int) -> Int64 { hostBase + Int64((Double(n) * Self.period).rounded()) }
            for (frame, kind) in kinds.enumerated() {
                let first = frame * Self.perFrame
                let last = first + Self.perFrame - 1
                let wait = trueTime(last) - clock.boottimeNanoseconds()
                if wait > 0 { usleep(useconds_t(wait / 1000)) }
                let columns = kind.columns.map(\.rawValue)
                // Channel c of sample n: 1000·c + 3n (a negative one too); the status word a 24-bit
                // value with its top bit set, which the frame's signed 24-bit reference sign-extends.
                let samples = (first...last).map { n in
                    columns.map { name -> Int32 in
                        name == "status"
                            ? Int32(0x80_0000 + n)
                            : Int32((name == "ppg1" ? -1000 : 1000) * (columns.firstIndex(of: name)! + 1) + 3 * n)
                    }
                }
                if verity.sendPPG(
                    timestamp: UInt64(trueTime(last) + deviceOffset), samples: samples, compressed: true,
                    frameType: kind.rawValue)
                {
                    for (index, n) in (first...last).enumerated() {
                        sent.append(
                            (trueTime(n), Dictionary(uniqueKeysWithValues: zip(columns, samples[index].map(Double.init)))))
                    }
                }
            }
        }

        /// Fetched through layout 15: every value exact (the status word as its 24 bits), the
        /// columns a type lacks NaN, times within one sample period of the truth and ascending.
        func expectStored(_ app: ReaderConnection, _ run: IIODaemonRun, device: String, from start: Int64, anchor: Int64)
            throws
        {
            let names = BatchLayout.photoplethysmogram.columns
            let e2e = BLEEndToEndTests()
            var ppg = BLEEndToEndTests.Fetch(reply: WireReply())
            _ = try IIODaemonRun.eventually(10) {
                ppg = e2e.fetch(app, .photoplethysmogram, device: device, from: start, to: try run.timeline(app).now)
                return ppg.times.count >= sent.count
            }
            #expect(ppg.reply.error == nil, "\(String(describing: ppg.reply.error))")
            #expect(ppg.times.count == sent.count, "PPG samples \(ppg.times.count) of \(sent.count)\n\(run.log)")
            #expect(ppg.columns.count == names.count)
            var worst: Int64 = 0
            for (index, truth) in sent.enumerated() where index < ppg.times.count && ppg.columns.count == names.count {
                for (column, name) in names.enumerated() {
                    let value = ppg.columns[column][index]
                    if var want = truth.values[name] {
                        if name == "status" { want = Double(Int64(want) & 0xFF_FFFF) }
                        #expect(value == want, "sample \(index) \(name)")
                    } else {
                        #expect(value.isNaN, "sample \(index) \(name): \(value)")
                    }
                }
                worst = max(worst, abs(ppg.times[index] - (anchor + truth.time)))
            }
            #expect(worst <= Int64(Self.period), "worst PPG time error \(worst) ns")
            #expect(zip(ppg.times, ppg.times.dropFirst()).allSatisfy { $0 < $1 })
        }
    }
}
