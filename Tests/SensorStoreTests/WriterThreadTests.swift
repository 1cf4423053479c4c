import Dispatch
import Foundation
import Synchronization
import Testing

@testable import SensorStore

/// The writer's own thread (`WriterThread`): jobs in order, `sync`, alarms at their deadlines,
/// and a wake-up only when there is work (docs/store.md, "When the writer wakes").
@Suite struct WriterThreadTests {
    static let ms: UInt64 = 1_000_000

    /// Alarms rung so far, with the monotonic instant each rang.
    final class Rings: Sendable {
        private let rings = Mutex<[(alarm: WriterThread.Alarm, at: UInt64)]>([])
        func record(_ alarm: WriterThread.Alarm) {
            let now = DispatchTime.now().uptimeNanoseconds
            rings.withLock { $0.append((alarm, now)) }
        }
        var all: [(alarm: WriterThread.Alarm, at: UInt64)] { rings.withLock { $0 } }
        /// Waits (bounded poll) until `count` alarms have rung.
        func wait(for count: Int, seconds: Double = 5) -> Bool {
            let start = Date()
            while all.count < count, Date().timeIntervalSince(start) < seconds { Thread.sleep(forTimeInterval: 0.005) }
            return all.count >= count
        }
    }

    /// Keeps `thread` busy with a job until the semaphore returned is signalled.
    static func occupy(_ thread: WriterThread) -> DispatchSemaphore {
        let release = DispatchSemaphore(value: 0)
        let holding = DispatchSemaphore(value: 0)
        thread.async {
            holding.signal()
            release.wait()
        }
        holding.wait()
        return release
    }

    @Test(.timeLimit(.minutes(3)))
    func jobsRunInOrderOnTheThreadAndSyncWaitsForThemAndRethrows() throws {
        let thread = try WriterThread()
        let order = Mutex<[Int]>([])
        // Queued before the thread starts: its first wake runs them.
        for index in 0..<10 { thread.async { order.withLock { $0.append(index) } } }
        try thread.start(name: "test writer") { _ in }
        defer { thread.stop() }
        for index in 10..<100 { thread.async { order.withLock { $0.append(index) } } }
        #expect(thread.sync { order.withLock { $0 } } == Array(0..<100))
        #expect(thread.sync { thread.isCurrent })
        #expect(!thread.isCurrent)
        struct Refused: Error, Equatable {}
        #expect(throws: Refused.self) { try thread.sync { () throws(Refused) -> Int in throw Refused() } }
    }

