import SensorSimulation
import Testing

@testable import BLEBridge

@Suite struct DeviceClockMappingTests {
    static let period = Int64(1e9 / 130)

    /// Runs `frames` frames of a simulated H10 through a timeline; returns the worst sample error
    /// after the first `warmUp` frames, and checks sample times strictly increase throughout.
    static func run(_ simulation: inout H10ClockSimulation, frames: Int, warmUp: Int = 40) -> (
        worst: Int64, naiveWorst: Int64, timeline: PMDStreamTimeline
    ) {
        var timeline = PMDStreamTimeline(measurementType: .ecg, sampleRateHz: 130)
        var truth: [UInt64: [Int64]] = [:]
        var worst: Int64 = 0, naiveWorst: Int64 = 0
        var previous = Int64.min
        var released = 0
        func check(_ events: [PMDStreamTimeline.Event]) {
            for case .frame(let frame) in events {
                let real = truth.removeValue(forKey: frame.frame.deviceTimestamp)!
                for (time, trueTime) in zip(frame.sampleTimes, real) {
                    #expect(time > previous)
                    previous = time
                    if released >= warmUp { worst = max(worst, abs(time - trueTime)) }
                }
                if released >= warmUp { naiveWorst = max(naiveWorst, abs(frame.receiveTime - real.last!)) }
                released += 1
            }
        }
        for _ in 0..<frames {
            let frame = simulation.next()
            truth[frame.deviceTimestamp] = frame.trueSampleTimes
            check(timeline.receive(frame.bytes, at: frame.receiveTime))
        }
        check(timeline.finish())
        return (worst, naiveWorst, timeline)
    }

    @Test(arguments: [20.0, -20.0])
    func withinOneSamplePeriodUnderDriftAndBatching(drift: Double) {
        var simulation = H10ClockSimulation(seed: 7, driftPPM: drift)
        // ≈ 30 min of ECG.
        let result = Self.run(&simulation, frames: 3_200)
        #expect(result.worst < Self.period, "worst \(result.worst) ns")
        #expect(result.naiveWorst > result.worst)
        #expect(result.timeline.counters.clamped == 0)
        #expect(result.timeline.counters.frames == 3_200)
    }

    /// Pairs on a line with 20 ppm drift, each late by 0–9 ms except every fifth: the fit is the
    /// line through the prompt ones.
    @Test func fitsTheLowerEnvelope() throws {
        var mapping = DeviceClockMapping()
        let drift = 20e-6
        for index in 0..<2_000 {
            let device = UInt64(index) * 500_000_000
            let onTime = 1_000_000_000 + Int64(Double(device) * (1 + drift))
            mapping.observe(device: device + 7_000_000_000, receive: onTime + (index % 5 == 0 ? 0 : Int64(index % 9) * 1_000_000))
        }
        let estimate = try #require(mapping.estimate(device: 7_000_000_000 + 1_000_000_000_000))
        #expect(abs(estimate.time - (1_000_000_000 + Int64(1e12 * (1 + drift)))) < 10_000)
        #expect(abs(mapping.drift - drift) < 1e-7)
        #expect(estimate.uncertainty < 10_000)
    }

    @Test func duplicateFrameIsDroppedAndCounted() {
        var simulation = H10ClockSimulation(seed: 3)
        var timeline = PMDStreamTimeline(measurementType: .ecg, sampleRateHz: 130, holdNanoseconds: 0)
        let frame = simulation.next()
        #expect(timeline.receive(frame.bytes, at: frame.receiveTime).count == 1)
        #expect(timeline.receive(frame.bytes, at: frame.receiveTime + 1_000_000).isEmpty)
        #expect(timeline.counters.duplicates == 1)
    }

    @Test func clockResetTo2019IsAGapNotAReordering() {
        var simulation = H10ClockSimulation(seed: 5)
        var timeline = PMDStreamTimeline(measurementType: .ecg, sampleRateHz: 130, holdNanoseconds: 0)
        var times: [Int64] = []
        var gaps: [PMDStreamTimeline.Gap] = []
        func take(_ events: [PMDStreamTimeline.Event]) {
            for event in events {
                switch event {
                case .frame(let frame): times += frame.sampleTimes
                case .gap(let gap): gaps.append(gap)
                }
            }
        }
        for _ in 0..<50 {
            let frame = simulation.next()
            take(timeline.receive(frame.bytes, at: frame.receiveTime))
        }
        // The strap lost power: its clock restarts at 2019-01-01 while the host moves on.
        simulation.deviceStart = PMDTime.resetInstant
        simulation.hostStart += 60_000_000_000
        let beforeReset = times.last!
        var afterReset: [Int64] = []
        for _ in 0..<20 {
            let frame = simulation.next()
            let before = times.count
            take(timeline.receive(frame.bytes, at: frame.receiveTime))
            afterReset += times[before...]
        }
        #expect(gaps.map(\.reason) == [.deviceClockReset])
        #expect(gaps.first?.after == beforeReset)
        #expect(timeline.counters.resets == 1)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 })
        // After the reset the new mapping lands the samples near the host's new time, not in 2019.
        #expect(afterReset.first! > beforeReset + 59_000_000_000)
    }

    static func gapReasons(_ events: [PMDStreamTimeline.Event]) -> [PMDStreamTimeline.GapReason] {
        events.compactMap { if case .gap(let gap) = $0 { gap.reason } else { nil } }
    }

