import SensorSimulation
import Testing

@testable import BLEBridge

/// What a hostile or broken wearable sends, against the pure pieces that contain it
/// (docs/ble.md, "A hostile wearable"): frames claiming more samples than their rate and time
/// allow, floods, a clock at the wrong speed, a control-point response that never ends.
@Suite struct HostileWearableTests {
    static let period = Int64(1e9 / 130)

    /// An ECG frame type 0 with `count` samples, stamped `timestamp` (device ns since 2000).
    static func ecgFrame(_ timestamp: UInt64, count: Int) -> [UInt8] {
        [0x00] + (0..<8).map { UInt8(truncatingIfNeeded: timestamp >> (8 * $0)) } + [0x00]
            + [UInt8](repeating: 0, count: 3 * count).enumerated().map { $0.offset % 3 == 0 ? 1 : 0 }
    }

    /// A delta-compressed ECG frame whose blocks have width 0: two bytes claim 255 samples.
    static func widthZeroFrame(_ timestamp: UInt64, blocks: Int) -> [UInt8] {
        [0x00] + (0..<8).map { UInt8(truncatingIfNeeded: timestamp >> (8 * $0)) } + [0x80, 1, 0, 0]
            + [UInt8](repeating: 0, count: 2 * blocks).enumerated().map { $0.offset % 2 == 0 ? 0 : 255 }
    }

    static func reasons(_ events: [PMDStreamTimeline.Event]) -> [PMDStreamTimeline.GapReason] {
        events.compactMap { if case .gap(let gap) = $0 { gap.reason } else { nil } }
    }

    static func samples(_ events: [PMDStreamTimeline.Event]) -> Int {
        events.reduce(0) { if case .frame(let frame) = $1 { $0 + frame.sampleTimes.count } else { $0 } }
    }

    @Test func aWidthZeroDeltaFrameIsRefusedBeforeItsSamplesAreBuilt() throws {
        let frame = Self.widthZeroFrame(820_000_000_000_000_000, blocks: 115)  // 243 bytes: one notification at MTU 247
        #expect(frame.count == 243)
        // Unbounded, the decoder would build 29,326 samples from it.
        #expect(try PMDFrame(decoding: frame).samples.count == 115 * 255 + 1)
        #expect(throws: PMDFrame.DecodeError.tooManySamples(limit: 260)) { try PMDFrame(decoding: frame, sampleLimit: 260) }
        var timeline = PMDStreamTimeline(measurementType: .ecg, sampleRateHz: 130, holdNanoseconds: 0)
        #expect(timeline.maximumFrameSamples == 260)
        let events = timeline.receive(frame, at: 5_000_000_000)
        #expect(Self.reasons(events) == [.implausibleFrame])
        #expect(Self.samples(events) == 0)
        #expect(timeline.counters.implausible == 1)
    }

    @Test func aFrameHoldingMoreSamplesThanItsDeviceTimeIsRefused() {
        var timeline = PMDStreamTimeline(measurementType: .ecg, sampleRateHz: 130, holdNanoseconds: 0)
        let start: UInt64 = 820_000_000_000_000_000
        _ = timeline.receive(Self.ecgFrame(start, count: 13), at: 1_000_000_000)
        // 100 ms of device time later, 200 samples (1.5 s at 130 Hz): not what the device measured.
        let events = timeline.receive(Self.ecgFrame(start + 100_000_000, count: 200), at: 1_100_000_000)
        #expect(Self.reasons(events) == [.implausibleFrame])
        #expect(timeline.counters.implausible == 1)
        // The next honest frame goes through (its gap for the frame dropped before it).
        let next = timeline.receive(Self.ecgFrame(start + 200_000_000, count: 13), at: 1_200_000_000)
        #expect(Self.samples(next) == 0 || Self.samples(next) == 13)
    }

    @Test func samplesArrivingFasterThanTheRateAreDroppedAsGaps() {
        var timeline = PMDStreamTimeline(measurementType: .ecg, sampleRateHz: 130, holdNanoseconds: 0)
        let start: UInt64 = 820_000_000_000_000_000
        var overRate = 0
        // 13-sample frames, each 100 ms of device time, arriving every 10 ms: ten times the rate.
        for index in 0..<100 {
            let events = timeline.receive(
                Self.ecgFrame(start + UInt64(index) * 100_000_000, count: 13), at: 1_000_000_000 + Int64(index) * 10_000_000)
            overRate += Self.reasons(events).filter { $0 == .implausibleRate }.count
        }
        #expect(overRate > 50)
        #expect(timeline.counters.overRate == overRate)
        // What got through stays within the burst (3 s at 130 Hz) plus the refill over that second.
        #expect(timeline.counters.frames * 13 <= 390 + 195 + 13)
    }

