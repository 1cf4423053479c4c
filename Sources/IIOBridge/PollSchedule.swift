import SensorKitModel

/// When a polled stream's timer fires (docs/iio.md §7): its first deadline, from which it repeats
/// every interval, and the leeway the timer is given.
///
/// The daemon uses `grid`: every polled timer fires at whole multiples of its interval on the clock
/// `DispatchTime` counts, so streams whose intervals divide each other (10 ms, 100 ms, 200 ms, 5 s)
/// fire at the same instants and share a wake-up. Linux libdispatch arms one timerfd for the
/// earliest deadline of all its timers and runs every timer that is due when it expires, so
/// equal deadlines are one wake-up; it ignores the leeway (other backends use it to coalesce).
public struct PollSchedule: Sendable {
    /// Nanoseconds the timer may fire late so the system can coalesce it with other timers.
    public let leeway: Int64
    /// `.strict` timers are never coalesced by a backend that would.
    public let strict: Bool
    /// The first deadline for a stream polled every `interval` ns, given `now` (`DispatchTime`'s
    /// nanoseconds).
    public let firstDeadline: @Sendable (_ now: UInt64, _ interval: Int64) -> UInt64

    public init(leeway: Int64, strict: Bool, firstDeadline: @escaping @Sendable (_ now: UInt64, _ interval: Int64) -> UInt64) {
        self.leeway = leeway
        self.strict = strict
        self.firstDeadline = firstDeadline
    }

    /// Deadlines on the common grid, with a 100 µs leeway: a tenth of the 1 ms jitter budget, so a
    /// backend that used all of it would still leave the budget to scheduling latency, and twice
    /// the 50 µs timer slack Linux already gives an ordinary thread's sleeps, below which a
    /// leeway would buy nothing.
    public static let grid = PollSchedule(leeway: 100_000, strict: false) { now, interval in
        gridInstant(atOrAfter: now, interval: interval)
    }

    /// One strict, zero-leeway timer per stream, first firing an interval after it starts (its own
    /// phase): the bench's baseline for what aligning changes.
    public static let unaligned = PollSchedule(leeway: 0, strict: true) { now, interval in
        now.addingSaturating(UInt64(max(0, interval)))
    }

    /// The first whole multiple of `interval` at or after `now`. The interval comes from
    /// configuration and sysfs: one that is not positive, or a multiple past the clock's range,
    /// gives `now` (the stream is then polled at its own phase rather than never).
    public static func gridInstant(atOrAfter now: UInt64, interval: Int64) -> UInt64 {
        guard interval > 0 else { return now }
        let step = UInt64(interval)
        let remainder = now % step
        guard remainder != 0 else { return now }
        let (next, overflow) = (now - remainder).addingReportingOverflow(step)
        return overflow ? now : next
    }
}
