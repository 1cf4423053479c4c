import SensorKitModel
import SensorTestKit
import Testing

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
        #expect(
            decide(now - 5 * 24 * hour, now - 2 * 24 * hour, first: first)
                == .read(from: first - 1, to: now - 2 * 24 * hour, notBefore: first))
        guard case .empty = decide(now - 5 * 24 * hour, first - 1, first: first) else {
            Issue.record("a range ending before the first start is empty"); return
        }
        guard case .empty(let notice) = decide(0, now - hold, first: nil) else {
            Issue.record("no stake, no data"); return
        }
        #expect(notice.contains("startRecording"))
    }

    /// A client may send any Int64; on the timeline's first day `now − hold` is negative, so
    /// `to − (now − hold)` overflowed and trapped, killing the daemon.
    @Test func extremeRangesOnAYoungTimelineAreAnsweredNotTrapped() {
        let young = 2 * hour  // younger than the 24 h hold
        for (from, to) in [(0, Int64.max), (Int64.min, Int64.max), (Int64.max - 1, Int64.max), (Int64.min, Int64.min)] {
            for window in [window, Int64.max] {
                let verdict = FetchPolicy.decide(from: from, to: to, now: young, hold: hold, window: window, firstStart: 0)
                guard case .empty = verdict else { Issue.record("(\(from), \(to)] at \(young): \(verdict)"); continue }
            }
        }
        guard
            case .empty(let notice) = FetchPolicy.decide(from: 0, to: .max, now: young, hold: hold, window: window, firstStart: 0)
        else {
            Issue.record("a range into the hold is empty"); return
        }
        #expect(notice.contains("hold"))
        // Every combination of extreme numbers gets a verdict (a trap would end the test run).
        let extremes: [Int64] = [.min, .min + 1, -hold, -1, 0, 1, hold, .max - 1, .max]
        var verdicts = 0
        for from in extremes {
            for to in extremes {
                for now in extremes {
                    for first in extremes {
                        _ = FetchPolicy.decide(from: from, to: to, now: now, hold: hold, window: .max, firstStart: first)
                        _ = FetchPolicy.decide(from: from, to: to, now: now, hold: 0, window: 1, firstStart: first)
                        verdicts += 2
                    }
                }
            }
        }
        #expect(verdicts == 2 * 9 * 9 * 9 * 9)
    }

    @Test func holdZeroReadsUpToNowAndBeyond() {
        #expect(
            FetchPolicy.decide(from: now - hour, to: now, now: now, hold: 0, window: window, firstStart: 0)
                == .read(from: now - hour, to: now, notBefore: 0))
        #expect(
            FetchPolicy.decide(from: now - hour, to: now + hour, now: now, hold: 0, window: window, firstStart: 0)
                == .read(from: now - hour, to: now + hour, notBefore: 0))
    }
}