    @Test func jumpForwardAndBackIsAGap() {
        var simulation = H10ClockSimulation(seed: 9)
        var timeline = PMDStreamTimeline(measurementType: .ecg, sampleRateHz: 130, holdNanoseconds: 0)
        for _ in 0..<10 {
            let frame = simulation.next()
            _ = timeline.receive(frame.bytes, at: frame.receiveTime)
        }
        simulation.deviceStart += 3_600_000_000_000  // an hour ahead, with no hour passing on the host
        var frame = simulation.next()
        #expect(Self.gapReasons(timeline.receive(frame.bytes, at: frame.receiveTime)) == [.deviceClockJump])
        simulation.deviceStart -= 7_200_000_000_000  // then behind where it was
        frame = simulation.next()
        #expect(Self.gapReasons(timeline.receive(frame.bytes, at: frame.receiveTime)) == [.deviceClockJump])
        #expect(timeline.counters.jumps == 2)
    }

    @Test func partialPayloadIsDroppedAsAGapAndLostFramesAreAGap() {
        var simulation = H10ClockSimulation(seed: 11)
        var timeline = PMDStreamTimeline(measurementType: .ecg, sampleRateHz: 130, holdNanoseconds: 0)
        let first = simulation.next()
        let released = timeline.receive(first.bytes, at: first.receiveTime)
        let second = simulation.next()
        let events = timeline.receive(Array(second.bytes.dropLast()), at: second.receiveTime)
        #expect(
            events == [
                .gap(
                    .init(
                        reason: .undecodableFrame, after: released.compactMap(Self.lastTime).last, receiveTime: second.receiveTime
                    ))
            ])
        #expect(timeline.counters.undecodable == 1)
        // The frame after the dropped one: its device time says a frame is missing.
        let third = simulation.next()
        #expect(Self.gapReasons(timeline.receive(third.bytes, at: third.receiveTime)) == [.framesMissing])
        #expect(timeline.counters.missing == 1)
    }

    @Test func anUndecodableFrameReleasesTheHeldFramesBeforeItsGap() {
        var simulation = H10ClockSimulation(seed: 17)
        var timeline = PMDStreamTimeline(measurementType: .ecg, sampleRateHz: 130, holdNanoseconds: 1_000_000_000)
        for _ in 0..<2 {  // frames come every 0.56 s: both are still held
            let frame = simulation.next()
            #expect(timeline.receive(frame.bytes, at: frame.receiveTime).isEmpty)
        }
        let broken = simulation.next()
        let events = timeline.receive(Array(broken.bytes.dropLast()), at: broken.receiveTime)
        let frames = events.compactMap(Self.lastTime)
        #expect(frames.count == 2)
        #expect(events.last == .gap(.init(reason: .undecodableFrame, after: frames.last, receiveTime: broken.receiveTime)))
    }

    static func lastTime(_ event: PMDStreamTimeline.Event) -> Int64? {
        if case .frame(let frame) = event { return frame.sampleTimes.last }
        return nil
    }

    @Test func heldFramesWaitForLaterPairs() {
        var simulation = H10ClockSimulation(seed: 13)
        var timeline = PMDStreamTimeline(measurementType: .ecg, sampleRateHz: 130, holdNanoseconds: 1_000_000_000)
        let first = simulation.next()
        #expect(timeline.receive(first.bytes, at: first.receiveTime).isEmpty)
        var released = 0
        for _ in 0..<3 {
            let frame = simulation.next()
            released += timeline.receive(frame.bytes, at: frame.receiveTime).count
        }
        #expect(released >= 1)
        #expect(timeline.finish().count == 4 - released)
    }

    /// The lab profile's hold: frames wait only while the device clock's rate is unchecked (at
    /// most 4 s), then each goes out on its own receipt; the study profile's keeps each a second.
    @Test func theOnReceiptHoldReleasesEachFrameOnItsReceiptOnceTheClockIsChecked() {
        for hold in [PMDStreamTimeline.Hold.onReceipt, .fit] {
            var simulation = H10ClockSimulation(seed: 19)
            var timeline = PMDStreamTimeline(measurementType: .ecg, sampleRateHz: 130, hold: hold)
            let first = simulation.next()
            #expect(timeline.receive(first.bytes, at: first.receiveTime).isEmpty, "the clock is not checked yet")
            var onReceipt = 0
            var released = 0
            for _ in 0..<40 {  // 22 s of 73-sample frames
                let frame = simulation.next()
                let out = timeline.receive(frame.bytes, at: frame.receiveTime).compactMap { event -> UInt64? in
                    if case .frame(let timed) = event { return timed.frame.deviceTimestamp }
                    return nil
                }
                if released == 0, !out.isEmpty {
                    #expect(frame.receiveTime - first.receiveTime <= hold.unverified + 1_000_000_000)
                } else if hold == .onReceipt, released > 0 {
                    #expect(out == [frame.deviceTimestamp], "a frame after the check goes out on its own receipt")
                }
                if out.last == frame.deviceTimestamp { onReceipt += 1 }
                released += out.count
            }
            if hold == .onReceipt {  // every frame, the first included
                #expect(onReceipt >= 35 && released == 41, "\(onReceipt) on receipt, \(released) released")
            } else {
                #expect(onReceipt == 0 && released < 41, "the study hold released \(onReceipt) frames on receipt")
            }
        }
    }
}
