import Foundation
import SensorKitModel

/// A visit as the session agent hands it to the daemon (docs/protocol.md §3.7, `visit`): only
/// `SRVisit`'s fields, its four bounds as ages on the daemon's own clock — never a coordinate.
public struct HandedVisit: Sendable, Hashable {
    /// Whole metres from home, −1 while no home is known.
    public let distance: Int64
    /// Milliseconds before the moment the daemon took it: arrival start (−1: nothing observed
    /// before), arrival end, departure start, departure end; each no later than the one before.
    public let ages: [Int64]
    public let category: SRVisit.LocationCategory
    public let identifier: UUID

    /// Half the equator: no place on Earth is farther from home.
    public static let maximumDistance = Int64(VisitsFamily.maximumDistance)
    /// The oldest bound taken: the store's 7-day window and a day more.
    public static let maximumAge: Int64 = 8 * 86_400_000

    /// Nil unless every field is plausible: the bounds in order and within `maximumAge`, the
    /// distance whole and on Earth.
    public init?(distance: Int64, ages: [Int64], category: SRVisit.LocationCategory, identifier: UUID) {
        guard distance == -1 || (0...Self.maximumDistance).contains(distance), ages.count == 4,
            ages.allSatisfy({ $0 <= Self.maximumAge }), ages[1...].allSatisfy({ $0 >= 0 }),
            ages[0] == -1 || ages[0] >= ages[1],
            ages[1] >= ages[2], ages[2] >= ages[3]
        else { return nil }
        self.distance = distance
        self.ages = ages
        self.category = category
        self.identifier = identifier
    }

    /// The visit as the agent's tracker found it, seen from `now` (both wall-clock): bounds
    /// rounded outwards to the millisecond, so each interval still holds the true time.
    public init?(_ visit: SRVisit, now: Date) {
        func age(_ date: Date, earliest: Bool) -> Int64? {
            guard date != .distantPast else { return -1 }
            let milliseconds = (now.timeIntervalSince(date) * 1e3)
            let rounded = earliest ? milliseconds.rounded(.up) : milliseconds.rounded(.down)
            guard rounded.isFinite, rounded >= 0, rounded <= Double(Self.maximumAge) else { return nil }
            return Int64(rounded)
        }
        let bounds = [
            (visit.arrivalDateInterval.start, true), (visit.arrivalDateInterval.end, false),
            (visit.departureDateInterval.start, true), (visit.departureDateInterval.end, false),
        ]
        let ages = bounds.map { age($0.0, earliest: $0.1) }
        guard ages.allSatisfy({ $0 != nil }), ages[1]! >= 0 else { return nil }
        let distance = visit.distanceFromHome.isFinite && visit.distanceFromHome >= 0 ? Int64(visit.distanceFromHome) : -1
        // Rounding outwards can cross two bounds a millisecond apart: the later one wins.
        var ordered = ages.map { $0! }
        for i in 2..<4 { ordered[i] = min(ordered[i], ordered[i - 1]) }
        self.init(distance: distance, ages: ordered, category: visit.locationCategory, identifier: visit.identifier)
    }
}

/// What the reader socket hands the visits driver from a session agent.
public enum VisitEvent: Sendable, Equatable {
    /// The agent starts or stops watching location (`CLOCK_BOOTTIME` ns of the daemon).
    case watching(Bool, at: Int64)
    /// A visit the daemon took at `at`.
    case visit(HandedVisit, at: Int64)
}

/// Where the reader socket hands a trusted session agent's visits (the visits driver).
public protocol VisitAgentSink: Sendable {
    func feed(_ event: VisitEvent)
}
