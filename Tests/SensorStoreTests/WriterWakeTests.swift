import Foundation
import SensorKitModel
import Synchronization
import Testing

@testable import SensorStore

/// When the writer decides to commit (`CommitSchedule`), at instants the test chooses.
@Suite struct CommitScheduleTests {
    static let second: UInt64 = 1_000_000_000

    @Test func theFirstUncommittedWorkTicksAtOnce() {
        var schedule = CommitSchedule(interval: 0.5)
        #expect(schedule.uncommitted(at: 7 * Self.second) == .tickNow)
        // The tick is owed until it runs: more work meanwhile adds nothing.
        #expect(schedule.uncommitted(at: 7 * Self.second + 1) == .wait)
        schedule.ticked(at: 7 * Self.second + 2)
        #expect(schedule.owed == nil)
    }

    @Test func workWithinAnIntervalOfTheLastTickArmsTheTimerForTheIntervalsEnd() {
        var schedule = CommitSchedule(interval: 0.5)
        _ = schedule.uncommitted(at: 10 * Self.second)
        schedule.ticked(at: 10 * Self.second)
        let due = 10 * Self.second + Self.second / 2
        #expect(schedule.uncommitted(at: 10 * Self.second + 100) == .arm(at: due))
        #expect(schedule.uncommitted(at: 10 * Self.second + 200) == .wait)
        #expect(schedule.uncommitted(at: due - 1) == .wait)
        // The timer fired: a tick runs; nothing more is owed until new work comes.
        schedule.fired()
        schedule.ticked(at: due)
        #expect(schedule.owed == nil)
        #expect(schedule.uncommitted(at: due + 1) == .arm(at: due + Self.second / 2))
    }

    @Test func aBatchASecondTicksOncePerBatchAndNothingBetween() {
        var schedule = CommitSchedule(interval: 0.5)
        for batch in 0..<10 as Range<UInt64> {
            let arrival = (batch + 1) * Self.second
            #expect(schedule.uncommitted(at: arrival) == .tickNow)
            schedule.ticked(at: arrival + 1_000)  // the queued tick starts a µs later
        }
    }

    @Test func theIntervalEndItselfTicksAtOnce() {
        var schedule = CommitSchedule(interval: 0.5)
        schedule.ticked(at: Self.second)
        #expect(schedule.uncommitted(at: Self.second + Self.second / 2) == .tickNow)
    }

    @Test func aFiredTimerWithNothingToDoOwesNothing() {
        var schedule = CommitSchedule(interval: 0.5)
        schedule.ticked(at: Self.second)
        #expect(schedule.uncommitted(at: Self.second + 1) == .arm(at: Self.second + Self.second / 2))
        schedule.fired()
        #expect(schedule.owed == nil)
        #expect(schedule.lastTick == Self.second)
    }

    @Test(arguments: [0, -1, Double.nan, -Double.infinity])
    func aZeroOrGarbageIntervalIsOneMillisecond(interval: Double) {
        var schedule = CommitSchedule(interval: interval)
        #expect(schedule.interval == 1_000_000)
        schedule.ticked(at: Self.second)
        // Never a tick at once right after a tick: a failing tick cannot loop.
        #expect(schedule.uncommitted(at: Self.second) == .arm(at: Self.second + 1_000_000))
    }

    @Test func aHugeIntervalNeitherTrapsNorOverflows() {
        var schedule = CommitSchedule(interval: .infinity)
        #expect(schedule.interval == 1_000_000_000 * Self.second)
        schedule.ticked(at: .max - 5)
        // The interval's end lies beyond the clock's range: tick rather than arm in the past.
        #expect(schedule.uncommitted(at: .max - 4) == .tickNow)
    }
}

