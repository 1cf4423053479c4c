import SensorKitModel
import Testing

@testable import IIOBridge

@Suite struct SampleBatcherTests {
    static let boot = BootID("boot-a")
    static let ms: Int64 = 1_000_000

    static func batches(_ events: [SourceEvent]) -> [SourceBatch] {
        events.compactMap { if case let .samples(batch) = $0 { batch } else { nil } }
    }

    static func gaps(_ events: [SourceEvent]) -> [(from: Int64, to: Int64, why: String)] {
        events.compactMap {
            if case let .gap(from, to, reason, why) = $0, reason == .systemInitiated {
                (from.nanoseconds, to.nanoseconds, why)
            } else {
                nil
            }
        }
    }

    @Test func batchesNeverSpanHalfASecondAndKeepEverySample() {
        var batcher = SampleBatcher(boot: Self.boot, columnCount: 2, period: 10 * Self.ms)
        var events: [SourceEvent] = []
        for i in 0..<250 {  // 2.5 s at 100 Hz
            let t = 1_000 * Self.ms + Int64(i) * 10 * Self.ms
            batcher.append(sensorTime: t, receiveTime: t + 3, into: &events) { Int64(i * 10 + $0) }
        }
        batcher.flush(into: &events)
        let batches = Self.batches(events)
        // Half-second batches: what waits in a batch is lost at a SIGKILL, with the store's
        // uncommitted half second (docs/reliability.md, crash contract).
        #expect(batches.map(\.sensorTimes.count) == [50, 50, 50, 50, 50])
        #expect(batches.allSatisfy { $0.sensorTimes.last! - $0.sensorTimes.first! < 500 * Self.ms })
        let times: [Int64] = (0..<250).map { 1_000 * Self.ms + Int64($0) * 10 * Self.ms }
        let received: [Int64] = times.map { $0 + 3 }
        let second: [Int64] = (0..<250).map { Int64($0 * 10 + 1) }
        #expect(batches.flatMap(\.sensorTimes) == times)
        #expect(batches.flatMap(\.receiveTimes) == received)
        #expect(batches.flatMap { $0.columns[1] } == second)
        #expect(batches.allSatisfy { $0.boot == Self.boot })
        #expect(Self.gaps(events).isEmpty)
        // Flushing again gives nothing.
        var more: [SourceEvent] = []
        batcher.flush(into: &more)
        #expect(more.isEmpty)
    }

    @Test func aTimestampJumpIsAGapBetweenTheTwoSamples() {
        var batcher = SampleBatcher(boot: Self.boot, columnCount: 1, period: 2_500_000)  // 400 Hz
        var events: [SourceEvent] = []
        // Jitter below the threshold (25 ms: 8 periods would be 20 ms) is not a gap.
        for t in [0, 2_500_000, 5_000_000, 29_000_000, 31_500_000] as [Int64] {
            batcher.append(sensorTime: t, receiveTime: t, into: &events) { _ in 1 }
        }
        #expect(Self.gaps(events).isEmpty)
        batcher.append(sensorTime: 131_500_000, receiveTime: 131_500_000, into: &events) { _ in 2 }
        let gaps = Self.gaps(events)
        #expect(gaps.count == 1)
        #expect(gaps.first?.from == 31_500_000 && gaps.first?.to == 131_500_000)
        #expect(gaps.first?.why == "kernel FIFO overflow: no samples for 100.0 ms at a 2.5 ms period, about 39 lost")
        // The batch before the gap went out first, in order.
        #expect(Self.batches(events).first?.sensorTimes == [0, 2_500_000, 5_000_000, 29_000_000, 31_500_000])
        if case .samples = events.first {} else { Issue.record("the pending batch must precede the gap") }
    }

    @Test func anInterruptionMakesTheNextStepAGapWhateverItsSize() {
        var batcher = SampleBatcher(boot: Self.boot, columnCount: 1, period: nil, gapCause: "sysfs reads stalled")
        var events: [SourceEvent] = []
        batcher.interrupted("before anything")  // nothing to lose before the first sample
        batcher.append(sensorTime: 10, receiveTime: 10, into: &events) { _ in 0 }
        batcher.append(sensorTime: 5_000_000_000, receiveTime: 5_000_000_000, into: &events) { _ in 0 }
        #expect(Self.gaps(events).isEmpty, "no period: steps alone are never gaps")
        batcher.interrupted("read failed: EIO")
        batcher.interrupted("read failed again")
        batcher.append(sensorTime: 5_000_000_001, receiveTime: 5_000_000_001, into: &events) { _ in 0 }
        #expect(Self.gaps(events).map(\.why) == ["read failed: EIO"])
        #expect(Self.gaps(events).first.map { ($0.from, $0.to) } ?? (0, 0) == (5_000_000_000, 5_000_000_001))
    }

    @Test func thresholdHasAFloor() {
        #expect(SampleBatcher(boot: Self.boot, columnCount: 1, period: 1_000_000).gapThreshold == 25_000_000)
        #expect(SampleBatcher(boot: Self.boot, columnCount: 1, period: 100_000_000).gapThreshold == 800_000_000)
        #expect(SampleBatcher(boot: Self.boot, columnCount: 1, period: nil).gapThreshold == nil)
    }
}
