/// The `health` reply (docs/protocol.md §3.5): what each stream recorded, how fast, what it
/// lost and why, and the store's use of its budget — what `sensorkitctl status` and `report` show.
/// Times are SR ns; every count comes from the store's catalog, not from scanning samples.
public struct WireHealth: Codable, Hashable, Sendable {
    /// SR ns now, when the figures were taken.
    public var now: Int64
    /// The detail range `(from, to]` the `spans` and `records` cover (the last day unless the
    /// request named one).
    public var from: Int64
    public var to: Int64
    public var streams: [WireStreamHealth]
    public var store: WireStoreUse?
    /// Streams left out to keep the reply small (`WireHealth.maxStreams`).
    public var omittedStreams: Int?

    /// Bounds that keep a reply well under the protocol's 4 MiB frame (docs/protocol.md §6.2).
    public static let maxStreams = 32
    public static let maxSpansPerStream = 720
    public static let maxRecordsPerStream = 500
    /// The widest detail range a request may ask for (one window and a day).
    public static let maxRange: Int64 = 8 * 86_400_000_000_000

    public init(now: Int64, from: Int64, to: Int64, streams: [WireStreamHealth], store: WireStoreUse?) {
        self.now = now
        self.from = from
        self.to = to
        self.streams = streams
        self.store = store
    }
}

public struct WireStreamHealth: Codable, Hashable, Sendable {
    public var sensor: String
    public var device: String
    /// Samples per second the live source should deliver (absent: not attached now, or its rate
    /// is unknown).
    public var expectedRate: Double?
    /// Some app holds a stake in the sensor.
    public var recording: Bool
    /// SR ns of the newest committed sample.
    public var lastSample: Int64?
    /// Samples stored in the last 60 s and the last 24 h before `now`.
    public var lastMinute: Double
    public var lastDay: Double
    /// Deletion records overlapping the last 24 h, per reason.
    public var gaps: [WireGapSummary]
    /// Recorded intervals `[start, end]` in the detail range (chunk bounds, neighbours joined).
    public var spans: [[Int64]]
    /// Deletion records overlapping the detail range, oldest first (the longest
    /// `maxRecordsPerStream` when there are more; `omittedRecords` says how many were left out).
    public var records: [WireGap]
    public var omittedRecords: Int?
    /// SR ns the stream came into being in the store (absent: not known). Time before it is not
    /// a loss: there was nothing yet to record.
    public var created: Int64?
    /// SR ns an app first started recording the sensor (the earliest first start of any app;
    /// absent: no app ever has). Time before it is not a loss either: nobody wanted it yet.
    public var wantedSince: Int64?
    /// SR ns since which no app has wanted the sensor (every stake released: stopped, or consent
    /// turned off; absent while one does, or when none ever did). Time after it is not a loss:
    /// the `noInterestedClients` record for it is written only when recording resumes.
    public var unwantedSince: Int64?

    public init(
        sensor: String, device: String, expectedRate: Double?, recording: Bool, lastSample: Int64?,
        lastMinute: Double, lastDay: Double, gaps: [WireGapSummary], spans: [[Int64]], records: [WireGap]
    ) {
        self.sensor = sensor
        self.device = device
        self.expectedRate = expectedRate
        self.recording = recording
        self.lastSample = lastSample
        self.lastMinute = lastMinute
        self.lastDay = lastDay
        self.gaps = gaps
        self.spans = spans
        self.records = records
    }
}

/// Deletion records of one reason: how many, and how long in all (seconds, overlaps counted twice).
public struct WireGapSummary: Codable, Hashable, Sendable {
    /// `SRDeletionReason` raw value.
    public var reason: Int
    public var count: Int
    public var seconds: Double
    public init(reason: Int, count: Int, seconds: Double) {
        self.reason = reason
        self.count = count
        self.seconds = seconds
    }
}

/// One deletion record: `(start, end]` SR ns and its `SRDeletionReason` raw value.
public struct WireGap: Codable, Hashable, Sendable {
    public var start: Int64
    public var end: Int64
    public var reason: Int
    public init(start: Int64, end: Int64, reason: Int) {
        self.start = start
        self.end = end
        self.reason = reason
    }
}

/// The store's size against its budget (docs/store.md, "Purge and budget"), bytes.
public struct WireStoreUse: Codable, Hashable, Sendable {
    public var occupiedBytes: Int64
    public var availableBytes: Int64
    public var maxBytes: Int64?
    public var minFreeBytes: Int64?
    public init(occupiedBytes: Int64, availableBytes: Int64, maxBytes: Int64?, minFreeBytes: Int64?) {
        self.occupiedBytes = occupiedBytes
        self.availableBytes = availableBytes
        self.maxBytes = maxBytes
        self.minFreeBytes = minFreeBytes
    }
}

extension WireStreamHealth {
    /// When the stream could first record: it existed and an app had wanted the sensor. Nil from
    /// a daemon that says neither `created` nor `wantedSince`; after `now` when the stream exists
    /// but no app ever wanted the sensor.
    public func recordingSince(now: Int64) -> Int64? {
        guard created != nil || wantedSince != nil else { return nil }
        return max(created ?? .min, wantedSince ?? now.addingSaturating(1))
    }
}