/// The real writer on real time: it wakes for work only (docs/store.md, "When the writer wakes").
/// Intervals are short so each test takes about a second; the bounds leave room for a loaded
/// machine.
@Suite struct WriterWakeTests {
    static func fixture(commitInterval: Double, _ adjust: @escaping (inout StoreConfiguration) -> Void = { _ in }) throws
        -> StoreFixture
    {
        try StoreFixture {
            StoreTests.noHold(&$0)
            $0.commitInterval = commitInterval
            adjust(&$0)
        }
    }

    /// Commit ticks the writer ran so far.
    static func ticks(_ fixture: StoreFixture) -> Int {
        let writer = fixture.opened.writer
        return writer.queue.sync { writer.ticks }
    }

    /// Appends `count` samples after `first` (boot ns, before the fake clock's now, so visible).
    static func append(_ fixture: StoreFixture, _ stream: StreamID, first: Int64, count: Int) {
        let times = (0..<Int64(count)).map { first + $0 * 10_000_000 }
        StoreTests.append(fixture, stream, times: times, values: [times, times, times])
    }

    /// Seconds until `fixture` shows `count` committed samples (no flush), nil after `timeout`.
    static func secondsUntilCommitted(_ fixture: StoreFixture, count: Int, timeout: Double = 5) throws -> Double? {
        let start = Date()
        while Date().timeIntervalSince(start) < timeout {
            if try fixture.fetch().count >= count { return Date().timeIntervalSince(start) }
            Thread.sleep(forTimeInterval: 0.005)
        }
        return nil
    }

    @Test(.timeLimit(.minutes(1)))
    func anIdleStoreDoesNotTickYetPurgesOnSchedule() throws {
        let fixture = try Self.fixture(commitInterval: 0.1) {
            $0.retention = RetentionPolicy(hold: 0, window: StoreFixture.hour)
            $0.purgeInterval = 0.25
            $0.chunkMaxSamples = 10
        }
        let stream = try fixture.opened.register(.accelerometer)
        Self.append(fixture, stream, first: 1_000_000_000, count: 20)
        #expect(try Self.secondsUntilCommitted(fixture, count: 20) != nil)
        let afterCommit = Self.ticks(fixture)
        #expect(afterCommit >= 1)
        // Ten commit intervals with nothing to commit (a free-running timer ticks ten times).
        Thread.sleep(forTimeInterval: 1)
        #expect(Self.ticks(fixture) == afterCommit)

        // The window still holds on the idle store: the purge timer runs on its own.
        // (Past the window, but not past the records' own second window.)
        fixture.clock.advance(nanoseconds: 3 * StoreFixture.hour / 2)
        let start = Date()
        var records: [StoredDeletionRecord] = []
        while records.isEmpty, Date().timeIntervalSince(start) < 5 {
            Thread.sleep(forTimeInterval: 0.02)
            records = try fixture.opened.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max)
        }
        #expect(records.map(\.reason) == [.ageLimit])
        #expect(Self.ticks(fixture) == afterCommit)
    }

    @Test(.timeLimit(.minutes(1)))
    func aBatchEveryIntervalAndAHalfIsCommittedAtOnceByOneTickEach() throws {
        let fixture = try Self.fixture(commitInterval: 0.2)
        let stream = try fixture.opened.register(.accelerometer)
        let batches = 5
        for batch in 0..<batches {
            let appended = Date()
            Self.append(fixture, stream, first: 1_000_000_000 + Int64(batch) * 100_000_000, count: 10)
            let latency = try #require(try Self.secondsUntilCommitted(fixture, count: 10 * (batch + 1)))
            // At once, not at the next tick of a timer: well inside the interval.
            #expect(latency < 0.15, "batch \(batch) committed after \(latency) s")
            Thread.sleep(forTimeInterval: max(0, 0.3 - Date().timeIntervalSince(appended)))
        }
        #expect(Self.ticks(fixture) == batches)
    }

    @Test(.timeLimit(.minutes(1)))
    func appendsSoonAfterATickAreCommittedTogetherByTheArmedTimerWithinTheInterval() throws {
        let fixture = try Self.fixture(commitInterval: 0.3)
        let stream = try fixture.opened.register(.accelerometer)
        Self.append(fixture, stream, first: 1_000_000_000, count: 10)
        #expect(try Self.secondsUntilCommitted(fixture, count: 10) != nil)
        // Two more batches within the interval after that tick: one armed tick commits both.
        let appended = Date()
        Self.append(fixture, stream, first: 1_100_000_000, count: 10)
        Thread.sleep(forTimeInterval: 0.05)
        Self.append(fixture, stream, first: 1_200_000_000, count: 10)
        _ = try #require(try Self.secondsUntilCommitted(fixture, count: 30))
        let latency = Date().timeIntervalSince(appended)
        #expect(latency < 0.3 + 0.15, "committed \(latency) s after the append")
        #expect(Self.ticks(fixture) == 2)
        // And then nothing: two intervals idle.
        Thread.sleep(forTimeInterval: 0.6)
        #expect(Self.ticks(fixture) == 2)
    }

    @Test(.timeLimit(.minutes(1)))
    func aGapRecordIsCommittedWithoutAFlush() throws {
        let fixture = try Self.fixture(commitInterval: 0.2)
        _ = try fixture.opened.register(.accelerometer)
        fixture.opened.recordGap(
            sensor: .accelerometer, device: "host", from: fixture.sr(1_000_000_000),
            to: fixture.sr(2_000_000_000), reason: .systemInitiated)
        let start = Date()
        var records: [StoredDeletionRecord] = []
        while records.isEmpty, Date().timeIntervalSince(start) < 5 {
            Thread.sleep(forTimeInterval: 0.005)
            records = try fixture.opened.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max)
        }
        #expect(records.count == 1)
        #expect(Date().timeIntervalSince(start) < 0.2 + 0.15)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(Self.ticks(fixture) == 1)
    }
}

