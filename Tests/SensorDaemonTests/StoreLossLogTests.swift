import SensorStore
import SensorSystem
import Synchronization
import Testing

@testable import SensorDaemon

/// A sustained loss of new samples is logged when it starts, summed up while it goes on and
/// logged when it ends — never silent, never a line per commit.
@Suite struct StoreLossLogTests {
    @Test func aLossIsLoggedAtItsStartSummedUpWhileItLastsAndLoggedWhenItEnds() {
        let (journal, lines) = Journal.memory()
        let clock = Mutex<Int64>(0)
        let log = StoreLossLog(journal, interval: 60_000_000_000, now: { clock.withLock { $0 } })
        func at(_ seconds: Int64, _ event: StoreLossEvent) {
            clock.withLock { $0 = seconds * 1_000_000_000 }
            log.on(event)
        }
        at(0, .recovered)
        #expect(lines().isEmpty, "no loss, nothing to end")
        // 90 s of losses, one report per half-second commit.
        for tick in 0..<180 { at(Int64(tick) / 2, .losing(samples: 100)) }
        #expect(lines().count == 2, "\(lines())")
        #expect(lines().first?.hasPrefix("<4>store: losing new samples (100 so far)") == true)
        #expect(lines().last == "<4>\(StoreLossLog.cause): 120 more times in the last 60 s")
        at(95, .recovered)
        #expect(
            Array(lines().dropFirst(2)) == [
                "<4>\(StoreLossLog.cause): 59 more times in the last 35 s",
                "<5>store: writing new samples again after losing 18000 in 95.0 s",
            ])
        at(96, .recovered)
        #expect(lines().count == 4, "the end is logged once")
        at(100, .losing(samples: 5))
        #expect(
            lines().count == 5 && lines().last?.hasPrefix("<4>store: losing new samples (5 so far)") == true,
            "a new loss is logged at its start again")
    }
}
