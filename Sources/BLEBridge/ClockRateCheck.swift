/// Whether a wearable's clock runs at the host clock's rate. A crystal is off by at most a few
/// hundred ppm (`DeviceClockMapping.maximumDrift`); a clock that runs at half speed, or twice as
/// fast, is broken, and mapping it would squeeze or stretch the samples over the wrong span.
///
/// The check compares how much `receive − device` changes across the window: its lowest value in
/// each `bucketNanoseconds` of host time (the frame that arrived fastest; delivery delays only
/// ever add), then the lowest of the older half against the lowest of the newer half. The clock
/// disagrees when that change exceeds `tolerance` of the host time between them plus `slack`
/// (delivery jitter of the fastest frames). A stall followed by a burst raises one bucket, never
/// the lowest of a half holding two. Pure: no clock is read here.
public struct ClockRateCheck: Sendable {
    public static let bucketNanoseconds: Int64 = 250_000_000
    public static let windowNanoseconds: Int64 = 8_000_000_000
    /// Host time the buckets must span before a verdict.
    public static let minimumSpan: Int64 = 1_000_000_000
    /// 2 %: a hundred times what any crystal is off, far below a clock at half or double speed.
    public static let tolerance = 0.02
    public static let slackNanoseconds: Int64 = 100_000_000

    public enum Verdict: Equatable, Sendable {
        case unknown
        case agrees
        /// Device seconds per host second.
        case disagrees(rate: Double)
    }

    private var origin: (device: UInt64, receive: Int64)?
    private var buckets: [(bucket: Int64, x: Int64, y: Int64)] = []

    public init() {}

    public mutating func reset() {
        origin = nil
        buckets.removeAll(keepingCapacity: true)
    }

    /// One (device time, receive time) pair; device times increase within one check (a clock
    /// that went back is a reset or jump the caller handles first).
    public mutating func observe(device: UInt64, receive: Int64) -> Verdict {
        guard let origin else {
            self.origin = (device, receive)
            buckets = [(0, 0, 0)]
            return .unknown
        }
        guard device >= origin.device, receive >= origin.receive else { return .unknown }
        let x = receive - origin.receive
        let deviceElapsed = Int64(clamping: device - origin.device)
        let y = x.subtractingReportingOverflow(deviceElapsed).partialValue
        let bucket = x / Self.bucketNanoseconds
        if let last = buckets.last, last.bucket == bucket {
            if y < last.y { buckets[buckets.count - 1] = (bucket, x, y) }
        } else {
            buckets.append((bucket, x, y))
            let oldest = bucket - Self.windowNanoseconds / Self.bucketNanoseconds
            if let keep = buckets.firstIndex(where: { $0.bucket > oldest }), keep > 0 { buckets.removeFirst(keep) }
        }
        guard let first = buckets.first, let last = buckets.last, last.x - first.x >= Self.minimumSpan else { return .unknown }
        let middle = first.x + (last.x - first.x) / 2
        let older = buckets.filter { $0.x < middle }, newer = buckets.filter { $0.x >= middle }
        guard older.count >= 2, newer.count >= 2,
            let a = older.min(by: { $0.y < $1.y }), let b = newer.min(by: { $0.y < $1.y }), b.x > a.x
        else { return .unknown }
        let dx = Double(b.x - a.x), dy = Double(b.y - a.y)
        if abs(dy) > Self.tolerance * dx + Double(Self.slackNanoseconds) { return .disagrees(rate: 1 - dy / dx) }
        return dx >= Double(Self.minimumSpan) / 2 ? .agrees : .unknown
    }
}
