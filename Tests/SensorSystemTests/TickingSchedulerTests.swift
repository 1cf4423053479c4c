import Dispatch
import Foundation
import Glibc
import SensorKitModel
import SensorSystem
import Synchronization
import Testing

/// The daemon's ticking timers (`TickingScheduler.scheduleTicks`): each tick runs on its queue,
/// always on the one thread the timer keeps (not on a pooled worker started for it), an interval
/// apart, and never again once `cancel` has returned. Real time, short intervals, loose bounds
/// for a loaded machine; the tests wait with `Task.sleep`, not by blocking a thread of the
/// suite's shared pool. The time limits only catch a hang (a `cancel` that never returns): in the
/// full suite, where every test runs at once, these were reported at 161 and 185 s, most of it
/// spent waiting for the pool.
@Suite struct TickingSchedulerTests {
    final class Ticks: Sendable {
        struct Tick {
            let onQueue: Bool
            let thread: pthread_t
            let at: UInt64
        }
        let all = Mutex<[Tick]>([])
        var count: Int { all.withLock { $0.count } }
        func waitFor(_ count: Int, seconds: Double = 30) async throws -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while self.count < count, Date() < deadline { try await Task.sleep(for: .milliseconds(2)) }
            return self.count >= count
        }
    }

    static let key = DispatchSpecificKey<Int>()

    static func queue() -> DispatchQueue {
        let queue = DispatchQueue(label: "test.ticks")
        queue.setSpecific(key: key, value: 7)
        return queue
    }

    @Test(.timeLimit(.minutes(10)))
    func ticksOnItsQueueFromOneThreadAnIntervalApartUntilCancelled() async throws {
        let ticks = Ticks()
        let started = DispatchTime.now().uptimeNanoseconds
        let timer = TickingScheduler().scheduleTicks(on: Self.queue(), every: 50_000_000) {
            ticks.all.withLock {
                $0.append(
                    .init(
                        onQueue: DispatchQueue.getSpecific(key: Self.key) == 7, thread: pthread_self(),
                        at: DispatchTime.now().uptimeNanoseconds))
            }
        }
        #expect(try await ticks.waitFor(4))
        timer.cancel()
        let seen = ticks.all.withLock { $0 }
        #expect(seen.allSatisfy { $0.onQueue }, "every tick runs on the timer's queue")
        #expect(seen.allSatisfy { pthread_equal($0.thread, seen[0].thread) != 0 }, "one thread for every tick")
        #expect(pthread_equal(seen[0].thread, pthread_self()) == 0)
        #expect(seen[0].at - started >= 50_000_000, "the first tick comes an interval after the start")
        for (earlier, later) in zip(seen, seen.dropFirst()) {
            #expect(later.at - earlier.at >= 40_000_000, "ticks keep their interval, none in a burst")
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(ticks.count == seen.count, "no tick after cancel returned")
    }

    @Test(.timeLimit(.minutes(10)))
    func cancelWaitsForARunningBodyAndWorksFromInsideIt() async throws {
        let events = Mutex<[String]>([])
        let slow = TickingScheduler().scheduleTicks(on: Self.queue(), every: 20_000_000) {
            events.withLock { $0.append("body started") }
            usleep(200_000)  // on the timer's own thread
            events.withLock { $0.append("body ended") }
        }
        let start = Date()
        while events.withLock({ $0.isEmpty }), Date().timeIntervalSince(start) < 30 {
            try await Task.sleep(for: .milliseconds(2))
        }
        slow.cancel()
        events.withLock { $0.append("cancel returned") }
        let seen = events.withLock { $0 }
        #expect(seen.dropLast().last == "body ended", "cancel returned once the running body had ended: \(seen)")
        #expect(seen.filter { $0 == "body started" }.count == seen.filter { $0 == "body ended" }.count)
        try await Task.sleep(for: .milliseconds(100))
        #expect(events.withLock { $0 } == seen, "no tick after cancel returned")

        // A body that cancels its own timer: asked, not waited for (no deadlock), and no tick
        // follows. Ticks before the test holds the timer (a loaded machine) count for nothing.
        let ticks = Ticks()
        let own = Mutex<(any ScheduledTimer)?>(nil)
        let timer = TickingScheduler().scheduleTicks(on: Self.queue(), every: 20_000_000) {
            guard let timer = own.withLock({ $0 }) else { return }
            ticks.all.withLock { $0.append(.init(onQueue: true, thread: pthread_self(), at: 0)) }
            timer.cancel()
        }
        own.withLock { $0 = timer }
        #expect(try await ticks.waitFor(1))
        try await Task.sleep(for: .milliseconds(200))
        #expect(ticks.count == 1)
        timer.cancel()
    }

    /// Tests drive the daemon's ticks by hand: the default `scheduleTicks` is a repeating timer of
    /// the scheduler's own kind.
    @Test func aManualSchedulerTicksWhenItsTimeMoves() throws {
        let scheduler = ManualScheduler()
        let ticks = Mutex(0)
        let queue = Self.queue()
        let timer = scheduler.scheduleTicks(on: queue, every: 10_000_000_000) { ticks.withLock { $0 += 1 } }
        try scheduler.advance(by: .seconds(9))
        #expect(ticks.withLock { $0 } == 0)
        try scheduler.advance(by: .seconds(21))
        #expect(ticks.withLock { $0 } == 3)
        timer.cancel()
        try scheduler.advance(by: .seconds(30))
        #expect(ticks.withLock { $0 } == 3)
    }
}
