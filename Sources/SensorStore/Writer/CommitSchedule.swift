/// When the writer commits (docs/store.md, "When the writer wakes"): a state machine over
/// monotonic nanoseconds that returns what to do, so the timing is tested without waiting.
///
/// The writer wakes only for work. Whenever something is left uncommitted (samples drained from
/// the inbox, a gap record, a record a failed write owes) it asks `uncommitted(at:)`: a tick
/// already owed covers it; otherwise it ticks at once when a whole interval has passed since the
/// last tick, or arms a one-shot timer for the last tick plus the interval. Either way what was
/// left is committed at most `interval` after it was left (plus the timer's leeway and the
/// commit), which is the crash contract; and a store with nothing uncommitted owes no tick, so
/// nothing wakes it (the purge has its own slow timer). Samples carry their own deadline
/// (`dueBy`: their read plus the interval, `AppendInbox`): a tick is owed no later than that, so
/// samples that waited in a source's batch — an IIO chip's half-second hand-over — are committed
/// when they arrive rather than at the end of an interval counted from the last tick; but never
/// sooner than a tenth of the interval after the last tick, so a stream of such batches cannot
/// make the writer commit (and `fdatasync`) in a loop.
struct CommitSchedule: Equatable, Sendable {
    /// What the writer does after `uncommitted(at:)`.
    enum Step: Equatable, Sendable {
        /// Tick now: a whole interval has passed since the last tick (or none ran yet).
        case tickNow
        /// Arm the one-shot timer for this instant (monotonic ns).
        case arm(at: UInt64)
        /// Nothing: a tick already owed (armed or about to run) covers it.
        case wait
    }

    /// Nanoseconds between ticks at the least: the commit interval.
    let interval: UInt64
    /// When the last tick started; nil before the first.
    private(set) var lastTick: UInt64?
    /// When the tick that is owed runs (the armed timer's deadline, or the instant a tick at once
    /// was decided); nil when none is owed.
    private(set) var owed: UInt64?

    /// `seconds` is the configured commit interval, kept within 1 ms and 10⁹ s: a zero, negative
    /// or NaN interval must not make the writer tick in a loop, nor a huge one overflow.
    init(interval seconds: Double) {
        let clamped = seconds.isNaN ? 0.001 : min(max(seconds, 0.001), 1e9)
        interval = UInt64(clamped * 1e9)
    }

    /// Something was left uncommitted at `now`, to be committed by `dueBy` at the latest.
    mutating func uncommitted(at now: UInt64, dueBy: UInt64 = .max) -> Step {
        var due = now
        if let lastTick {
            let end = lastTick.addingReportingOverflow(interval)
            if !end.overflow { due = max(now, min(end.partialValue, dueBy)) }
            let spacing = lastTick.addingReportingOverflow(interval / 10)
            if !spacing.overflow { due = max(due, spacing.partialValue) }
        }
        if let owed, owed <= due { return .wait }
        owed = due
        return due <= now ? .tickNow : .arm(at: due)
    }

    /// A tick that started at `start` has run: it committed everything stored before it.
    mutating func ticked(at start: UInt64) {
        lastTick = start
        owed = nil
    }

    /// The armed timer fired: the tick it was armed for is no longer owed (the writer ticks now
    /// if anything is uncommitted, or there is nothing to do).
    mutating func fired() {
        owed = nil
    }
}
