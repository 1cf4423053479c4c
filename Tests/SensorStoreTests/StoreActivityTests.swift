import Foundation
import SensorKitModel
import Testing

@testable import SensorStore

/// `activity`, `deletionSummary` and `deletionRecords(from:to:limitPerStream:)`: what
/// `sensorkitctl status` and `report` are built from, read from the catalog alone.
@Suite struct StoreActivityTests {
    static let second: Int64 = 1_000_000_000

    /// Two committed runs of 10 s at 100 Hz with 10 s between them, a gap record in between.
    func twoRuns() throws -> (StoreFixture, base: Int64) {
        let fixture = try StoreFixture(StoreTests.noHold)
        let stream = try fixture.opened.register(.accelerometer)
        let base = fixture.boottime
        for run in [0, 2] {
            let times = (0..<1_000).map { base + Int64(run) * 10 * Self.second + Int64($0) * 10_000_000 }
            StoreTests.append(
                fixture, stream, times: times, values: [times.map { _ in 1 }, times.map { _ in 2 }, times.map { _ in 3 }])
            try fixture.opened.flush()
        }
        fixture.opened.recordGap(
            sensor: .accelerometer, device: "host", from: fixture.sr(base + 10 * Self.second),
            to: fixture.sr(base + 20 * Self.second), reason: .noInterestedClients)
        fixture.opened.recordGap(
            sensor: .accelerometer, device: "host", from: fixture.sr(base + 29 * Self.second),
            to: fixture.sr(base + 30 * Self.second), reason: .systemInitiated)
        try fixture.opened.flush()
        fixture.clock.advance(seconds: 40)
        return (fixture, base)
    }

    @Test func countsSamplesAndSpansFromChunkBounds() throws {
        let (fixture, base) = try twoRuns()
        let all = try fixture.opened.activity(from: fixture.sr(base) - 1, to: fixture.sr(base + 40 * Self.second))
        #expect(all.count == 1)
        let stream = try #require(all.first)
        #expect(stream.sensor == .accelerometer && stream.device == "host")
        #expect(stream.samples == 2_000)
        #expect(
            stream.spans == [
                fixture.sr(base)...fixture.sr(base + 9_990_000_000),
                fixture.sr(base + 20 * Self.second)...fixture.sr(base + 29_990_000_000),
            ])
        #expect(stream.newestSample == fixture.sr(base + 29_990_000_000))

        // A range cutting both runs in half: half of each, prorated by the chunks' time bounds.
        let middle = try #require(
            try fixture.opened.activity(from: fixture.sr(base + 5 * Self.second), to: fixture.sr(base + 25 * Self.second)).first)
        #expect(abs(middle.samples - 1_000) < 2, "\(middle.samples)")
        #expect(middle.spans.first?.lowerBound == fixture.sr(base + 5 * Self.second) + 1)
        #expect(middle.spans.last?.upperBound == fixture.sr(base + 25 * Self.second))

        // A merge gap wider than the hole joins the runs; too many spans coarsen until they fit.
        #expect(
            try fixture.opened.activity(
                from: fixture.sr(base) - 1, to: fixture.sr(base + 40 * Self.second), mergeGap: 11 * Self.second
            )
            .first?.spans.count == 1)
        #expect(
            try fixture.opened.activity(from: fixture.sr(base) - 1, to: fixture.sr(base + 40 * Self.second), maxSpans: 1)
                .first?.spans.count == 1)
        // Nothing in a range after the data, but the newest sample is still known.
        let later = try #require(
            try fixture.opened.activity(from: fixture.sr(base + 35 * Self.second), to: fixture.sr(base + 40 * Self.second)).first)
        #expect(later.samples == 0 && later.spans.isEmpty && later.newestSample == stream.newestSample)
    }

    @Test func summarisesDeletionRecordsPerReasonClippedToTheRange() throws {
        let (fixture, base) = try twoRuns()
        let summary = try fixture.opened.deletionSummary(
            from: fixture.sr(base + 15 * Self.second), to: fixture.sr(base + 40 * Self.second))
        #expect(summary.map(\.reason) == [.noInterestedClients, .systemInitiated])
        #expect(summary.map(\.count) == [1, 1])
        #expect(summary.map(\.nanoseconds) == [5 * Self.second, Self.second])
        let longest = try fixture.opened.deletionRecords(
            from: fixture.sr(base), to: fixture.sr(base + 40 * Self.second), limitPerStream: 1)
        #expect(longest.map(\.reason) == [.noInterestedClients])
        let both = try fixture.opened.deletionRecords(
            from: fixture.sr(base), to: fixture.sr(base + 40 * Self.second), limitPerStream: 5)
        #expect(both.map(\.reason) == [.noInterestedClients, .systemInitiated])
    }
}
