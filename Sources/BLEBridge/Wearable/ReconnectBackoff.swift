import SensorSystem

/// How long a wearable waits before the next connect: 0.5 s, doubling after every failure up to
/// 30 s. A link that stayed up 5 s — long enough to set up and deliver data — starts the doubling
/// over, so a strap that drops now and then is back within a second and its gap stays short; a
/// wearable that keeps refusing connects, or drops each link at once, is retried ever more slowly.
extension RetryBackoff {
    static let wearableStableLink: Int64 = 5_000_000_000

    static var wearable: RetryBackoff { RetryBackoff(first: 500_000_000, last: 30_000_000_000) }

    /// A connect failed: the delay before the next one.
    mutating func connectFailed() -> Int64 { failed().wait }

    /// A link was lost after being up `upFor` ns: the delay before reconnecting.
    mutating func linkLost(upFor: Int64) -> Int64 { lost(upFor: upFor, stableFor: Self.wearableStableLink).wait }
}
