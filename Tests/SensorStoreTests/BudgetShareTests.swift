import Foundation
import SensorKitModel
import Synchronization
import Testing

@testable import SensorStore

/// The disk budget against one source's flood of samples or deletion records (docs/store.md,
/// disk budget): the flooding source loses its own oldest data, a quiet one keeps everything,
/// records count and are bounded, and no `lowDiskSpace` record covers a sample still stored.
@Suite struct BudgetShareTests {
    static let flood = StreamDescriptor(
        sensor: .rotationRate, device: "host", source: ["chip": .string("flood")],
        schema: .threeAxes)

    static func fixture(maxBytes: Int64) throws -> StoreFixture {
        try StoreFixture {
            StoreTests.noHold(&$0)
            $0.chunkMaxSamples = 1_000
            $0.maxBytes = maxBytes
        }
    }

    /// Appends `count` samples of noise at 100 Hz from `first` (boot ns): about 24 B each.
    static func noise(_ fixture: StoreFixture, _ stream: StreamID, first: Int64, count: Int, seed: UInt64) -> [Int64] {
        var random = SeededGenerator(seed: seed)
        let times = (0..<Int64(count)).map { first + $0 * 10_000_000 }
        let values = (0..<3).map { _ in times.map { _ in Int64(bitPattern: random.next()) } }
        StoreTests.append(fixture, stream, times: times, values: values)
        return times.map(fixture.sr)
    }

    /// Stored samples of `sensor` that lie inside one of its `lowDiskSpace` records.
    static func claimedButStored(_ fixture: StoreFixture, _ sensor: SRSensor) throws -> Int {
        let records = try fixture.opened.deletionRecords(sensor: sensor, device: "host", from: .min, to: .max)
            .filter { $0.reason == .lowDiskSpace }
        let times = try fixture.fetch(sensor).map(\.time)
        return times.count - outside(times, records).count
    }

    /// The times (ascending) inside none of the records: one merge pass.
    static func outside(_ times: [Int64], _ records: [StoredDeletionRecord]) -> [Int64] {
        let spans = records.map { ($0.start, $0.end) }.sorted { $0.0 < $1.0 }
        var out: [Int64] = []
        var next = 0
        var reach = Int64.min
        for time in times {
            while next < spans.count, spans[next].0 <= time {
                reach = max(reach, spans[next].1)
                next += 1
            }
            if time > reach { out.append(time) }
        }
        return out
    }

    @Test func aFloodingSourceLosesItsOwnOldestSamplesNotAQuietSourcesOlderOnes() throws {
        let fixture = try Self.fixture(maxBytes: 500_000)
        let quiet = try fixture.opened.register(.accelerometer)
        let flood = try fixture.opened.register(Self.flood)
        // The quiet source's samples are the oldest in the store: plain oldest-first eviction
        // would take them first.
        let quietTimes = Self.noise(fixture, quiet, first: 1_000_000_000, count: 3_000, seed: 1)
        try fixture.opened.flush()
        var floodTimes: [Int64] = []
        for second in 0..<40 {
            floodTimes += Self.noise(
                fixture, flood, first: 100_000_000_000 + Int64(second) * 10_000_000_000, count: 1_000,
                seed: 2 + UInt64(second))
            // Undecodable frames between the good ones: a record between every two samples.
            for gap in 0..<50 {
                let start = fixture.sr(100_000_000_000 + Int64(second) * 10_000_000_000 + Int64(gap) * 20_000_000 + 1)
                fixture.opened.recordGap(
                    sensor: .rotationRate, device: "host", from: start, to: start + 5_000_000,
                    reason: .systemInitiated)
            }
            try fixture.opened.flush()
        }
        #expect(try fixture.opened.diskUsage().occupiedBytes <= 500_000)
        #expect(try fixture.fetch(.accelerometer).map(\.time) == quietTimes, "the quiet source keeps every sample")
        let kept = try fixture.fetch(.rotationRate).map(\.time)
        #expect(!kept.isEmpty && kept.count < floodTimes.count)
        #expect(kept.last == floodTimes.last, "the flooding source keeps its newest")
        #expect(try fixture.opened.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max).isEmpty)
        let keptSet = Set(kept)
        let evicted = floodTimes.filter { !keptSet.contains($0) }
        let records = try fixture.opened.deletionRecords(sensor: .rotationRate, device: "host", from: .min, to: .max)
            .filter { $0.reason == .lowDiskSpace }
        #expect(Self.outside(evicted, records).isEmpty, "every evicted sample is inside a lowDiskSpace record")
        #expect(try Self.claimedButStored(fixture, .rotationRate) == 0)
    }

    @Test func aFloodOfDeletionRecordsIsKeptWithinTheBudget() throws {
        let fixture = try Self.fixture(maxBytes: 400_000)
        let quiet = try fixture.opened.register(.accelerometer)
        let quietTimes = Self.noise(fixture, quiet, first: 1_000_000_000, count: 3_000, seed: 3)
        try fixture.opened.flush()
        // 20 000 records a few ms apart, none touching the next: 3 MB of rows if nothing bounds them.
        var spans: [(Int64, Int64)] = []
        for index in 0..<20_000 {
            let start = fixture.sr(100_000_000_000 + Int64(index) * 3_000_000)
            spans.append((start, start + 1_000_000))
            fixture.opened.recordGap(
                sensor: .rotationRate, device: "host", from: start, to: start + 1_000_000,
                reason: .systemInitiated)
            if index % 1_000 == 999 { try fixture.opened.flush() }
        }
        try fixture.opened.flush()
        #expect(try fixture.opened.diskUsage().occupiedBytes <= 400_000)
        #expect(try fixture.fetch(.accelerometer).map(\.time) == quietTimes)
        let records = try fixture.opened.deletionRecords(sensor: .rotationRate, device: "host", from: .min, to: .max)
        #expect(records.count < 2_000, "\(records.count) records")
        // Every loss stays explained.
        #expect(Self.outside(spans.flatMap { [$0.0, $0.0 + 500_000, $0.1] }, records).isEmpty)
    }

