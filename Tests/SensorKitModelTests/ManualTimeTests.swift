import Dispatch
import SensorKitModel
import Synchronization
import Testing

/// The time daemon-level tests move by hand: `advance(by:)` runs what falls due, in order, on
/// its queue, with the clocks at its deadline, and returns only when it has run.
@Suite struct ManualTimeTests {
    let ms: Int64 = 1_000_000

    @Test func timersRunInDeadlineOrderWithTheClockAtTheirDeadlineBeforeAdvanceReturns() throws {
        let time = ManualTime()
        let startBoot = time.boottimeNanoseconds()
        let startUptime = time.uptimeNanoseconds()
        let queue = DispatchQueue(label: "test.timers")
        let seen = Mutex<[String]>([])
        func note(_ name: String) -> @Sendable () -> Void {
            { [time] in
                let boot = (time.boottimeNanoseconds() - startBoot) / 1_000_000
                let uptime = (time.uptimeNanoseconds() - startUptime) / 1_000_000
                seen.withLock { $0.append("\(name)@\(boot)/\(uptime)") }
            }
        }
        let late = time.schedule(on: queue, after: 30 * ms, repeating: nil, note("late"))
        let early = time.schedule(on: DispatchQueue(label: "test.other"), after: 10 * ms, repeating: nil, note("early"))
        let tick = time.schedule(on: queue, after: 0, repeating: 20 * ms, note("tick"))
        let never = time.schedule(on: queue, after: 5 * ms, repeating: nil, note("cancelled"))
        never.cancel()
        // Nothing runs until time moves; when `advance` returns, all that fell due has run.
        #expect(seen.withLock { $0 }.isEmpty)
        try time.advance(by: .milliseconds(45))
        #expect(
            seen.withLock { $0 } == ["tick@0/0", "early@10/10", "tick@20/20", "late@30/30", "tick@40/40"],
            "\(seen.withLock { $0 })")
        #expect(time.boottimeNanoseconds() - startBoot == 45 * ms && time.uptimeNanoseconds() - startUptime == 45 * ms)
        // The one-shot timers are gone; the repeating one stays until cancelled.
        #expect(time.pendingTimers == 1)
        tick.cancel()
        try time.advance(by: .seconds(1))
        #expect(seen.withLock { $0 }.count == 5)
        _ = (late, early)
    }

    @Test func aTimerThatDoesNotFinishIsReportedNotWaitedForever() throws {
        let time = ManualTime()
        let release = DispatchSemaphore(value: 0)
        let finished = Mutex(false)
        let wedged = DispatchQueue(label: "test.wedged")
        _ = time.schedule(on: wedged, after: 10 * ms, repeating: nil) {
            release.wait()
            finished.withLock { $0 = true }
        }
        #expect(throws: ManualScheduler.Stalled.self) { try time.advance(by: .seconds(1), timeout: .milliseconds(50)) }
        // Time stopped at the stuck timer's deadline, not at the end of the advance.
        #expect(time.uptimeNanoseconds() == ManualScheduler().uptimeNanoseconds() + 10 * ms)
        release.signal()
        wedged.sync {}
        #expect(finished.withLock { $0 })
    }

    @Test func theAsynchronousAdvanceStillDoesNotWait() {
        let scheduler = ManualScheduler()
        let release = DispatchSemaphore(value: 0)
        let ran = Mutex(0)
        let blocked = DispatchQueue(label: "test.blocked")
        _ = scheduler.schedule(on: blocked, after: 0, repeating: nil) {
            release.wait()
            ran.withLock { $0 += 1 }
        }
        scheduler.advance(seconds: 1)  // returns though the body blocks
        #expect(ran.withLock { $0 } == 0)
        release.signal()
        blocked.sync {}
        #expect(ran.withLock { $0 } == 1)
    }

    @Test func absurdDurationsSaturate() throws {
        let time = ManualTime()
        let queue = DispatchQueue(label: "test.far")
        let ran = Mutex(0)
        _ = time.schedule(on: queue, after: .max, repeating: .max) { ran.withLock { $0 += 1 } }
        try time.advance(by: .seconds(Int64.max))
        #expect(ran.withLock { $0 } == 0 && time.uptimeNanoseconds() == .max)
        try time.advance(by: .seconds(-5))
        #expect(time.uptimeNanoseconds() == .max)
    }
}
