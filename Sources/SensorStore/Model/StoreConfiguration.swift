import SensorKitModel

/// SensorKit's holding period and retention window for one sensor (docs/configuration.md), in nanoseconds.
public struct RetentionPolicy: Hashable, Sendable {
    /// Data younger than this is not served: a fetch whose range reaches into it returns nothing.
    public var hold: Int64
    /// Data older than this is not served, and purged.
    public var window: Int64

    public init(hold: Int64, window: Int64) {
        precondition(hold >= 0 && window > 0, "hold ≥ 0 and window > 0")
        self.hold = hold
        self.window = window
    }

    public static let hour: Int64 = 3_600_000_000_000
    /// SensorKit's defaults: a 24-hour hold and a 7-day window.
    public static let sensorKit = RetentionPolicy(hold: 24 * hour, window: 7 * 24 * hour)

    /// What a fetch of `(from, to]` may see at SR time `now`: nil when the range reaches into the
    /// hold (SensorKit returns no results, not partial ones), else the range narrowed to the
    /// window and to `notBefore` (inclusive), as an exclusive lower and inclusive upper bound.
    public func visibleRange(from: Int64, to: Int64, notBefore: Int64 = .min, now: Int64) -> (after: Int64, through: Int64)? {
        if hold > 0, to > now.subtractingSaturating(hold) { return nil }
        let windowStart = now.subtractingSaturating(window)
        let after = max(from, windowStart, notBefore == .min ? .min : notBefore - 1)
        guard after < to else { return nil }
        return (after, to)
    }

    /// The per-sample half of the rules at SR time `now`: a sample inside the visible range is
    /// served only when its receive time passes them too (docs/design-notes/0005-clock-steps.md).
    public func admission(notBefore: Int64 = .min, now: Int64) -> SampleAdmission {
        SampleAdmission(releasedThrough: hold > 0 ? now.subtractingSaturating(hold) : .max, notBefore: notBefore)
    }
}

/// Which samples an app may have, by both the sensor's time and the time the daemon received
/// the sample: the hold applies to the later of the two, the first-start rule to the earlier. A
/// sensor that stamps its samples late (a buffered FIFO, a wearable syncing) must not get them
/// out of the hold early, and one that stamps them early must not hand an app data received
/// before that app's first `startRecording`.
public struct SampleAdmission: Hashable, Sendable {
    /// Samples whose later time is after this are still held (`Int64.max` without a hold).
    public let releasedThrough: Int64
    /// Samples whose earlier time is before this predate the app's first start (`.min`: none).
    public let notBefore: Int64

    public init(releasedThrough: Int64, notBefore: Int64) {
        self.releasedThrough = releasedThrough
        self.notBefore = notBefore
    }

    /// Whether one sample passes both rules.
    public func admits(sensorTime: Int64, receiveTime: Int64) -> Bool {
        max(sensorTime, receiveTime) <= releasedThrough && min(sensorTime, receiveTime) >= notBefore
    }

    /// Whether a sample whose sensor time already passed `RetentionPolicy.visibleRange` passes on
    /// its receive time too.
    @inline(__always)
    func admitsReceive(_ receiveTime: Int64) -> Bool {
        receiveTime <= releasedThrough && receiveTime >= notBefore
    }

    /// Whether every receive time in `[lowest, highest]` passes (a chunk that needs no filtering).
    func admitsReceives(lowest: Int64, highest: Int64) -> Bool {
        lowest >= notBefore && highest <= releasedThrough
    }
}

/// How hard commits push data to stable storage. Either way every commit reaches the operating
/// system at once (WAL, `synchronous = NORMAL`), so a killed process loses nothing committed.
public enum Durability: Sendable, Hashable {
    /// A commit is also on the disk within `syncInterval` (a transaction begun under
    /// `synchronous = FULL` syncs it and every commit before), so a power cut loses at most the
    /// commits of the last `syncInterval`. The default.
    case powerLoss
    /// No commit waits for the disk: a power cut may lose the commits since the last WAL
    /// checkpoint. For tests and throw-away captures.
    case processCrash
}

/// Everything the store needs to know up front.
public struct StoreConfiguration: Sendable {
    /// The folder holding `store.sqlite` (created if missing).
    public var directory: String
    /// Hold and window for sensors without an override.
    public var retention: RetentionPolicy = .sensorKit
    /// Per-sensor hold and window (a lab rig may set the hold to 0).
    public var retentionOverrides: [SRSensor: RetentionPolicy] = [:]
    /// How often buffered samples are committed (as pieces of the open chunk), in seconds. The
    /// crash contract — at most the last second lost — needs this ≤ 1 s minus commit time.
    public var commitInterval: Double = 0.5
    /// An open chunk is sealed (encoded with the best codec, replacing its pieces) at this many
    /// samples…
    public var chunkMaxSamples: Int = 65_536
    /// …or when it spans this many nanoseconds of sensor time.
    public var chunkMaxDuration: Int64 = 600_000_000_000
    public var durability: Durability = .powerLoss
    /// With `.powerLoss`, the longest a commit waits to be synced to the disk, in seconds: the
    /// power-cut bound. Syncing every commit cost about ten disk waits (wake-ups) a second.
    public var syncInterval: Double = 5
    /// Evict oldest chunks while the store would occupy more than this many bytes: pages in use,
    /// the WAL and its index, and the samples still to be written (docs/store.md, disk budget).
    public var maxBytes: Int64?
    /// Evict oldest chunks while the file system would have less than this many bytes available
    /// once the samples still to be written are.
    public var minFreeBytes: Int64?
    /// Free space on the file system that samples never take, whatever `minFreeBytes` says: room
    /// for the eviction that frees space and for the `lowDiskSpace` records of samples that could
    /// not be stored.
    public var recordReserveBytes: Int64 = 1 << 20
    /// Deletion records one source (sensor and device) may hold: past it, the source's oldest
    /// chunks and records are folded into `lowDiskSpace` records down to half of it, as under the
    /// disk budget — so a flood of records is bounded without `maxBytes` too (100 000 records are
    /// about 16 MB).
    public var maxRecordsPerSource: Int = 100_000
    /// How often the writer purges by window and budget on its own, in seconds (0: only on `purge()`).
    public var purgeInterval: Double = 60
    /// Appended samples not yet taken by the writer beyond which new batches are dropped (and
    /// recorded as a `systemInitiated` gap) rather than buffered without bound.
    public var maxPendingSamples: Int = 8_000_000
    /// Make each commit interval's samples crash-safe by one append to the hand-over journal and
    /// fold them into SQLite at most every `syncInterval` (docs/store.md, "The hand-over
    /// journal"), instead of a SQLite transaction every `commitInterval`. Off: every tick commits
    /// to SQLite, as before the journal.
    public var handOverJournal = true

    public init(directory: String) { self.directory = directory }

    public func retention(for sensor: SRSensor) -> RetentionPolicy {
        retentionOverrides[sensor] ?? retention
    }

    /// The database file inside `directory`.
    public var databasePath: String { directory + "/store.sqlite" }

    /// The hand-over journal beside the database.
    public var journalPath: String { directory + "/store.handover" }
}