    /// A deadline set from another thread wakes the sleeping thread once, when it comes and not
    /// before; an alarm due within another's slack rings in the same wake-up; nothing set, the
    /// thread sleeps.
    @Test(.timeLimit(.minutes(3)))
    func aDeadlineSetFromAnotherThreadWakesTheThreadOnceWhenItComes() throws {
        let rings = Rings()
        let thread = try WriterThread()
        try thread.start(name: "test writer") { rings.record($0) }
        defer { thread.stop() }
        thread.sync {}
        let before = thread.wakes
        let now = DispatchTime.now().uptimeNanoseconds
        thread.set(.drain, at: now + 150 * Self.ms, slack: 60 * Self.ms)
        thread.set(.commit, at: now + 180 * Self.ms)
        #expect(rings.wait(for: 2))
        let rung = rings.all
        #expect(Set(rung.map(\.alarm)) == [.drain, .commit])
        for ring in rung { #expect(ring.at >= now + (ring.alarm == .drain ? 150 : 180) * Self.ms) }
        #expect(thread.wakes - before == 1, "\(thread.wakes - before) wake-ups for two alarms")
        // A cancelled alarm does not ring; with nothing set, the thread stays asleep.
        thread.set(.purge, at: DispatchTime.now().uptimeNanoseconds + 100 * Self.ms)
        thread.cancel(.purge)
        let idle = thread.wakes
        Thread.sleep(forTimeInterval: 0.3)
        #expect(rings.all.count == 2)
        #expect(thread.wakes - idle <= 1)
    }

    /// An alarm set for later than the one the thread sleeps towards does not wake it early, and
    /// an earlier one wakes it in time.
    @Test(.timeLimit(.minutes(3)))
    func anEarlierDeadlineWakesTheThreadEarlierAndALaterOneDoesNot() throws {
        let rings = Rings()
        let thread = try WriterThread()
        try thread.start(name: "test writer") { rings.record($0) }
        defer { thread.stop() }
        thread.sync {}
        let before = thread.wakes
        let now = DispatchTime.now().uptimeNanoseconds
        thread.set(.sync, at: now + 300 * Self.ms)
        thread.set(.purge, at: now + 400 * Self.ms)
        thread.set(.commit, at: now + 100 * Self.ms)
        #expect(rings.wait(for: 3))
        #expect(rings.all.map(\.alarm) == [.commit, .sync, .purge])
        #expect(thread.wakes - before == 3)
    }

    /// A caller stands in for the sleeping thread: the job runs on the caller (it counts as the
    /// writer's thread meanwhile), then what it queued and the alarms it brought due, in order;
    /// the thread does not wake, and an alarm set for later still wakes it when it comes.
    @Test(.timeLimit(.minutes(3)))
    func aCallerStandsInForTheSleepingThreadAndLeavesItsAlarmsSet() throws {
        let rings = Rings()
        let thread = try WriterThread()
        try thread.start(name: "test writer") { rings.record($0) }
        defer { thread.stop() }
        thread.sync {}
        Thread.sleep(forTimeInterval: 0.05)
        let before = thread.wakes
        let order = Mutex<[String]>([])
        let caller = pthread_self()
        thread.runHereOrQueue {
            #expect(pthread_equal(pthread_self(), caller) != 0)
            #expect(thread.isCurrent)
            order.withLock { $0.append("job") }
            thread.async { order.withLock { $0.append("queued") } }
            thread.set(.commit, at: 0)
            thread.set(.purge, at: DispatchTime.now().uptimeNanoseconds + 150 * Self.ms)
        }
        #expect(order.withLock { $0 } == ["job", "queued"])
        #expect(rings.all.map(\.alarm) == [.commit])
        #expect(!thread.isCurrent)
        #expect(thread.borrows == 1)
        #expect(thread.wakes == before)
        #expect(rings.wait(for: 2))
        #expect(rings.all.map(\.alarm) == [.commit, .purge])
        #expect(thread.wakes - before == 1)
    }

    /// While the thread is busy, `runHereOrQueue` queues: the job runs on the thread, in order.
    @Test(.timeLimit(.minutes(3)))
    func aBusyThreadIsNotStoodInFor() throws {
        let thread = try WriterThread()
        try thread.start(name: "test writer") { _ in }
        defer { thread.stop() }
        let release = Self.occupy(thread)
        let ranOnThread = Mutex<Bool?>(nil)
        let caller = pthread_self()
        thread.runHereOrQueue { ranOnThread.withLock { $0 = pthread_equal(pthread_self(), caller) == 0 } }
        #expect(ranOnThread.withLock { $0 } == nil)
        #expect(thread.borrows == 0)
        release.signal()
        thread.sync {}
        #expect(ranOnThread.withLock { $0 } == true)
    }

    /// Jobs queued from other threads while a caller stands in are run by it or, once it has
    /// left, by the woken thread: none is lost, none runs twice.
    @Test(.timeLimit(.minutes(3)))
    func jobsQueuedWhileACallerStandsInAreAllRunOnce() throws {
        let thread = try WriterThread()
        try thread.start(name: "test writer") { _ in }
        defer { thread.stop() }
        let count = Mutex(0)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            for _ in 0..<2000 { thread.async { count.withLock { $0 += 1 } } }
            done.signal()
        }
        for _ in 0..<200 { thread.runHereOrQueue { count.withLock { $0 += 1 } } }
        done.wait()
        thread.sync {}
        #expect(count.withLock { $0 } == 2200)
    }

    /// Before the thread starts, nobody stands in for it: the job is queued and its first wake
    /// runs it, on the thread.
    @Test(.timeLimit(.minutes(3)))
    func nobodyStandsInForAThreadNotYetStarted() throws {
        let thread = try WriterThread()
        let ranOnThread = Mutex<Bool?>(nil)
        thread.runHereOrQueue { ranOnThread.withLock { $0 = thread.isCurrent } }
        #expect(ranOnThread.withLock { $0 } == nil)
        #expect(thread.borrows == 0)
        try thread.start(name: "test writer") { _ in }
        defer { thread.stop() }
        thread.sync {}
        #expect(ranOnThread.withLock { $0 } == true)
        // Started, asleep: now the caller stands in.
        Thread.sleep(forTimeInterval: 0.05)
        thread.runHereOrQueue {}
        #expect(thread.borrows == 1)
    }
}
