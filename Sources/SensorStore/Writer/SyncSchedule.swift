/// Which commits wait for the disk (docs/store.md, crash contract): a value over monotonic
/// nanoseconds, so the rule is tested without a disk or a clock.
///
/// Every commit reaches the operating system (WAL mode with `synchronous = NORMAL`), so a killed
/// process loses nothing committed. Only a power cut can lose commits the disk has not yet been
/// told to keep, and each `fdatasync` is a wait and a wake-up: syncing every half-second commit
/// cost the daemon about ten disk waits a second. So a transaction is synced (begun under
/// `synchronous = FULL`, whose commit `fdatasync`s the WAL and with it every commit before) only
/// when the oldest unsynced commit would otherwise stay unsynced longer than `interval`; and when
/// no transaction comes by then, the writer syncs on its own at that deadline (`idleSyncDue`).
/// A power cut therefore loses at most the last `interval` of commits.
struct SyncSchedule: Equatable, Sendable {
    /// The longest a commit stays unsynced, in nanoseconds.
    let interval: UInt64
    /// How long a transaction may stay open (the commit interval plus slack): a transaction that
    /// begins now commits by `now + transactionSpan`, so it is synced when the deadline falls
    /// before that.
    let transactionSpan: UInt64
    /// When the oldest commit not yet synced was made; nil when everything committed is synced.
    private(set) var unsyncedSince: UInt64?

    /// `seconds` is the configured sync interval, kept within 1 ms and 10⁹ s like the commit
    /// interval, so a zero or NaN setting cannot make every commit wait nor a huge one overflow.
    init(interval seconds: Double, commitInterval: Double) {
        func nanoseconds(_ value: Double) -> UInt64 {
            UInt64((value.isNaN ? 0.001 : min(max(value, 0.001), 1e9)) * 1e9)
        }
        interval = nanoseconds(seconds)
        transactionSpan = nanoseconds(commitInterval) / 2 * 3
    }

    /// The instant by which the unsynced commits must be synced; nil when none is owed.
    var deadline: UInt64? {
        unsyncedSince.map { $0 &+ min(interval, .max - $0) }
    }

    /// Whether a transaction beginning at `now` must be synced.
    func syncs(beginningAt now: UInt64) -> Bool {
        guard let deadline else { return false }
        let (end, overflow) = now.addingReportingOverflow(transactionSpan)
        return overflow || deadline <= end
    }

    /// A transaction committed at `now`, synced or not.
    mutating func committed(at now: UInt64, synced: Bool) {
        if synced {
            unsyncedSince = nil
        } else if unsyncedSince == nil {
            unsyncedSince = now
        }
    }

    /// Whether the writer, idle at `now`, must sync on its own: the deadline has come.
    func idleSyncDue(at now: UInt64) -> Bool {
        guard let deadline else { return false }
        return deadline <= now
    }
}
