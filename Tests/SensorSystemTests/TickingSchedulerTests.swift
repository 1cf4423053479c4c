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
/// for a loaded machine.
@Suite struct TickingSchedulerTests {
    final class Ticks: Sendable {
        struct Tick {
            let onQueue: Bool
            let thread: pthread_t
            let at: UInt64
        }
        let all = Mutex<[Tick]>([])
        var count: Int { all.withLock { $0.count } }
        func waitFor(_ count: Int, seconds: Double = 5) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while self.count < count, Date() < deadline { usleep(2_000) }
            return self.count >= count
        }
    }

    static let key = DispatchSpecificKey<Int>()

    static func queue() -> DispatchQueue {
        let queue = DispatchQueue(label: "test.ticks")
        queue.setSpecific(key: key, value: 7)
        return queue
    }

    @Test(.timeLimit(.minutes(1)))
    func ticksOnItsQueueFromOneThreadAnIntervalApartUntilCancelled() throws {
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
        #expect(ticks.waitFor(4))
        timer.cancel()
        let seen = ticks.all.withLock { $0 }
        #expect(seen.allSatisfy { $0.onQueue }, "every tick runs on the timer's queue")
        #expect(seen.allSatisfy { pthread_equal($0.thread, seen[0].thread) != 0 }, "one thread for every tick")
        #expect(pthread_equal(seen[0].thread, pthread_self()) == 0)
        #expect(seen[0].at - started >= 50_000_000, "the first tick comes an interval after the start")
        for (earlier, later) in zip(seen, seen.dropFirst()) {
            #expect(later.at - earlier.at >= 40_000_000, "ticks keep their interval, none in a burst")
        }
        usleep(200_000)
        #expect(ticks.count == seen.count, "no tick after cancel returned")
    }

    @Test(.timeLimit(.minutes(1)))
    func cancelWaitsForARunningBodyAndWorksFromInsideIt() throws {
        let events = Mutex<[String]>([])
        let entered = DispatchSemaphore(value: 0)
        let slow = TickingScheduler().scheduleTicks(on: Self.queue(), every: 20_000_000) {
            events.withLock { $0.append("body started") }
            entered.signal()
            usleep(200_000)
            events.withLock { $0.append("body ended") }
        }
        #expect(entered.wait(timeout: .now() + 5) == .success)
        slow.cancel()
        events.withLock { $0.append("cancel returned") }
        #expect(events.withLock { $0 } == ["body started", "body ended", "cancel returned"])

        // A body that cancels its own timer: asked, not waited for (no deadlock), and no tick follows.
        let ticks = Ticks()
        let own = Mutex<(any ScheduledTimer)?>(nil)
        let timer = TickingScheduler().scheduleTicks(on: Self.queue(), every: 20_000_000) {
            ticks.all.withLock { $0.append(.init(onQueue: true, thread: pthread_self(), at: 0)) }
            own.withLock { $0 }?.cancel()
        }
        own.withLock { $0 = timer }
        #expect(ticks.waitFor(1))
        usleep(200_000)
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
