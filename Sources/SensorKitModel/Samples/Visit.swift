import Foundation

/// A visit to a significant place (Apple's `SRVisit`), one per fetch result of SensorKit's
/// `visits` sensor (docs/visits.md).
public final class SRVisit: NSObject, Sendable {
    /// Apple's `SRLocationCategory` (`NSInteger`).
    public enum LocationCategory: Int, Sendable, CaseIterable {
        case unknown = 0
        case home = 1
        case work = 2
        case school = 3
        case gym = 4
    }

    /// Distance from home, in metres.
    public let distanceFromHome: CLLocationDistance
    /// When the arrival happened, to the precision the system reports.
    public let arrivalDateInterval: DateInterval
    /// When the departure happened, to the precision the system reports.
    public let departureDateInterval: DateInterval
    public let locationCategory: LocationCategory
    /// Identifies the place, so visits to the same place share it.
    public let identifier: UUID

    public init(
        distanceFromHome: CLLocationDistance, arrivalDateInterval: DateInterval, departureDateInterval: DateInterval,
        locationCategory: LocationCategory, identifier: UUID
    ) {
        self.distanceFromHome = distanceFromHome
        self.arrivalDateInterval = arrivalDateInterval
        self.departureDateInterval = departureDateInterval
        self.locationCategory = locationCategory
        self.identifier = identifier
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SRVisit else { return false }
        return distanceFromHome == other.distanceFromHome && arrivalDateInterval == other.arrivalDateInterval
            && departureDateInterval == other.departureDateInterval && locationCategory == other.locationCategory
            && identifier == other.identifier
    }

    public override var hash: Int { identifier.hashValue }
}
