/// Maps a wearable's clock onto the host's receive clock (CLOCK_BOOTTIME nanoseconds) from
/// (device time, receive time) pairs. A frame is received some variable time after its last
/// sample was taken (the link sends at connection events, retransmits, the host schedules), never
/// before: every pair lies on or above the line `receive = device + offset + drift × elapsed`, and
/// the pairs that arrived fastest form its lower envelope. The fit is the line under all recent
/// pairs that lies closest to them on average — the lower convex hull's edge above the pairs'
/// mean device time (docs/ble.md, "One timeline"). Pure: no clock is read here.
public struct DeviceClockMapping: Sendable {
    /// Pairs are kept as the lowest of each `bucketNanoseconds` of device time (the one that
    /// arrived fastest); the fit looks at the last `windowBuckets` of them: bounded memory and work.
    public let bucketNanoseconds: Double
    public let windowBuckets: Int
    /// Drift beyond this is a broken clock, not a crystal: the fitted slope is clamped to it.
    public static let maximumDrift = 500e-6

    private var origin: (device: UInt64, receive: Int64)?
    /// x = device ns since origin, y = (receive − origin.receive) − x: the apparent offset change;
    /// one lowest point per bucket, oldest first.
    private var points: [(bucket: Int64, x: Double, y: Double)] = []
    private var line: (slope: Double, intercept: Double) = (0, 0)
    private var spread: Double = 0

    /// Defaults: 4 s buckets, 10 min window (≈ 7 ECG frames a bucket, 150 buckets).
    public init(bucketNanoseconds: Int64 = 4_000_000_000, windowBuckets: Int = 150) {
        self.bucketNanoseconds = Double(max(1, bucketNanoseconds))
        self.windowBuckets = max(2, windowBuckets)
    }

    public var isEmpty: Bool { origin == nil }

    /// Forgets everything: the device clock was reset or jumped.
    public mutating func reset() {
        origin = nil
        points.removeAll(keepingCapacity: true)
        line = (0, 0)
        spread = 0
    }

    /// Adds one pair. The caller guarantees device times increase within one mapping (a clock
    /// that went back starts a new mapping).
    public mutating func observe(device: UInt64, receive: Int64) {
        guard let origin else {
            self.origin = (device, receive)
            points = [(0, 0, 0)]
            line = (0, 0)
            return
        }
        let x = Double(device &- origin.device)
        let y = Double(receive &- origin.receive) - x
        let bucket = Int64((x / bucketNanoseconds).rounded(.down))
        if let last = points.last, last.bucket == bucket {
            if y < last.y { points[points.count - 1] = (bucket, x, y) }
        } else {
            points.append((bucket, x, y))
            let oldest = bucket - Int64(windowBuckets)
            if let drop = points.firstIndex(where: { $0.bucket > oldest }), drop > 0 { points.removeFirst(drop) }
        }
        refit()
    }

    /// The receive-clock time of `device`, and how far it may be off (ns): the largest gap between
    /// the fitted line and the lowest pair of each eighth of the window.
    public func estimate(device: UInt64) -> (time: Int64, uncertainty: Int64)? {
        guard let origin else { return nil }
        let x = device >= origin.device ? Double(device - origin.device) : -Double(origin.device - device)
        let offset = line.intercept + line.slope * x
        let time = Double(origin.receive) + x + offset
        guard time.isFinite, abs(time) < 9e18 else { return nil }
        return (Int64(time), Int64(spread.rounded(.up)))
    }

    /// The fitted drift (positive: the device clock runs slow against the host's).
    public var drift: Double { line.slope }

    private mutating func refit() {
        var hull: [(x: Double, y: Double)] = []
        hull.reserveCapacity(points.count)
        var sumX = 0.0
        for point in points {
            sumX += point.x
            while hull.count >= 2 {
                let a = hull[hull.count - 2], b = hull[hull.count - 1]
                let cross = (b.x - a.x) * (point.y - a.y) - (b.y - a.y) * (point.x - a.x)
                if cross <= 0 { hull.removeLast() } else { break }
            }
            hull.append((point.x, point.y))
        }
        let meanX = sumX / Double(points.count)
        var slope = 0.0
        var anchor = hull[0]
        if hull.count >= 2 {
            var edge = hull.count - 2
            for index in 0..<(hull.count - 1) where hull[index + 1].x >= meanX {
                edge = index
                break
            }
            let a = hull[edge], b = hull[edge + 1]
            if b.x > a.x { slope = (b.y - a.y) / (b.x - a.x) }
            anchor = a
        }
        slope = min(max(slope, -Self.maximumDrift), Self.maximumDrift)
        // With a clamped slope the line may cut through a pair: lower it under all of them.
        var intercept = anchor.y - slope * anchor.x
        for point in points { intercept = min(intercept, point.y - slope * point.x) }
        line = (slope, intercept)
        // Uncertainty: how high the lowest pair of each eighth of the window sits above the line.
        let part = max(1, points.count / 8)
        var worst = 0.0
        var start = 0
        while start < points.count {
            var lowest = Double.infinity
            for point in points[start..<min(start + part, points.count)] {
                lowest = min(lowest, point.y - (intercept + slope * point.x))
            }
            worst = max(worst, lowest)
            start += part
        }
        spread = worst
    }
}
