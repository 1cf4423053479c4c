import SensorKitModel
import Testing

@testable import BLEBridge

/// PMD frames that overtake their stream's START answer (over bluez they come through the acquired
/// socket, the answer as a D-Bus signal): the newest `EarlyFrames.limit` go through the stream once
/// START is answered, in order and at the times they came; what is older, and all of them when the
/// START fails, is a gap (docs/ble.md, "The wearable link").
@Suite struct WearableLinkMachineEarlyFrameTests {
    typealias Driver = WearableLinkMachineTests.Driver
    typealias Machine = WearableLinkMachine
    static let second = WearableLinkMachineTests.second
    /// 13 samples at 130 Hz: one frame's device time.
    static let frameNanoseconds: Int64 = 100_000_000

    /// ECG frame type 0 number `index`: 13 samples of `index` µV, the last at device time
    /// 820 000 000 s + `index` frames.
    static func ecgFrame(_ index: Int) -> [UInt8] {
        let timestamp = UInt64(820_000_000) * 1_000_000_000 + UInt64(index) * UInt64(frameNanoseconds)
        let value = Int32(index)
        return [0x00] + (0..<8).map { UInt8(truncatingIfNeeded: timestamp >> (8 * $0)) } + [0x00]
            + (0..<13).flatMap { _ in (0..<3).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
    }

    /// Connected and ECG recorded: its START written, not answered yet.
    static func starting() -> Driver {
        var driver = Driver()
        driver.connect()
        driver.on(.recording(.electrocardiogram, on: true))
        #expect(
            Driver.writes(driver.gatt(.notification(.pmdControlPoint, value: WearableLinkMachineTests.ecgSettings))).count == 1)
        #expect(driver.machine.session?.pmd[.ecg]?.phase == .starting)
        return driver
    }

    /// Frames `indices`, one every frame's time; what the machine answered and when each came.
    static func send(_ indices: Range<Int>, to driver: inout Driver) -> (actions: [Machine.Action], times: [Int64]) {
        var actions: [Machine.Action] = []
        var times: [Int64] = []
        for index in indices {
            actions += driver.on(.gatt(.notification(.pmdData, value: ecgFrame(index))), after: frameNanoseconds)
            times.append(driver.now)
        }
        return (actions, times)
    }

    /// The ECG frames emitted: each one's sample value and receive time.
    static func frames(_ actions: [Machine.Action]) -> [(value: Int32, received: Int64)] {
        actions.compactMap { action in
            guard case .emit(.electrocardiogram, .pmd(let timed, _, _, _, _), _) = action else { return nil }
            return (timed.frame.samples.first?.first ?? -1, timed.receiveTime)
        }
    }

    @Test func framesBeforeTheStartAnswerAreRecordedInOrderOnceItComes() {
        var driver = Self.starting()
        let (early, earlyTimes) = Self.send(0..<3, to: &driver)
        #expect(Self.frames(early).isEmpty && Driver.gaps(early).isEmpty && Driver.problems(early).isEmpty)
        #expect(driver.machine.session?.early[.ecg]?.count == 3)
        var actions = driver.gatt(.notification(.pmdControlPoint, value: WearableLinkMachineTests.started))
        #expect(driver.machine.session?.pmd[.ecg]?.phase == .running)
        #expect(driver.machine.session?.early[.ecg] == nil)
        let (late, lateTimes) = Self.send(3..<5, to: &driver)
        actions += late
        // Past the clock fit's hold: every frame goes out.
        actions += driver.on(.tick, after: 5 * Self.second)
        let frames = Self.frames(actions)
        #expect(frames.map(\.value) == [0, 1, 2, 3, 4])
        #expect(frames.map(\.received) == earlyTimes + lateTimes)
        #expect(Driver.gaps(actions).isEmpty, "\(Driver.gaps(actions))")
        #expect(!Driver.problems(driver.log).contains("frame-unexpected"))
    }

