/// How long a wearable waits before the next connect: 0.5 s, doubling after every failure up to
/// 30 s. A link that stayed up 5 s — long enough to set up and deliver data — starts the doubling
/// over, so a strap that drops now and then is back within a second and its gap stays short; a
/// wearable that keeps refusing connects, or drops each link at once, is retried ever more slowly.
struct ReconnectBackoff: Equatable {
    static let initial: Int64 = 500_000_000
    static let maximum: Int64 = 30_000_000_000
    static let stableLink: Int64 = 5_000_000_000

    private(set) var next = initial

    /// A connect failed: the delay before the next one.
    mutating func connectFailed() -> Int64 {
        defer { next = min(Self.maximum, next &* 2) }
        return next
    }

    /// A link was lost after being up `upFor` ns: the delay before reconnecting.
    mutating func linkLost(upFor: Int64) -> Int64 {
        if upFor >= Self.stableLink { next = Self.initial }
        return connectFailed()
    }
}
