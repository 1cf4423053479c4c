import Foundation
import SensorSystem
import Synchronization
import Testing

/// The reading threads' lock: one holder at a time reaches the state it owns, and a holder that
/// asks again traps instead of holding two `inout`s to one state.
@Suite struct ConfinementLockTests {
    @Test func twoThreadsNeverHoldItTogether() {
        // The counter is only the lock's (no atomics): increments lost to a race would show.
        let lock = ConfinementLock(0)
        let inside = Atomic<Int>(0)
        let overlaps = Atomic<Int>(0)
        let rounds = 20_000
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            for _ in 0..<rounds {
                lock.withLock { count in
                    if inside.add(1, ordering: .relaxed).newValue > 1 { overlaps.add(1, ordering: .relaxed) }
                    count += 1
                    inside.subtract(1, ordering: .relaxed)
                }
            }
        }
        #expect(lock.withLock { $0 } == 2 * rounds)
        #expect(overlaps.load(ordering: .relaxed) == 0)
    }

    @Test func aBodysResultAndErrorComeOutAndAChangeStays() throws {
        struct Refused: Error {}
        let lock = ConfinementLock([1, 2])
        #expect(lock.withLock { $0.count + 40 } == 42)
        #expect(throws: Refused.self) {
            try lock.withLock { numbers in
                numbers.append(3)
                throw Refused()
            }
        }
        // Free again after the throw (a second holder gets it at once), and what the throwing
        // holder changed before it threw is kept.
        #expect(lock.withLock { $0 } == [1, 2, 3])
    }

    @Test func aHolderAskingAgainTraps() async {
        await #expect(processExitsWith: .failure) {
            let lock = ConfinementLock(0)
            lock.withLock { _ in lock.withLock { $0 += 1 } }
        }
    }

    @Test func theStateIsReleasedWithTheLock() {
        final class Releases: Sendable { let count = Atomic<Int>(0) }
        final class Tracked: Sendable {
            let releases: Releases
            init(_ releases: Releases) { self.releases = releases }
            deinit { releases.count.add(1, ordering: .relaxed) }
        }
        let releases = Releases()
        do {
            let lock = ConfinementLock(Tracked(releases))
            lock.withLock { _ in }
        }
        #expect(releases.count.load(ordering: .relaxed) == 1)
    }
}
