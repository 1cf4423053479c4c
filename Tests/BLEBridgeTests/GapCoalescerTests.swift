import Testing

@testable import BLEBridge

/// One stream's gaps turned into deletion records at the source (docs/ble.md, "Gaps").
@Suite struct GapCoalescerTests {
    typealias Coalescer = GapCoalescer<Int>
    static let second: Int64 = 1_000_000_000

    static func gaps(_ actions: [Coalescer.Action]) -> [Coalescer.Gap] {
        actions.compactMap { if case .gap(let gap) = $0 { gap } else { nil } }
    }

    static func batches(_ actions: [Coalescer.Action]) -> [Int] {
        actions.compactMap { if case .samples(let batch) = $0 { batch } else { nil } }
    }

    @Test func aRareGapIsItsOwnRecordAndHoldsNothing() {
        var gaps = Coalescer()
        #expect(Self.batches(gaps.samples(1, count: 1, first: 0, last: 0)) == [1])
        gaps.gap(from: 0, why: "frame lost")
        let actions = gaps.samples(2, count: 1, first: Self.second, last: Self.second)
        #expect(Self.gaps(actions) == [.init(from: 0, to: Self.second, why: "frame lost", gaps: 1, droppedSamples: 0)])
        #expect(Self.batches(actions) == [2])
        #expect(!gaps.isOpen)
    }

    @Test func alternatingGoodAndBadFramesBecomeOneRecordPerRun() {
        var gaps = Coalescer()
        var records: [Coalescer.Gap] = []
        var delivered: [Int] = []
        var dropped = 0
        // 120 s of a good frame and an undecodable one, 10 ms apart each.
        var time: Int64 = 0
        for index in 0..<6000 {
            gaps.gap(from: time, why: "undecodable frame")
            time += 10_000_000
            let actions = gaps.samples(index, count: 13, first: time, last: time)
            records += Self.gaps(actions)
            delivered += Self.batches(actions)
            time += 10_000_000
        }
        // Then the stream is clean for 2 s.
        for index in 6000..<6200 {
            let actions = gaps.samples(index, count: 13, first: time, last: time)
            records += Self.gaps(actions)
            delivered += Self.batches(actions)
            time += 10_000_000
        }
        dropped = records.reduce(0) { $0 + $1.droppedSamples }
        // The first gaps get their own records; then the whole run is one, and every sample it
        // covers was dropped: nothing delivered lies inside a record.
        #expect(records.count == Coalescer.burst + 1, "\(records.count) records")
        for batch in delivered {
            let at = Int64(
                batch < 6000 ? 20_000_000 * Int64(batch) + 10_000_000 : 120_000_000_000 + 10_000_000 * Int64(batch - 6000))
            #expect(!records.contains { $0.from < at && at < $0.to }, "sample at \(at) inside a record")
        }
        #expect(dropped > 0)
        #expect(delivered.count + dropped / 13 == 6200)
    }

    @Test func theBudgetRefillsSoALaterRareGapIsPreciseAgain() {
        var gaps = Coalescer()
        var time: Int64 = 0
        for _ in 0..<Coalescer.burst {
            gaps.gap(from: time, why: "x")
            time += 1_000_000
            _ = gaps.samples(0, count: 1, first: time, last: time)
        }
        time += Coalescer.refillNanoseconds
        gaps.gap(from: time, why: "later")
        let actions = gaps.samples(1, count: 1, first: time + 1, last: time + 1)
        #expect(Self.gaps(actions).map(\.why) == ["later"])
        #expect(Self.batches(actions) == [1])
    }

    @Test func aSettlingGapGoesOutWhenSamplesStopOrTheStreamStops() {
        var gaps = Coalescer()
        for index in 0..<Coalescer.burst {
            gaps.gap(from: Int64(index), why: "x")
            _ = gaps.samples(0, count: 1, first: Int64(index) + 1, last: Int64(index) + 1)
        }
        gaps.gap(from: 100, why: "y")
        #expect(gaps.samples(7, count: 1, first: 200, last: 200).isEmpty)  // held while it settles
        #expect(gaps.tick(now: 200 + Self.second / 2).isEmpty)
        let released = gaps.tick(now: 200 + Self.second)
        #expect(Self.gaps(released).map(\.to) == [200])
        #expect(Self.batches(released) == [7])
        gaps.gap(from: 300, why: "z")
        _ = gaps.samples(8, count: 1, first: 400, last: 400)
        let stopped = gaps.close(at: 500)
        #expect(Self.gaps(stopped).map(\.from) == [300])
        #expect(Self.batches(stopped) == [8])
        gaps.gap(from: 600, why: "w")
        #expect(Self.gaps(gaps.close(at: 700)).map(\.to) == [700])
    }
}