    @Test func aDeviceClockAtHalfSpeedIsDetectedBeforeAnyFrameIsTimedByIt() {
        var simulation = H10ClockSimulation(seed: 21, driftPPM: -500_000)  // device time runs at half the host's rate
        var timeline = PMDStreamTimeline(measurementType: .ecg, sampleRateHz: 130)
        var events: [PMDStreamTimeline.Event] = []
        for _ in 0..<20 {
            let frame = simulation.next()
            events += timeline.receive(frame.bytes, at: frame.receiveTime)
        }
        events += timeline.releaseHeld(now: simulation.hostTime(ofSample: 20 * 73) + 10_000_000_000)
        #expect(Self.reasons(events) == [.deviceClockRate])
        #expect(Self.samples(events) == 0)
        #expect(timeline.counters.clockRate == 1)
        #expect(timeline.clockRefused)
    }

    @Test(arguments: [20.0, -300.0])
    func anHonestClockWithJitterIsNotRefused(drift: Double) {
        var simulation = H10ClockSimulation(
            seed: 23, driftPPM: drift, missedEventProbability: 0.2, schedulingJitterNanoseconds: 3_000_000)
        var timeline = PMDStreamTimeline(measurementType: .ecg, sampleRateHz: 130)
        var events: [PMDStreamTimeline.Event] = []
        for _ in 0..<300 {
            let frame = simulation.next()
            events += timeline.receive(frame.bytes, at: frame.receiveTime)
        }
        #expect(Self.reasons(events).isEmpty)
        #expect(timeline.counters.clockRate == 0)
        #expect(Self.samples(events) >= 290 * 73)
    }

    @Test func aStallFollowedByABurstIsNotAClockAtTheWrongRate() {
        var check = ClockRateCheck()
        var verdicts: [ClockRateCheck.Verdict] = []
        let device: UInt64 = 820_000_000_000_000_000
        // Frames every 100 ms on time for 2 s, then 2 s held back by the link and delivered at once.
        for index in 0..<60 {
            let deviceTime = Int64(index) * 100_000_000
            let receive = index >= 20 && index < 40 ? 4_000_000_000 + Int64(index - 20) * 1_000_000 : deviceTime + 20_000_000
            verdicts.append(check.observe(device: device + UInt64(deviceTime), receive: 1_000_000_000 + receive))
        }
        #expect(!verdicts.contains { if case .disagrees = $0 { true } else { false } })
        #expect(verdicts.last == .agrees)
    }

    @Test func aClockTwiceAsFastDisagrees() {
        var check = ClockRateCheck()
        var last = ClockRateCheck.Verdict.unknown
        for index in 0..<30 {
            last = check.observe(device: UInt64(index) * 200_000_000, receive: Int64(index) * 100_000_000)
        }
        guard case .disagrees(let rate) = last else {
            Issue.record("\(last)")
            return
        }
        #expect(abs(rate - 2) < 0.05)
    }

    @Test func theRateGuardAdmitsABurstThenTheRate() {
        var guardian = RateGuard(perSecond: 5, burst: 10)
        #expect((0..<15).filter { _ in guardian.admit(at: 0) }.count == 10)
        let early = guardian.admit(at: 100_000_000)  // 0.5 earned: not yet one
        let later = guardian.admit(at: 200_000_000)  // 1 earned
        #expect(!early && later)
        #expect((0..<10).filter { _ in guardian.admit(at: 1_200_000_000) }.count == 5)
        let back = guardian.admit(at: 0)  // time going back earns nothing
        #expect(!back)
    }

    static func part(more: Bool, _ parameters: [UInt8], opcode: UInt8 = 0x01) -> PMDResponse {
        PMDResponse(opcode: opcode, measurementType: 0, status: .success, more: more, parameters: parameters)
    }

    @Test func aResponseInPartsIsJoined() {
        var assembler = PMDResponseAssembler()
        #expect(assembler.add(Self.part(more: true, [1, 2])) == .incomplete)
        #expect(assembler.add(Self.part(more: true, [3])) == .incomplete)
        #expect(assembler.add(Self.part(more: false, [4])) == .complete(Self.part(more: false, [1, 2, 3, 4])))
        #expect(!assembler.isAssembling)
        #expect(assembler.add(Self.part(more: false, [9])) == .complete(Self.part(more: false, [9])))
    }

    @Test func anEndlessContinuationIsCutAtItsBound() {
        var assembler = PMDResponseAssembler()
        var outcomes: [PMDResponseAssembler.Outcome] = []
        for _ in 0..<100_000 { outcomes.append(assembler.add(Self.part(more: true, [UInt8](repeating: 7, count: 200)))) }
        let refused = outcomes.filter { if case .refused = $0 { true } else { false } }.count
        // Every run of parts is cut within its bound (20 parts of 200 bytes pass 4096 bytes).
        #expect(refused >= 100_000 / 21)
        #expect(outcomes.allSatisfy { if case .complete = $0 { false } else { true } })
        var mixed = PMDResponseAssembler()
        _ = mixed.add(Self.part(more: true, [1]))
        #expect(mixed.add(Self.part(more: false, [2], opcode: 0x02)) != .incomplete)
        #expect(!mixed.isAssembling)
    }
}
