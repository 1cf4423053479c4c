import SensorKitModel
import Testing

@testable import BLEBridge

/// The Polar streams beside ECG in the link machine: ACC started with the preferred settings
/// and its FACTOR, refused without harm to the link; PPI started beside HRS and winning over it
/// while it delivers; the wide PPG frame types delivered as samples, not gaps (docs/ble.md, "PMD").
extension WearableLinkMachineTests {
    /// ACC's settings as an H10 offers them: 25, 50, 100, 200 Hz; 12 or 16 bit; ±2, 4, 8 g.
    static let accSettings: [UInt8] =
        [0xF0, 0x01, 0x02, 0x00, 0x00]
        + [0x00, 0x04, 0x19, 0x00, 0x32, 0x00, 0x64, 0x00, 0xC8, 0x00, 0x01, 0x02, 0x0C, 0x00, 0x10, 0x00]
        + [0x02, 0x03, 0x02, 0x00, 0x04, 0x00, 0x08, 0x00]
    /// START ACC at 50 Hz, the widest resolution (16), the first range (±2 g).
    static let startACC: [UInt8] = [0x02, 0x02, 0x00, 0x01, 0x32, 0x00, 0x01, 0x01, 0x10, 0x00, 0x02, 0x01, 0x02, 0x00]
    /// ECG, ACC and PPI in the feature bitmap (bits 0, 2, 3); PPG and PPI (bits 1, 3).
    static let h10Features: [UInt8] = [0x0F, 0x05]
    static let verityFeatures: [UInt8] = [0x0F, 0x0A]

    /// A START ACC response naming FACTOR `factor` (settings TLV 5, float32).
    static func accStarted(factor: Float) -> [UInt8] {
        let bits = factor.bitPattern
        return [0xF0, 0x02, 0x02, 0x00, 0x00, 0x05, 0x01] + (0..<4).map { UInt8(truncatingIfNeeded: bits >> (8 * $0)) }
    }

    static func emitted(_ actions: [Machine.Action], _ sensor: SRSensor) -> [Machine.Sample] {
        actions.compactMap { if case .emit(sensor, let sample, _) = $0 { sample } else { nil } }
    }