    @Test func beyondTheLimitTheOldestEarlyFramesBecomeAGap() throws {
        let limit = Machine.EarlyFrames.limit
        var driver = Self.starting()
        let (early, times) = Self.send(0..<(limit + 3), to: &driver)
        #expect(Self.frames(early).isEmpty && Driver.gaps(early).isEmpty)
        var actions = driver.gatt(.notification(.pmdControlPoint, value: WearableLinkMachineTests.started))
        actions += driver.on(.tick, after: 5 * Self.second)
        // The gap first, from the first frame dropped; the first frame kept closes it.
        let gap = Machine.Action.openGap(
            .electrocardiogram, after: nil, at: times[0],
            why: "PMD ecg: 3 frames that came before the answer to its START were dropped (the newest \(limit) are kept)")
        #expect(Driver.gaps(actions).count == 1)
        let gapIndex = try #require(actions.firstIndex(of: gap), "\(actions)")
        let firstEmit = try #require(actions.firstIndex { if case .emit = $0 { true } else { false } })
        #expect(gapIndex < firstEmit)
        let frames = Self.frames(actions)
        #expect(frames.map(\.value) == (3..<(limit + 3)).map { Int32($0) })
        #expect(frames.map(\.received) == Array(times.suffix(limit)))
        #expect(Driver.problems(actions) == ["early:ecg"])
    }

    @Test func aRefusedStartDropsTheEarlyFramesInItsGap() {
        var driver = Self.starting()
        let (_, times) = Self.send(0..<3, to: &driver)
        let refused = driver.gatt(.notification(.pmdControlPoint, value: [0xF0, 0x02, 0x00, 0x03, 0x00]))
        #expect(
            refused.contains(
                .openGap(
                    .electrocardiogram, after: nil, at: times[0],
                    why:
                        "the device refused to start PMD ecg (not supported); 3 frames that came before the answer to its START were dropped"
                )), "\(refused)")
        #expect(Driver.gaps(refused).count == 1)
        #expect(driver.machine.session?.early[.ecg] == nil)
        #expect(Self.frames(refused + driver.on(.tick, after: 5 * Self.second)).isEmpty)
        // The stream is refused on this link: a frame now is unexpected, not held.
        #expect(Driver.problems(driver.gatt(.notification(.pmdData, value: Self.ecgFrame(3)))) == ["frame-unexpected"])
    }

    @Test func framesOfARunTheDeviceHadLeftGoingAreDroppedWithAGapAndTheStreamStartsAfresh() {
        var driver = Self.starting()
        _ = Self.send(0..<2, to: &driver)
        let already = driver.gatt(.notification(.pmdControlPoint, value: [0xF0, 0x02, 0x00, 0x06, 0x00]))
        #expect(Driver.writes(already) == [WearableLinkMachineTests.stopECG])
        #expect(
            Driver.gaps(already).map(\.1) == [
                "PMD ecg: 2 frames that came before the answer to its START were dropped (the device was still streaming from before; it is started afresh)"
            ])
        #expect(driver.machine.session?.early[.ecg] == nil)
    }

    @Test func aShutdownBeforeTheAnswerDropsTheEarlyFramesWithAGap() {
        var driver = Self.starting()
        let (_, times) = Self.send(0..<2, to: &driver)
        let stopping = driver.on(.stopRequested)
        #expect(Driver.writes(stopping) == [WearableLinkMachineTests.stopECG])
        #expect(
            stopping.contains(
                .openGap(
                    .electrocardiogram, after: nil, at: times[0],
                    why:
                        "PMD ecg: 2 frames that came before the answer to its START were dropped (the stream was stopped before it was answered)"
                )), "\(stopping)")
        #expect(driver.machine.session?.early[.ecg] == nil)
    }

    @Test func ppIntervalsBeforeTheStartAnswerAreRowsAtTheTimeTheyCame() {
        var driver = Driver(streams: [.heartRate])
        driver.connect(features: WearableLinkMachineTests.verityFeatures)
        driver.on(.recording(.heartRate, on: true))
        #expect(
            Driver.writes(driver.gatt(.notification(.pmdControlPoint, value: [0xF0, 0x01, 0x03, 0x00, 0x00]))) == [[0x02, 0x03]])
        let frame: [UInt8] = [0x03] + [UInt8](repeating: 0, count: 8) + [0x00] + [62, 0xC6, 0x03, 6, 0, 0x06]  // 966 ms
        #expect(WearableLinkMachineTests.emitted(driver.gatt(.notification(.pmdData, value: frame)), .heartRate).isEmpty)
        let cameAt = driver.now
        let started = driver.gatt(.notification(.pmdControlPoint, value: [0xF0, 0x02, 0x03, 0x00, 0x00]))
        let rows = WearableLinkMachineTests.emitted(started, .heartRate)
        guard case .pulseIntervals(let beats)? = rows.first, rows.count == 1 else {
            Issue.record("no PPI row: \(started)")
            return
        }
        #expect(beats.map(\.time) == [cameAt] && beats.map(\.interval.milliseconds) == [966])
        #expect(Driver.gaps(started).isEmpty)
    }
}