    /// No disk budget at all: a source's records are still bounded (`maxRecordsPerSource`), the
    /// flooding source paying with its own oldest data.
    @Test func aSourcesRecordsAreBoundedWithoutADiskBudget() throws {
        let fixture = try StoreFixture {
            StoreTests.noHold(&$0)
            $0.chunkMaxSamples = 1_000
            $0.maxRecordsPerSource = 1_000
        }
        let quiet = try fixture.opened.register(.accelerometer)
        let flood = try fixture.opened.register(Self.flood)
        let quietTimes = Self.noise(fixture, quiet, first: 1_000_000_000, count: 3_000, seed: 5)
        var gaps: [Int64] = []
        for second in 0..<60 {
            let first = 100_000_000_000 + Int64(second) * 10_000_000_000
            _ = Self.noise(fixture, flood, first: first, count: 1_000, seed: 6 + UInt64(second))
            for gap in 0..<50 {
                let start = fixture.sr(first + Int64(gap) * 20_000_000 + 1)
                gaps.append(start)
                fixture.opened.recordGap(
                    sensor: .rotationRate, device: "host", from: start, to: start + 5_000_000,
                    reason: .systemInitiated)
            }
            try fixture.opened.flush()
        }
        let records = try fixture.opened.deletionRecords(sensor: .rotationRate, device: "host", from: .min, to: .max)
        #expect(records.count <= 1_000 + 100, "\(records.count) records of 3000")
        #expect(try fixture.fetch(.accelerometer).map(\.time) == quietTimes)
        #expect(Self.outside(gaps, records).isEmpty, "every gap still inside a record")
        #expect(try Self.claimedButStored(fixture, .rotationRate) == 0)
        #expect(
            try fixture.fetch(.rotationRate).last?.time == fixture.sr(100_000_000_000 + 59 * 10_000_000_000 + 999 * 10_000_000))
    }

    @Test func overlappingOrTouchingRecordsOfOneSourceAndReasonBecomeOne() throws {
        let fixture = try StoreFixture(StoreTests.noHold)
        let base = fixture.sr(1_000_000_000)
        let second: Int64 = 1_000_000_000
        let gaps: [(Int64, Int64, SRDeletionReason)] = [
            (0, 1, .systemInitiated), (1, 2, .systemInitiated), (2, 3, .systemInitiated), (2, 4, .systemInitiated),
            (3, 5, .lowDiskSpace),  // another reason: apart
            (6, 7, .systemInitiated),  // data between 4 and 6: apart
        ]
        for (start, end, reason) in gaps {
            fixture.opened.recordGap(
                sensor: .accelerometer, device: "host", from: base + start * second,
                to: base + end * second, reason: reason)
        }
        try fixture.opened.flush()
        let records = try fixture.opened.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max)
            .map { [$0.start - base, $0.end - base, Int64($0.reason.rawValue)] }.sorted { $0.lexicographicallyPrecedes($1) }
        let system = Int64(SRDeletionReason.systemInitiated.rawValue), low = Int64(SRDeletionReason.lowDiskSpace.rawValue)
        #expect(
            records
                == [[0, 4 * second, system], [3 * second, 5 * second, low], [6 * second, 7 * second, system]]
                .sorted { $0.lexicographicallyPrecedes($1) })
    }

    /// A budget no store fits in: every new sample is dropped, the record spans exactly the
    /// dropped samples (not the sample before them, which is stored), and the owner hears of it.
    @Test func aBudgetDropIsReportedAndItsRecordSpansExactlyTheDroppedSamples() throws {
        let events = LossEvents()
        let fixture = try StoreFixture {
            StoreTests.noHold(&$0)
            $0.maxBytes = 1
        }
        try fixture.reopen(onLoss: events.append)
        let stream = try fixture.opened.register(.accelerometer)
        let dropped = Self.noise(fixture, stream, first: 1_000_000_000, count: 500, seed: 4)
        try fixture.opened.flush()
        #expect(try fixture.fetch().isEmpty)
        let records = try fixture.opened.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max)
        #expect(records.map { [$0.start, $0.end] } == [[dropped.first!, dropped.last!]])
        #expect(records.first?.reason == .lowDiskSpace)
        #expect(events.all == [.losing(samples: 500)])
    }

    @Test func fairShareTakesFromTheLargestDownToOneLevel() {
        #expect(FairShare.cuts(["a": 100, "b": 10, "c": 40], excess: 50) == ["a": 50])
        #expect(FairShare.cuts(["a": 100, "b": 10, "c": 40], excess: 90) == ["a": 75, "c": 15])
        #expect(FairShare.cuts(["a": 100, "b": 10], excess: 500) == ["a": 100, "b": 10])
        #expect(FairShare.cuts(["a": 100], excess: 0).isEmpty)
    }
}

/// What a store told its owner about losses (`SensorStore`'s `onLoss`), in order.
final class LossEvents: Sendable {
    private let events = Mutex<[StoreLossEvent]>([])
    @Sendable func append(_ event: StoreLossEvent) { events.withLock { $0.append(event) } }
    var all: [StoreLossEvent] { events.withLock { $0 } }
}
