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

    /// Samples read an interval ago (an IIO chip's half-second hand-over) are due when they
    /// arrive, not at the end of an interval counted from the last tick — but never within a
    /// tenth of the interval after it; fresh samples are due at their own deadline.
    @Test func samplesAreCommittedByTheirOwnDeadline() {
        let ms: UInt64 = 1_000_000
        var schedule = CommitSchedule(interval: 0.5)
        schedule.ticked(at: 10 * Self.second)
        #expect(
            schedule.uncommitted(at: 10 * Self.second + 10 * ms, dueBy: 9 * Self.second) == .arm(at: 10 * Self.second + 50 * ms))
        schedule.fired()
        schedule.ticked(at: 10 * Self.second + 50 * ms)
        #expect(schedule.uncommitted(at: 10 * Self.second + 300 * ms, dueBy: 10 * Self.second + 300 * ms) == .tickNow)
        schedule.ticked(at: 10 * Self.second + 300 * ms)
        // Due before the interval's end: armed for the deadline; an earlier deadline arms earlier.
        #expect(
            schedule.uncommitted(at: 10 * Self.second + 400 * ms, dueBy: 10 * Self.second + 600 * ms)
                == .arm(at: 10 * Self.second + 600 * ms))
        #expect(schedule.uncommitted(at: 10 * Self.second + 450 * ms, dueBy: 10 * Self.second + 700 * ms) == .wait)
        #expect(
            schedule.uncommitted(at: 10 * Self.second + 460 * ms, dueBy: 10 * Self.second + 500 * ms)
                == .arm(at: 10 * Self.second + 500 * ms))
        // Due after it: the interval's end comes first.
        schedule.fired()
        schedule.ticked(at: 10 * Self.second + 500 * ms)
        #expect(schedule.uncommitted(at: 10 * Self.second + 510 * ms, dueBy: 12 * Self.second) == .arm(at: 11 * Self.second))
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
        return writer.thread.sync { writer.ticks }
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

    @Test(.timeLimit(.minutes(3)))
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

    @Test(.timeLimit(.minutes(3)))
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

    /// Appends samples just read (received at the fake clock's now, which stands still).
    static func appendFresh(_ fixture: StoreFixture, _ stream: StreamID, first: Int64, count: Int) {
        let times = (0..<Int64(count)).map { first + $0 * 10_000_000 }
        let now = fixture.boottime
        StoreTests.append(fixture, stream, times: times, values: [times, times, times], receiveDelay: now - first)
    }

    @Test(.timeLimit(.minutes(3)))
    func appendsSoonAfterATickAreCommittedTogetherByTheArmedTimerWithinTheInterval() throws {
        let fixture = try Self.fixture(commitInterval: 0.3)
        let stream = try fixture.opened.register(.accelerometer)
        Self.appendFresh(fixture, stream, first: 1_000_000_000, count: 10)
        #expect(try Self.secondsUntilCommitted(fixture, count: 10) != nil)
        // Two more batches within the interval after that tick: one armed tick commits both.
        let appended = Date()
        Self.appendFresh(fixture, stream, first: 1_100_000_000, count: 10)
        Thread.sleep(forTimeInterval: 0.05)
        Self.appendFresh(fixture, stream, first: 1_200_000_000, count: 10)
        _ = try #require(try Self.secondsUntilCommitted(fixture, count: 30))
        let latency = Date().timeIntervalSince(appended)
        #expect(latency < 0.3 + 0.15, "committed \(latency) s after the append")
        #expect(Self.ticks(fixture) == 2)
        // And then nothing: two intervals idle.
        Thread.sleep(forTimeInterval: 0.6)
        #expect(Self.ticks(fixture) == 2)
    }

    /// The writer sleeps until its commit deadline: ten batches of samples just read, 40 ms apart
    /// (a source delivering 25 times a second), wake it once per commit interval, not once per
    /// batch, and each is committed within the interval of its read.
    @Test(.timeLimit(.minutes(3)))
    func freshBatchesWakeTheWriterOncePerIntervalNotPerBatch() throws {
        let fixture = try Self.fixture(commitInterval: 0.3)
        let stream = try fixture.opened.register(.accelerometer)
        var appended: [Date] = []
        for batch in 0..<10 {
            appended.append(Date())
            Self.appendFresh(fixture, stream, first: 1_000_000_000 + Int64(batch) * 100_000_000, count: 10)
            Thread.sleep(forTimeInterval: 0.04)
        }
        _ = try #require(try Self.secondsUntilCommitted(fixture, count: 100))
        let latency = Date().timeIntervalSince(appended[9])
        #expect(latency < 0.3 + 0.15, "the last batch committed \(latency) s after its append")
        let writer = fixture.opened.writer
        let drains = writer.thread.sync { writer.drains }
        // 0.4 s of appends: a drain at each deadline, 0.3 s apart (two, or three on a slow machine).
        #expect(drains <= 3, "\(drains) drains for 10 batches")
        #expect(Self.ticks(fixture) <= 3)
    }

    /// Samples that waited in their source's batch for an interval are due when they arrive:
    /// committed at once, not at the end of an interval counted from the last tick (what an IIO
    /// chip hands over every half second would otherwise wait up to one more interval).
    @Test(.timeLimit(.minutes(3)))
    func samplesReadAnIntervalAgoAreCommittedAtOnceEvenRightAfterATick() throws {
        let fixture = try Self.fixture(commitInterval: 0.4)
        let stream = try fixture.opened.register(.accelerometer)
        Self.append(fixture, stream, first: 1_000_000_000, count: 10)
        #expect(try Self.secondsUntilCommitted(fixture, count: 10) != nil)
        Thread.sleep(forTimeInterval: 0.06)
        Self.append(fixture, stream, first: 1_100_000_000, count: 10)
        let latency = try #require(try Self.secondsUntilCommitted(fixture, count: 20))
        #expect(latency < 0.2, "committed \(latency) s after the append")
        #expect(Self.ticks(fixture) == 2)
    }

    /// A hand-over of two streams' due batches (an IIO chip's, `handingOver`) is drained and
    /// committed by the handing thread itself while the writer's thread sleeps: no wake-up, one
    /// commit, visible as soon as `handingOver` returns; and nothing wakes the writer afterwards
    /// (no alarm left set for a tick that already ran).
    @Test(.timeLimit(.minutes(3)))
    func aHandOverOfTwoStreamsIsCommittedByTheHandingThreadWithoutWakingTheWriter() throws {
        let fixture = try Self.fixture(commitInterval: 0.3)
        let first = try fixture.opened.register(.accelerometer)
        var other = StreamDescriptor.accelerometer
        other.source["chip"] = .string("bmi160")
        let second = try fixture.opened.register(other)
        let thread = fixture.opened.writer.thread
        let ticks = Self.ticks(fixture)
        for round in 0..<3 {
            // Spaced by more than the interval (each hand-over is due at once), and the writer
            // asleep again after what woke it last.
            Thread.sleep(forTimeInterval: 0.35)
            let wakes = thread.wakes
            let borrows = thread.borrows
            let start = 1_000_000_000 + Int64(round) * 1_000_000_000
            fixture.opened.handingOver {
                Self.append(fixture, first, first: start, count: 10)
                Self.append(fixture, second, first: start + 1, count: 10)
            }
            #expect(thread.borrows - borrows == 1)
            #expect(thread.wakes - wakes == 0, "round \(round): \(thread.wakes - wakes) wake-ups")
            // (A query reaching the hand-over journal wakes the writer to fold it: not counted.)
            #expect(try fixture.fetch().count == 20 * (round + 1), "round \(round): not committed on return")
        }
        let idle = thread.wakes
        Thread.sleep(forTimeInterval: 0.6)
        #expect(thread.wakes == idle)
        #expect(Self.ticks(fixture) == ticks + 3)
    }

    /// While the writer's thread is busy, a hand-over is queued to it as before: the handing
    /// thread does not wait for the writer's work.
    @Test(.timeLimit(.minutes(3)))
    func aHandOverWhileTheWriterIsBusyIsQueuedToIt() throws {
        let fixture = try Self.fixture(commitInterval: 0.3)
        let stream = try fixture.opened.register(.accelerometer)
        let thread = fixture.opened.writer.thread
        let release = WriterThreadTests.occupy(thread)
        let borrows = thread.borrows
        fixture.opened.handingOver { Self.append(fixture, stream, first: 1_000_000_000, count: 10) }
        #expect(thread.borrows == borrows)
        #expect(try fixture.fetch().isEmpty)
        release.signal()
        #expect(try Self.secondsUntilCommitted(fixture, count: 10) != nil)
    }

    /// The daemon replaces the timeline every 10 s: that wakes no writer, and the next append
    /// looks its boot up in the new timeline.
    @Test(.timeLimit(.minutes(3)))
    func aReplacedTimelineWakesNoWriter() throws {
        let fixture = try Self.fixture(commitInterval: 0.2)
        let stream = try fixture.opened.register(.accelerometer)
        Self.append(fixture, stream, first: 1_000_000_000, count: 10)
        _ = try #require(try Self.secondsUntilCommitted(fixture, count: 10))
        Thread.sleep(forTimeInterval: 0.1)
        let thread = fixture.opened.writer.thread
        let wakes = thread.wakes
        for _ in 0..<3 { fixture.opened.updateTimeline(fixture.timeline) }
        Thread.sleep(forTimeInterval: 0.3)
        #expect(thread.wakes == wakes)
        Self.append(fixture, stream, first: 2_000_000_000, count: 10)
        _ = try #require(try Self.secondsUntilCommitted(fixture, count: 20))
    }

    @Test(.timeLimit(.minutes(3)))
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
        #expect(!inbox.takeOrFinish().entries.isEmpty)
        #expect(inbox.takeOrFinish().entries.isEmpty)
        return start
    }

    /// Samples just read wait for their deadline (one timer armed for the earliest); a batch
    /// already due, or a backlog, starts the drain at once.
    @Test func freshSamplesArmTheDeadlineAndDueOnesStartTheDrain() {
        let ms: UInt64 = 1_000_000
        let clock = Mutex<UInt64>(5_000 * ms)
        let inbox = AppendInbox(maxPendingSamples: 100_000, commitInterval: 500 * ms) { clock.withLock { $0 } }
        let armed = Mutex<[UInt64]>([])
        func push(_ batch: SampleBatch, readAgo: UInt64) -> AppendInbox.DrainStart? {
            inbox.push(batch, to: StreamID(rawValue: 1), readAgo: readAgo) { deadline in armed.withLock { $0.append(deadline) } }
        }
        #expect(push(Self.batch, readAgo: 0) == nil)
        #expect(armed.withLock { $0 } == [5_500 * ms])
        // Later batches due later: covered by the armed deadline.
        clock.withLock { $0 += 100 * ms }
        #expect(push(Self.batch, readAgo: 0) == nil)
        #expect(push(Self.batch, readAgo: 50 * ms) == nil)
        // One due earlier arms it earlier.
        #expect(push(Self.batch, readAgo: 300 * ms) == nil)
        #expect(armed.withLock { $0 } == [5_500 * ms, 5_300 * ms])
        // The deadline: the writer drains, and learns the earliest deadline of what it took.
        clock.withLock { $0 = 5_300 * ms }
        #expect(inbox.deadlineReached())
        let taken = inbox.takeOrFinish()
        #expect(taken.entries.count == 1 && taken.due == 5_300 * ms)
        #expect(inbox.takeOrFinish().entries.isEmpty)
        // Read an interval ago (a half-second hand-over), or due within a tenth of it: at once.
        clock.withLock { $0 += 100 * ms }
        #expect(push(Self.batch, readAgo: 500 * ms) == .now)
        #expect(inbox.takeOrFinish().due == 5_400 * ms)
        #expect(inbox.takeOrFinish().entries.isEmpty)
        clock.withLock { $0 += 100 * ms }
        #expect(push(Self.batch, readAgo: 450 * ms) == .now)
        #expect(!inbox.takeOrFinish().entries.isEmpty)
        #expect(inbox.takeOrFinish().entries.isEmpty)
        // A backlog is stored as it comes.
        clock.withLock { $0 += 100 * ms }
        let times = (0..<Int64(AppendInbox.backlogSamples)).map { $0 }
        let big = SampleBatch(boot: BootID("b"), sensorTimes: times, receiveTimes: times, columns: [.integers(times)])
        #expect(push(big, readAgo: 0) == .now)
        #expect(armed.withLock { $0 }.count == 2)
        // The timer firing while a drain is scheduled starts no second one.
        #expect(!inbox.deadlineReached())
    }

    @Test func theStreamsOfOneDeliveryStartTheWriterAtOnceAndAFloodAfterTheGrace() {
        let clock = Mutex<UInt64>(5_000_000_000)
        let inbox = AppendInbox(maxPendingSamples: 1_000) { clock.withLock { $0 } }
        // A burst while a drain is scheduled schedules nothing more.
        #expect(inbox.push(Self.batch, to: StreamID(rawValue: 1)) == .now)
        #expect(inbox.push(Self.batch, to: StreamID(rawValue: 2)) == nil)
        #expect(!inbox.takeOrFinish().entries.isEmpty)
        #expect(inbox.takeOrFinish().entries.isEmpty)
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
