import SensorKitModel

/// SensorKit's holding period and retention window for one sensor (DESIGN §6.1), in nanoseconds.
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
}

/// How hard commits push data to stable storage.
public enum Durability: Sendable, Hashable {
    /// `synchronous=FULL`: each commit is fsynced, so a power cut loses at most what arrived
    /// since the last commit (≤ the commit interval). The default.
    case powerLoss
    /// `synchronous=NORMAL`: a killed process loses nothing committed, a power cut may lose the
    /// commits since the last WAL checkpoint. For tests and throw-away captures.
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
    /// Evict oldest chunks while the store's pages exceed this many bytes.
    public var maxBytes: Int64?
    /// Evict oldest chunks while the file system has less than this many bytes available.
    public var minFreeBytes: Int64?
    /// How often the writer purges by window and budget on its own, in seconds (0: only on `purge()`).
    public var purgeInterval: Double = 60
    /// Appended samples not yet taken by the writer beyond which new batches are dropped (and
    /// recorded as a `systemInitiated` gap) rather than buffered without bound.
    public var maxPendingSamples: Int = 8_000_000

    public init(directory: String) { self.directory = directory }

    public func retention(for sensor: SRSensor) -> RetentionPolicy {
        retentionOverrides[sensor] ?? retention
    }

    /// The database file inside `directory`.
    public var databasePath: String { directory + "/store.sqlite" }
}
