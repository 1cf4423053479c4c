import Foundation
import LocationBridge
import SensorKitModel
import Synchronization
import Testing

/// The daemon's `visits` source: a visit is a row only while recording, timed when it was taken;
/// recorded time no agent watched location becomes a deletion record.
@Suite struct VisitRecorderTests {
    static let second: Int64 = 1_000_000_000
    static let visit = HandedVisit(
        distance: 12, ages: [-1, 60_000, 30_000, 1_000], category: .home,
        identifier: UUID(uuidString: "00000000-0000-8000-8000-0000000000AB")!)!

    @Test func unwatchedRecordedTimeIsADeletionRecordAndVisitsOnlyCountWhileRecording() throws {
        let clock = FakeClock()
        let recorder = VisitRecorder(clock: clock)
        let events = Mutex<[SourceEvent]>([])
        let start = clock.boottimeNanoseconds()
        recorder.feed(.visit(Self.visit, at: start))  // nobody records: dropped
        recorder.setRecording(true) { event in events.withLock { $0.append(event) } }
        recorder.queue.sync {}  // started before the clock moves
        clock.advance(nanoseconds: 5 * Self.second)
        recorder.feed(.watching(true, at: start + 5 * Self.second))
        recorder.feed(.visit(Self.visit, at: start + 6 * Self.second))
        recorder.feed(.watching(false, at: start + 8 * Self.second))
        clock.advance(nanoseconds: 5 * Self.second)
        recorder.setRecording(false) { _ in }
        recorder.feed(.visit(Self.visit, at: start + 11 * Self.second))  // stopped: dropped
        recorder.queue.sync {}

        let seen = events.withLock { $0 }
        try #require(seen.count == 3, "\(seen.map { "\($0)".prefix(120) })")
        guard case .gap(let from, let to, let reason, _) = seen[0], case .samples(let batch) = seen[1],
            case .gap(let from2, let to2, _, _) = seen[2]
        else {
            Issue.record("\(seen)")
            return
        }
        #expect(from.nanoseconds == start && to.nanoseconds == start + 5 * Self.second && reason == .systemInitiated)
        #expect(batch.sensorTimes == [start + 6 * Self.second])
        #expect(from2.nanoseconds == start + 8 * Self.second && to2.nanoseconds == start + 10 * Self.second)
        #expect(recorder.status["visits"] == "1")
    }

    @Test func aWatchedRecordingHasNoDeletionRecord() {
        let clock = FakeClock()
        let recorder = VisitRecorder(clock: clock)
        let events = Mutex<[SourceEvent]>([])
        recorder.feed(.watching(true, at: 0))
        recorder.setRecording(true) { event in events.withLock { $0.append(event) } }
        clock.advance(nanoseconds: 3 * Self.second)
        recorder.setRecording(false) { _ in }
        #expect(events.withLock { $0.isEmpty })
    }
}