/// How an append starts the writer's drain (`AppendInbox.DrainStart`), at instants the test sets.
@Suite struct DrainStartTests {
    static let batch = SampleBatch(boot: BootID("b"), sensorTimes: [1, 2], receiveTimes: [1, 2], columns: [.integers([1, 2])])

    /// Pushes, then lets the writer take the batch and end its run of drains.
    static func deliver(_ inbox: AppendInbox) -> AppendInbox.DrainStart? {
        let start = inbox.push(batch, to: StreamID(rawValue: 1))
        #expect(!inbox.takeOrFinish().isEmpty)
        #expect(inbox.takeOrFinish().isEmpty)
        return start
    }

    @Test func theStreamsOfOneDeliveryStartTheWriterAtOnceAndAFloodAfterTheGrace() {
        let clock = Mutex<UInt64>(5_000_000_000)
        let inbox = AppendInbox(maxPendingSamples: 1_000) { clock.withLock { $0 } }
        // A burst while a drain is scheduled schedules nothing more.
        #expect(inbox.push(Self.batch, to: StreamID(rawValue: 1)) == .now)
        #expect(inbox.push(Self.batch, to: StreamID(rawValue: 2)) == nil)
        #expect(!inbox.takeOrFinish().isEmpty)
        #expect(inbox.takeOrFinish().isEmpty)
        // Further streams of the same delivery, each a moment after the writer went idle: at once.
        for _ in 1..<AppendInbox.floodRestarts {
            clock.withLock { $0 += 20_000 }
            #expect(Self.deliver(inbox) == .now)
        }
        // Restarted that often within a millisecond in a row: a flood; the grace gathers batches.
        clock.withLock { $0 += AppendInbox.floodWindow - 1 }
        #expect(Self.deliver(inbox) == .afterGrace)
        clock.withLock { $0 += 20_000 }
        #expect(Self.deliver(inbox) == .afterGrace)
        // The next delivery after a pause (exactly the window counts as one): at once, no timer.
        clock.withLock { $0 += AppendInbox.floodWindow }
        #expect(Self.deliver(inbox) == .now)
        clock.withLock { $0 += 20_000 }
        #expect(Self.deliver(inbox) == .now)
    }
}
