/// Stay points from a stream of fixes: a run of fixes within `radius` of their centroid for at
/// least `minimumDwell` is a stay (the radius-and-dwell rule of Li et al., "Mining user similarity
/// based on location history", 2008). A pure value, driven fix by fix.
///
/// Times are bounded, not guessed: a stay's arrival lies between the last fix outside and the
/// first fix inside, its departure between the last fix inside and the first fix outside, so a
/// gap in the fixes (indoors, a phone off) widens the bounds instead of moving them. One fix
/// outside the radius followed by one inside again is GPS noise, not a departure.
public struct StayPointDetector: Sendable {
    public struct Parameters: Hashable, Sendable {
        /// Metres from the stay's centroid a fix may lie and still belong to it.
        public var radius: Double
        /// The shortest stay, ns.
        public var minimumDwell: Int64
        /// Fixes less accurate than this (metres) are ignored (a cell-tower fix cannot place a stay).
        public var maximumAccuracy: Double

        public init(radius: Double = 100, minimumDwell: Int64 = 10 * 60 * 1_000_000_000, maximumAccuracy: Double = 200) {
            self.radius = radius
            self.minimumDwell = minimumDwell
            self.maximumAccuracy = maximumAccuracy
        }
    }

    /// One stay: where (the centroid of its fixes) and when, as bounds (Unix ns).
    public struct Stay: Hashable, Sendable {
        public var latitude: Double
        public var longitude: Double
        /// Earliest and latest the arrival can have been (earliest `Int64.min`: before anything was
        /// observed).
        public var arrival: ClosedRange<Int64>
        /// Earliest and latest the departure can have been.
        public var departure: ClosedRange<Int64>
    }

    /// The fixes of the stay being watched.
    private struct Cluster: Sendable {
        var sumLatitude: Double
        var sumLongitude: Double
        var count: Int
        /// The fix before the first one inside (the arrival's lower bound); `Int64.min` for the
        /// first stay of all, whose arrival nothing observed.
        var arrivalEarliest: Int64
        var first: Int64
        var last: Int64

        init(_ fix: LocationFix, after previous: Int64?) {
            sumLatitude = fix.latitude
            sumLongitude = fix.longitude
            count = 1
            arrivalEarliest = previous.map { min($0, fix.time) } ?? .min
            first = fix.time
            last = fix.time
        }

        var latitude: Double { sumLatitude / Double(count) }
        var longitude: Double { sumLongitude / Double(count) }

        mutating func add(_ fix: LocationFix) {
            sumLatitude += fix.latitude
            sumLongitude += fix.longitude
            count += 1
            last = fix.time
        }
    }

    public let parameters: Parameters
    private var cluster: Cluster?
    /// A fix outside the cluster, not yet confirmed by a second one.
    private var pendingExit: LocationFix?
    private var lastTime: Int64?

    public init(parameters: Parameters = Parameters()) { self.parameters = parameters }

    /// Adds a fix; returns the stay it ended, if it ended one. Fixes out of time order, duplicated,
    /// implausible or too inaccurate are ignored.
    public mutating func add(_ fix: LocationFix) -> Stay? {
        guard fix.isPlausible, fix.accuracy <= parameters.maximumAccuracy, lastTime.map({ fix.time > $0 }) ?? true else {
            return nil
        }
        defer { lastTime = fix.time }
        guard let current = cluster else {
            cluster = Cluster(fix, after: lastTime)
            return nil
        }
        if distance(from: current, to: fix) <= parameters.radius {
            pendingExit = nil  // the fix outside was noise
            cluster!.add(fix)
            return nil
        }
        guard let exit = pendingExit else {
            pendingExit = fix
            return nil
        }
        // Two fixes outside: the stay (if it was one) ended between its last fix and the first outside.
        pendingExit = nil
        let ended =
            current.last.subtractingReportingOverflow(current.first).partialValue >= parameters.minimumDwell
            ? Stay(
                latitude: current.latitude, longitude: current.longitude, arrival: current.arrivalEarliest...current.first,
                departure: current.last...exit.time)
            : nil
        var next = Cluster(exit, after: current.last)
        if distance(from: next, to: fix) <= parameters.radius {
            next.add(fix)
        } else {
            next = Cluster(fix, after: exit.time)
        }
        cluster = next
        return ended
    }

    private func distance(from cluster: Cluster, to fix: LocationFix) -> Double {
        Geodesy.distance(
            latitude1: cluster.latitude, longitude1: cluster.longitude, latitude2: fix.latitude, longitude2: fix.longitude)
    }
}
