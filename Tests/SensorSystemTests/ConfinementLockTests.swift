import Foundation
import SensorSystem
import Synchronization
import Testing

/// The reading threads' lock: one holder at a time, and a holder can tell that it holds it.
@Suite struct ConfinementLockTests {
    /// A counter that only the lock guards (no atomics): increments lost to a race would show.
    final class Unguarded: @unchecked Sendable {
        var count = 0
    }

    @Test func twoThreadsNeverHoldItTogether() {
        let lock = ConfinementLock()
        let counter = Unguarded()
        let inside = Atomic<Int>(0)
        let overlaps = Atomic<Int>(0)
        let rounds = 20_000
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            for _ in 0..<rounds {
                lock.withLock {
                    if inside.add(1, ordering: .relaxed).newValue > 1 { overlaps.add(1, ordering: .relaxed) }
                    lock.assertHeld()
                    counter.count += 1
                    inside.subtract(1, ordering: .relaxed)
                }
            }
        }
        #expect(counter.count == 2 * rounds)
        #expect(overlaps.load(ordering: .relaxed) == 0)
    }

    @Test func aBodysResultAndErrorComeOut() throws {
        struct Refused: Error {}
        let lock = ConfinementLock()
        #expect(lock.withLock { 41 + 1 } == 42)
        #expect(throws: Refused.self) { try lock.withLock { throw Refused() } }
        // Free again after the throw: a second holder gets it at once.
        #expect(lock.withLock { "free" } == "free")
    }
}
