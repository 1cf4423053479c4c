import SensorSystem
import Synchronization
import Testing

/// A recurring problem is logged at its first occurrence and then summed up with its count, at
/// most once per interval, never once per occurrence.
@Suite struct RecurringProblemsTests {
    final class FakeClock: Sendable {
        let nanoseconds = Mutex<Int64>(0)
        func advance(seconds: Int64) { nanoseconds.withLock { $0 += seconds * 1_000_000_000 } }
    }

    @Test func theFirstIsLoggedTheRestAreCountedAndSummedUpOncePerInterval() {
        let (journal, lines) = Journal.memory()
        let clock = FakeClock()
        let problems = RecurringProblems(journal, interval: 60_000_000_000, now: { clock.nanoseconds.withLock { $0 } })
        for _ in 0..<1000 { problems.report("chip read", "<4>chip read failed: EIO") }
        #expect(lines() == ["<4>chip read failed: EIO"])
        clock.advance(seconds: 61)
        problems.report("chip read", "<4>chip read failed: EIO")
        #expect(lines().count == 2)
        #expect(lines().last == "<4>chip read: 1000 more times in the last 61 s")
        problems.report("other", "<3>something else")
        problems.report("chip read", "<4>chip read failed: EIO")
        clock.advance(seconds: 5)
        problems.flush()
        #expect(Array(lines().dropFirst(2)) == ["<3>something else", "<4>chip read: 1 more time in the last 5 s"])
        problems.flush()
        #expect(lines().count == 4, "nothing new, nothing logged")
    }

    @Test func priorityPrefixesAreJournaldsOwn() {
        let (journal, lines) = Journal.memory()
        journal.error("e"); journal.warning("w"); journal.notice("n"); journal.info("i"); journal.debug("d")
        #expect(lines() == ["<3>e", "<4>w", "<5>n", "<6>i", "<7>d"])
    }
}
