import Testing
import SensorKitModel
@testable import SensorDaemon

@Suite struct FetchPolicyTests {
    let hour: Int64 = 3_600_000_000_000
    let hold: Int64 = 24 * 3_600_000_000_000
    let window: Int64 = 7 * 24 * 3_600_000_000_000
    let now: Int64 = 30 * 24 * 3_600_000_000_000

    func decide(_ from: Int64, _ to: Int64, first: Int64? = 0) -> FetchPolicy.Verdict {
        FetchPolicy.decide(from: from, to: to, now: now, hold: hold, window: window, firstStart: first)
    }

    @Test func aRangeEndingExactlyAtTheHoldIsReadAndOneNanosecondLaterIsNot() {
        let edge = now - hold
        #expect(decide(edge - hour, edge) == .read(from: edge - hour, to: edge, notBefore: 0))
        #expect(decide(edge - hour, edge, first: edge - 10) == .read(from: edge - 11, to: edge, notBefore: edge - 10))
        guard case .empty(let notice) = decide(edge - hour, edge + 1) else {
            Issue.record("a range 1 ns into the hold must return nothing"); return
        }
        #expect(notice.contains("hold"))
    }

    @Test func noRangeShapeReturnsAnythingInsideTheHold() {
        // Every (from, to] whose end lies inside (now − hold, now + 1 h] returns nothing at all.
        var generator = SeededGenerator(seed: 11)
        for _ in 0..<10_000 {
            let to = now - hold + Int64.random(in: 1...(hold + hour), using: &generator)
            let from = to - Int64.random(in: 0...(40 * 24 * hour), using: &generator)
            if case .read = decide(from, to) { Issue.record("(\(from), \(to)] overlaps the hold but was read") }
        }
    }

    @Test func theWindowClampsTheStart() {
        let to = now - hold - hour
        #expect(decide(0, to) == .read(from: now - window, to: to, notBefore: 0))
        guard case .empty = decide(0, now - window) else { Issue.record("a range before the window is empty"); return }
    }

    @Test func appsSeeOnlyDataFromTheirOwnFirstStart() {
        let first = now - 3 * 24 * hour
        // The read range starts just before the first start: samples at exactly `first` are the app's.
        #expect(decide(now - 5 * 24 * hour, now - 2 * 24 * hour, first: first)
                == .read(from: first - 1, to: now - 2 * 24 * hour, notBefore: first))
        guard case .empty = decide(now - 5 * 24 * hour, first - 1, first: first) else {
            Issue.record("a range ending before the first start is empty"); return
        }
        guard case .empty(let notice) = decide(0, now - hold, first: nil) else {
            Issue.record("no stake, no data"); return
        }
        #expect(notice.contains("startRecording"))
    }

    @Test func holdZeroReadsUpToNowAndBeyond() {
        #expect(FetchPolicy.decide(from: now - hour, to: now, now: now, hold: 0, window: window, firstStart: 0)
                == .read(from: now - hour, to: now, notBefore: 0))
        #expect(FetchPolicy.decide(from: now - hour, to: now + hour, now: now, hold: 0, window: window, firstStart: 0)
                == .read(from: now - hour, to: now + hour, notBefore: 0))
    }
}

import SensorTestKit
