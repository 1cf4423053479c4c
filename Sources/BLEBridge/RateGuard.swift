/// A plausibility bound on how fast a wearable may deliver: a token bucket holding at most
/// `burst`, refilled at `perSecond` (by the host's receive clock). What the bucket cannot pay for
/// is more than any real device sends — a flood — and the caller drops it with a gap record.
public struct RateGuard: Equatable, Sendable {
    public let perSecond: Double
    public let burst: Double
    private var tokens: Double
    private var last: Int64?

    public init(perSecond: Double, burst: Double) {
        self.perSecond = max(0, perSecond)
        self.burst = max(1, burst)
        tokens = self.burst
    }

    /// Whether `count` more items received at `time` (ns) stay within the bound; they are paid
    /// for only when admitted. A time that goes backwards refills nothing.
    public mutating func admit(_ count: Int = 1, at time: Int64) -> Bool {
        if let last, time > last {
            tokens = min(burst, tokens + Double(time - last) / 1e9 * perSecond)
        }
        last = max(last ?? time, time)
        guard Double(count) <= tokens else { return false }
        tokens -= Double(count)
        return true
    }
}