    @Test func accIsStartedWithThePreferredSettingsAndARefusalLeavesTheOtherStreamsRunning() {
        var driver = Driver(streams: [.heartRate, .electrocardiogram, .accelerometer])
        driver.connect(features: Self.h10Features)
        #expect(Driver.writes(driver.on(.recording(.electrocardiogram, on: true))) == [Self.getECGSettings])
        driver.gatt(.notification(.pmdControlPoint, value: Self.ecgSettings))
        driver.gatt(.notification(.pmdControlPoint, value: Self.started))
        #expect(Driver.writes(driver.on(.recording(.accelerometer, on: true))) == [[0x01, 0x02]])
        #expect(Driver.writes(driver.gatt(.notification(.pmdControlPoint, value: Self.accSettings))) == [Self.startACC])
        let refused = driver.gatt(.notification(.pmdControlPoint, value: [0xF0, 0x02, 0x02, 0x03, 0x00]))
        #expect(Driver.gaps(refused).map(\.0) == [.accelerometer])
        #expect(!refused.contains(.disconnect))
        #expect(driver.machine.phase == .ready)
        #expect(driver.machine.session?.pmd[.ecg]?.phase == .running)
        #expect(driver.machine.session?.pmd[.acc]?.phase == .refused)
        #expect(
            Driver.lastStatus(refused)?[.accelerometer]?["acc"]
                == "not recorded: the device refused to start PMD acc (not supported)")
        #expect(Driver.lastStatus(refused)?[.electrocardiogram]?["ecg"] == "running")
        // Heart rate goes on; ACC is not asked for again on this link.
        #expect(Self.emitted(driver.gatt(.notification(.heartRateMeasurement, value: [0x06, 72])), .heartRate).count == 1)
        #expect(Driver.writes(driver.on(.tick, after: 10 * Self.second)).isEmpty)
    }

    @Test func accFramesCarryTheStartResponsesFactorIntoTheirMicroG() throws {
        var driver = Driver(streams: [.accelerometer])
        driver.connect(features: Self.h10Features)
        driver.on(.recording(.accelerometer, on: true))
        driver.gatt(.notification(.pmdControlPoint, value: Self.accSettings))
        driver.gatt(.notification(.pmdControlPoint, value: Self.accStarted(factor: 0.5)))
        #expect(driver.machine.session?.pmd[.acc]?.phase == .running)
        #expect(driver.machine.factors[.acc] == 0.5)
        #expect(driver.machine.sampleRates[.acc] == 50)
        // Raw type 1 frames (int16 mG), 25 samples each at 50 Hz, every half second.
        var device: UInt64 = 800_000_000_000_000_000
        var samples: [Machine.Sample] = []
        for frame in 0..<8 {
            device += 500_000_000
            let values = (0..<25).map { [Int16(frame * 25 + $0), -1000, Int16(-frame)] }
            let bytes =
                [0x02] + (0..<8).map { UInt8(truncatingIfNeeded: device >> (8 * $0)) } + [0x01]
                + values.flatMap { $0.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] } }
            samples += Self.emitted(driver.gatt(.notification(.pmdData, value: bytes)), .accelerometer)
            samples += Self.emitted(driver.on(.tick, after: 500_000_000), .accelerometer)
        }
        // Ending the stake releases what the clock fit still holds.
        samples += Self.emitted(driver.on(.recording(.accelerometer, on: false)), .accelerometer)
        #expect(samples.count == 8)
        let first = try #require(samples.first)
        guard case .pmd(let timed, let kind, let rate, _, let factor) = first else {
            Issue.record("not a PMD sample: \(first)")
            return
        }
        #expect(kind.sensor == .accelerometer && rate == 50 && factor == 0.5)
        let values = try #require(WearableSamples.acceleration(timed, factor: factor))
        #expect(values[.x] == (0..<25).map { Int64($0) * 500 })
        #expect(values[.y] == .init(repeating: -500_000, count: 25))
    }

    @Test func anUnusableFactorRefusesACCAndStopsItOnTheDevice() {
        for response in [
            Self.accStarted(factor: .nan), Self.accStarted(factor: -1), Self.accStarted(factor: 1e9),
            [0xF0, 0x02, 0x02, 0x00, 0x00, 0x7F, 0x01],
        ] {
            var driver = Driver(streams: [.accelerometer])
            driver.connect(features: Self.h10Features)
            driver.on(.recording(.accelerometer, on: true))
            driver.gatt(.notification(.pmdControlPoint, value: Self.accSettings))
            let answered = driver.gatt(.notification(.pmdControlPoint, value: response))
            #expect(Driver.writes(answered) == [[0x03, 0x02]], "\(response)")
            #expect(Driver.gaps(answered).map(\.0) == [.accelerometer])
            #expect(Driver.problems(answered) == ["factor:acc"])
            #expect(driver.machine.session?.pmd[.acc]?.phase == .refused)
            // The STOP's answer does not start it again.
            #expect(Driver.writes(driver.gatt(.notification(.pmdControlPoint, value: [0xF0, 0x03, 0x02, 0x00, 0x00]))).isEmpty)
        }
    }

    @Test func ppiStartsWithHeartRateAndWinsOverHRSWhileItDelivers() throws {
        var driver = Driver(streams: [.heartRate])
        driver.connect(features: Self.verityFeatures)
        // Heart rate recorded: PPI is asked for beside HRS; it has no settings.
        #expect(Driver.writes(driver.on(.recording(.heartRate, on: true))) == [[0x01, 0x03]])
        #expect(
            Driver.writes(driver.gatt(.notification(.pmdControlPoint, value: [0xF0, 0x01, 0x03, 0x00, 0x00]))) == [[0x02, 0x03]])
        let started = driver.gatt(.notification(.pmdControlPoint, value: [0xF0, 0x02, 0x03, 0x00, 0x00]))
        #expect(driver.machine.session?.pmd[.ppi]?.phase == .running)
        #expect(Driver.lastStatus(started)?[.heartRate]?["ppi"] == "running (no intervals yet; heart rate from HRS)")
        // Until PPI delivers, HRS is the heart rate.
        #expect(Self.emitted(driver.gatt(.notification(.heartRateMeasurement, value: [0x06, 70])), .heartRate).count == 1)
        let hrsAt = driver.now
        // A PPI frame, 1 s later: three intervals, the first reaching back before the HRS row.
        let intervals: [(UInt8, UInt16)] = [(60, 1000), (62, 970), (64, 940)]
        let frame =
            [0x03] + [UInt8](repeating: 0, count: 8) + [0x00]
            + intervals.flatMap { [$0.0, UInt8($0.1 & 0xFF), UInt8($0.1 >> 8), 6, 0, 0x06] }
        let delivered = driver.on(.gatt(.notification(.pmdData, value: frame)), after: Self.second)
        let rows = Self.emitted(delivered, .heartRate)
        guard case .pulseIntervals(let beats)? = rows.first, rows.count == 1 else {
            Issue.record("no PPI rows: \(delivered)")
            return
        }
        // The last interval ends at receipt, each earlier one where the next began; none before the HRS row.
        #expect(beats.map(\.time) == [driver.now - 940_000_000, driver.now])
        #expect(beats.allSatisfy { $0.time > hrsAt })
        #expect(beats.map(\.interval.milliseconds) == [970, 940])
        #expect(Driver.problems(delivered) == ["ppi-overlap"])
        #expect(Driver.lastStatus(delivered)?[.heartRate]?["ppi"] == "running (heart rate from PPI)")
        // While PPI delivers, an HRS measurement is no second row (wrist state still comes from it).
        #expect(Self.emitted(driver.gatt(.notification(.heartRateMeasurement, value: [0x06, 71])), .heartRate).isEmpty)
        // PPI falls silent: after `pulseFreshness`, HRS is the heart rate again.
        driver.on(.tick, after: Machine.pulseFreshness + 1)
        #expect(Self.emitted(driver.gatt(.notification(.heartRateMeasurement, value: [0x06, 72])), .heartRate).count == 1)
    }

    @Test func aDeviceWithoutPPIRecordsHeartRateFromHRSWithoutAGapOrAComplaint() {
        var driver = Driver(streams: [.heartRate, .electrocardiogram])
        driver.connect(features: Self.h10Features)
        let staked = driver.on(.recording(.heartRate, on: true))
        #expect(Driver.writes(staked).isEmpty && Driver.gaps(staked).isEmpty && Driver.problems(staked).isEmpty)
        #expect(Driver.lastStatus(staked)?[.heartRate]?["ppi"] == "not recorded: the device does not offer PMD ppi")
        #expect(Self.emitted(driver.gatt(.notification(.heartRateMeasurement, value: [0x06, 72])), .heartRate).count == 1)
        // A strap without PMD at all, recording heart rate only, is no PMD problem.
        var strap = Driver(streams: [.heartRate])
        let setup = strap.connect(database: [.heartRateMeasurement: [.notify]])
        #expect(!Driver.problems(setup).contains("no-pmd"))
        // A refused PPI START is no gap either.
        var verity = Driver(streams: [.heartRate])
        verity.connect(features: Self.verityFeatures)
        verity.on(.recording(.heartRate, on: true))
        verity.gatt(.notification(.pmdControlPoint, value: [0xF0, 0x01, 0x03, 0x00, 0x00]))
        let refused = verity.gatt(.notification(.pmdControlPoint, value: [0xF0, 0x02, 0x03, 0x03, 0x00]))
        #expect(Driver.gaps(refused).isEmpty && verity.machine.session?.pmd[.ppi]?.phase == .refused)
    }

    @Test func widePPGFrameTypesAreDeliveredAsSamplesNotGaps() {
        var driver = Driver(streams: [.photoplethysmogram])
        driver.connect(features: Self.verityFeatures)
        driver.on(.recording(.photoplethysmogram, on: true))
        let settings: [UInt8] = [0xF0, 0x01, 0x01, 0x00, 0x00, 0x00, 0x01, 0x37, 0x00, 0x01, 0x01, 0x16, 0x00, 0x04, 0x01, 0x04]
        driver.gatt(.notification(.pmdControlPoint, value: settings))
        driver.gatt(.notification(.pmdControlPoint, value: [0xF0, 0x02, 0x01, 0x00, 0x00]))
        #expect(driver.machine.session?.pmd[.ppg]?.phase == .running)
        // Compressed types 7 and 10: a reference sample of 17 or 21 values, no delta blocks.
        var device: UInt64 = 800_000_000_000_000_000
        var actions: [Machine.Action] = []
        let types: [(frameType: UInt8, values: Int)] = [(7, 17), (7, 17), (10, 21), (10, 21)]
        for (index, type) in types.enumerated() {
            device += 20_000_000
            let bytes =
                [0x01] + (0..<8).map { UInt8(truncatingIfNeeded: device >> (8 * $0)) } + [0x80 | type.frameType]
                + (0..<type.values).flatMap { [UInt8(index + $0), 0, 0] }
            actions += driver.on(.gatt(.notification(.pmdData, value: bytes)), after: 20_000_000)
        }
        actions += driver.on(.tick, after: 5 * Self.second)
        let frames = Self.emitted(actions, .photoplethysmogram).compactMap { sample -> PMDFrame? in
            if case .pmd(let timed, _, _, _, _) = sample { timed.frame } else { nil }
        }
        #expect(frames.map(\.frameType) == types.map(\.frameType))
        for (index, frame) in frames.enumerated() {
            #expect(frame.samples == [(0..<types[index].values).map { Int32(index + $0) }])
        }
        #expect(Driver.gaps(actions).isEmpty, "\(Driver.gaps(actions))")
    }
}
