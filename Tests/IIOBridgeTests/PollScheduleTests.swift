import Testing

@testable import IIOBridge

/// The grid polled timers fire on (docs/iio.md §7): pure arithmetic on `DispatchTime` nanoseconds
/// and intervals that come from configuration and sysfs.
@Suite struct PollScheduleTests {
    static let ms: Int64 = 1_000_000

    @Test func theFirstDeadlineIsTheNextWholeMultipleOfTheInterval() {
        #expect(PollSchedule.gridInstant(atOrAfter: 1_234_567_891, interval: 10 * Self.ms) == 1_240_000_000)
        #expect(PollSchedule.gridInstant(atOrAfter: 1_240_000_000, interval: 10 * Self.ms) == 1_240_000_000, "on the grid: now")
        #expect(PollSchedule.gridInstant(atOrAfter: 1_240_000_001, interval: 10 * Self.ms) == 1_250_000_000)
        #expect(PollSchedule.gridInstant(atOrAfter: 0, interval: 10 * Self.ms) == 0)
        #expect(PollSchedule.gridInstant(atOrAfter: 4_999_999_999, interval: 5_000 * Self.ms) == 5_000_000_000)
    }

    /// Streams whose intervals divide each other, started at unrelated moments, fire together:
    /// every deadline of the slower one is a deadline of the faster one.
    @Test func streamsStartedApartShareInstants() {
        let fast = PollSchedule.grid.firstDeadline(3_000_000_017, 10 * Self.ms)
        let slow = PollSchedule.grid.firstDeadline(3_047_000_003, 100 * Self.ms)
        let steps = PollSchedule.grid.firstDeadline(3_051_000_000, 5_000 * Self.ms)
        let fastInstants = Set((0..<1_000).map { fast + UInt64($0) * UInt64(10 * Self.ms) })
        #expect((0..<50).allSatisfy { fastInstants.contains(slow + UInt64($0) * UInt64(100 * Self.ms)) })
        #expect(fastInstants.contains(steps))
        // The baseline does not: each stream keeps the phase it started at.
        let unalignedFast = PollSchedule.unaligned.firstDeadline(3_000_000_017, 10 * Self.ms)
        let unalignedSlow = PollSchedule.unaligned.firstDeadline(3_047_000_003, 100 * Self.ms)
        #expect((unalignedSlow - unalignedFast) % UInt64(10 * Self.ms) != 0)
    }

    /// Hostile intervals: never a trap, never a deadline that would never come.
    @Test func hostileIntervalsFallBackToNow() {
        #expect(PollSchedule.gridInstant(atOrAfter: 5, interval: 0) == 5)
        #expect(PollSchedule.gridInstant(atOrAfter: 5, interval: -10) == 5)
        #expect(PollSchedule.gridInstant(atOrAfter: 5, interval: .min) == 5)
        #expect(PollSchedule.gridInstant(atOrAfter: 5, interval: .max) == UInt64(Int64.max))
        #expect(
            PollSchedule.gridInstant(atOrAfter: .max - 1, interval: 1_000) == UInt64.max - 1,
            "the next multiple is past the clock")
        #expect(PollSchedule.gridInstant(atOrAfter: .max, interval: .max) == UInt64.max, "past the clock as well")
        #expect(PollSchedule.gridInstant(atOrAfter: UInt64(Int64.max) + 2, interval: .max) == UInt64(Int64.max) * 2)
        #expect(PollSchedule.unaligned.firstDeadline(.max - 1, 1_000) == UInt64.max, "saturates")
        #expect(PollSchedule.unaligned.firstDeadline(7, -1) == 7)
    }
}
