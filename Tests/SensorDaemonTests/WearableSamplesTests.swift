import SensorKitModel
import SensorStore
import Testing

@testable import BLEBridge
@testable import SensorDaemon

/// What a wearable's streams store: columns from their families, a batch of every kind fits its
/// descriptor, the ECG session start is a boot instant, and the identity holds no words.
@Suite struct WearableSamplesTests {
    static let device = SRDevice(
        identifier: "ble:C0:FF:EE:00:00:01", name: "Polar H10 1", model: "H10", systemName: "", systemVersion: "5.0",
        productType: "")
    static let boot = BootID("boot-0")

    func descriptor(_ sensor: SRSensor) -> SourceDescriptor {
        WearableSamples.descriptor(sensor, device: Self.device, wearable: "chest", location: nil)
    }

    @Test func eachStreamStoresItsFamilysColumns() {
        #expect(descriptor(.heartRate).columns.map(\.name) == HeartRateFamily.Stored.names)
        #expect(descriptor(.onWristState).columns.map(\.name) == WristFamily.Stored.names)
        #expect(descriptor(.electrocardiogram).columns.map(\.name) == ElectrocardiogramFamily.Stored.names)
        #expect(descriptor(.photoplethysmogram).columns.map(\.name) == ["ppg0", "ppg1", "ppg2", "ambient"])
        #expect(descriptor(.heartRate).columns[3].kind == .count(scale: 1.0 / 1024, offset: 0, unit: "s"))
        #expect(descriptor(.heartRate).columns[19].kind == .count(scale: 0.001, offset: 0, unit: "s"))
        #expect(descriptor(.accelerometer).columns.map(\.name) == MotionFamily.Stored.names)
        // Micro-g in IIO's m/s², so the motion family's ÷ g gives g.
        #expect(
            descriptor(.accelerometer).columns.allSatisfy {
                $0.kind == .count(scale: UnitConversion.standardGravity / 1_000_000, offset: 0, unit: "m/s^2")
            })
    }

    /// docs/ble.md §8: a PPG stream stores its frame type's columns. Type 0's stream keeps the
    /// identity PPG streams always had; a wide type's is a stream of its own, and each frame value
    /// lands in the column its kind names (the status word as its 24 bits).
    @Test func eachPPGFrameTypeHasAStreamOfItsOwnColumns() throws {
        let old = descriptor(.photoplethysmogram)
        #expect(old.source == Self.device.identifier + "#" + SRSensor.photoplethysmogram.rawValue)
        #expect(old.details[WearableSamples.ppgFrameDetail] == nil)
        for (kind, optical) in [(PPGFrameKind.type7, 16), (.type10, 20)] {
            let wide = WearableSamples.descriptor(
                .photoplethysmogram, device: Self.device, wearable: "chest", location: nil, ppgFrame: kind)
            let names: [String] = (0..<optical).map { "ppg\($0)" } + ["status"]
            #expect(wide.columns.map(\.name) == names)
            #expect(wide.source == old.source + "#frame\(kind.rawValue)" && wide != old)
            #expect(wide.details[WearableSamples.ppgFrameDetail] == String(kind.rawValue))
            // Values 100·v + sample; the status word sent as -1 (24 bits all set, sign-extended).
            let samples = (0..<2).map { sample in (0..<optical).map { Int32(100 * $0 + sample) } + [-1] }
            let timed = PMDStreamTimeline.TimedFrame(
                frame: PMDFrame(
                    measurementType: 1, deviceTimestamp: 0, frameType: kind.rawValue, isCompressed: true, samples: samples),
                sampleTimes: [10, 20], receiveTime: 30, uncertainty: 0)
            let batch = SourceBatch(
                boot: Self.boot, sensorTimes: [10, 20], receiveTimes: [30, 30],
                values: try #require(WearableSamples.photoplethysmogram(timed, kind: kind)), for: wide)
            let channels: [[Int64]] = (0..<optical).map { channel in [Int64(100 * channel), Int64(100 * channel + 1)] }
            let status: [Int64] = [0xFF_FFFF, 0xFF_FFFF]
            #expect(batch.columns == channels + [status])
            #expect(WearableSamples.photoplethysmogram(timed, kind: .type0) == nil)
        }
    }

    /// docs/protocol.md §5.2: `sessionStart` is SR ns. The stream stores it as a boot instant,
    /// which the store converts as it converts sample times.
    @Test func theECGSessionStartIsABootInstant() {
        let column = descriptor(.electrocardiogram).columns.last!
        #expect(column.name == ElectrocardiogramFamily.Stored.sessionStart.rawValue && column.kind == .bootInstant)
        #expect(StoreBackend.storedColumn(column) == .instant(name: "sessionStart"))
    }

    @Test func everyBatchFitsItsDescriptor() throws {
        let beat = HeartRateTimeline.Beat(
            receiveTime: 5, beatsPerMinute: 61, rrIntervals: [1000, 1010], energyExpendedKilojoules: nil)
        let heart = SourceBatch(
            boot: Self.boot, sensorTimes: [5], receiveTimes: [5], values: WearableSamples.heartRate(beat, contact: .inContact),
            for: descriptor(.heartRate))
        #expect(heart.columns.prefix(5) == [[61], [2], [2], [1000], [1010]] && heart.columns.count == 23)
        #expect(heart.columns.suffix(4) == [[-1], [-1], [-1], [-1]])
        let energy = HeartRateTimeline.Beat(receiveTime: 5, beatsPerMinute: 61, rrIntervals: [], energyExpendedKilojoules: 412)
        let withEnergy = SourceBatch(
            boot: Self.boot, sensorTimes: [5], receiveTimes: [5], values: WearableSamples.heartRate(energy, contact: nil),
            for: descriptor(.heartRate))
        #expect(withEnergy.columns.last == [412] && withEnergy.columns[1] == [1])
        // PPI: one row per interval, `rrCount` 1, the interval, its error estimate and flags.
        let pulses = [
            PulseIntervalTimeline.Beat(
                time: 4,
                interval: PMDPulseInterval(beatsPerMinute: 60, milliseconds: 1001, errorEstimateMilliseconds: 6, flags: 0x06)),
            PulseIntervalTimeline.Beat(
                time: 5,
                interval: PMDPulseInterval(beatsPerMinute: 61, milliseconds: 987, errorEstimateMilliseconds: 9, flags: 0x05)),
            PulseIntervalTimeline.Beat(
                time: 6,
                interval: PMDPulseInterval(beatsPerMinute: 62, milliseconds: 970, errorEstimateMilliseconds: 7, flags: 0x00)),
        ]
        let ppi = SourceBatch(
            boot: Self.boot, sensorTimes: [4, 5, 6], receiveTimes: [6, 6, 6], values: WearableSamples.pulseIntervals(pulses),
            for: descriptor(.heartRate))
        // Confidence: contact → high, blocker → low, contact not supported → medium.
        #expect(ppi.columns.prefix(4) == [[60, 61, 62], [2, 0, 1], [1, 1, 1], [0, 0, 0]])
        #expect(ppi.columns.suffix(4) == [[1001, 987, 970], [6, 9, 7], [6, 5, 0], [-1, -1, -1]])
        let wrist = SourceBatch(
            boot: Self.boot, sensorTimes: [5], receiveTimes: [5], values: WearableSamples.wrist(onWrist: true),
            for: descriptor(.onWristState))
        #expect(wrist.columns == [[1], [0], [0]])
        let ecgFrame = PMDStreamTimeline.TimedFrame(
            frame: PMDFrame(measurementType: 0, deviceTimestamp: 0, frameType: 0, isCompressed: false, samples: [[-12], [40]]),
            sampleTimes: [10, 20], receiveTime: 30, uncertainty: 0)
        let ecg = SourceBatch(
            boot: Self.boot, sensorTimes: [10, 20], receiveTimes: [30, 30],
            values: WearableSamples.electrocardiogram(ecgFrame, sampleRate: 130, sessionStart: 3),
            for: descriptor(.electrocardiogram))
        #expect(ecg.columns == [[-12, 40], [2, 2], [0, 0], [130, 130], [3, 3]])
        let ppgFrame = PMDStreamTimeline.TimedFrame(
            frame: PMDFrame(measurementType: 1, deviceTimestamp: 0, frameType: 0, isCompressed: false, samples: [[1, 2, 3, 4]]),
            sampleTimes: [10], receiveTime: 30, uncertainty: 0)
        let ppg = SourceBatch(
            boot: Self.boot, sensorTimes: [10], receiveTimes: [30],
            values: try #require(WearableSamples.photoplethysmogram(ppgFrame, kind: .type0)),
            for: descriptor(.photoplethysmogram))
        #expect(ppg.columns == [[1], [2], [3], [4]])
        // A frame of another type than the stream's kind is never put in its columns.
        #expect(WearableSamples.photoplethysmogram(ppgFrame, kind: .type7) == nil)
        // ACC: compressed type 1 in mG → micro-g, times FACTOR.
        let accFrame = PMDStreamTimeline.TimedFrame(
            frame: PMDFrame(
                measurementType: 2, deviceTimestamp: 0, frameType: 1, isCompressed: true,
                samples: [[-1000, 2, 981], [0, -3, 1000]]),
            sampleTimes: [10, 20], receiveTime: 30, uncertainty: 0)
        let acc = SourceBatch(
            boot: Self.boot, sensorTimes: [10, 20], receiveTimes: [30, 30],
            values: try #require(WearableSamples.acceleration(accFrame, factor: 1)), for: descriptor(.accelerometer))
        #expect(acc.columns == [[-1_000_000, 0], [2000, -3000], [981_000, 1_000_000]])
        #expect(WearableSamples.acceleration(accFrame, factor: 0.25)?[.x] == [-250_000, 0])
        // Compressed type 0 carries g.
        var inG = accFrame
        inG.frame.frameType = 0
        #expect(WearableSamples.acceleration(inG, factor: 1)?[.z] == [981_000_000, 1_000_000_000])
        #expect(WearableSamples.acceleration(ppgFrame, factor: 1) == nil)
    }

    /// A batch filled with another family's keys, or missing one of its columns, stops the
    /// driver where it happened instead of storing values under the wrong names.
    @Test func aBatchThatDoesNotFitItsDescriptorTraps() async {
        await #expect(processExitsWith: .failure) {
            _ = SourceBatch(
                boot: WearableSamplesTests.boot, sensorTimes: [5], receiveTimes: [5],
                values: WearableSamples.wrist(onWrist: true),
                for: WearableSamples.descriptor(.heartRate, device: WearableSamplesTests.device, wearable: "chest", location: nil)
            )
        }
        await #expect(processExitsWith: .failure) {
            var values = WearableSamples.wrist(onWrist: true)
            values[.crownOrientation] = nil
            _ = SourceBatch(
                boot: WearableSamplesTests.boot, sensorTimes: [5], receiveTimes: [5], values: values,
                for: WearableSamples.descriptor(
                    .onWristState, device: WearableSamplesTests.device, wearable: "chest", location: nil))
        }
    }

    /// The stream's identity keeps how it is timed as a kind; the words explaining it are shown
    /// beside it (`sensorkitctl devices`) and never stored, so rewording them starts no new stream.
    @Test func theIdentityHoldsTheTimingKindNotItsWords() {
        for (sensor, timing) in [
            (SRSensor.heartRate, SampleTiming.receipt), (.onWristState, .stateChangeReceipt),
            (.electrocardiogram, .mappedDeviceClock), (.photoplethysmogram, .mappedDeviceClock),
            (.accelerometer, .mappedDeviceClock),
        ] {
            let descriptor = descriptor(sensor)
            #expect(descriptor.details[SampleTiming.detail] == timing.rawValue)
            #expect(!descriptor.details.values.contains(timing.description))
            #expect(descriptor.shownDetails[SampleTiming.detail] == timing.description)
        }
    }
}
