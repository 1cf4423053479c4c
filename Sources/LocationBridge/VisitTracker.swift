import Foundation
import SensorKitModel

/// Location fixes in, `SRVisit`s out: stays found by `StayPointDetector`, placed in a
/// `PlaceBook`, home inferred from where the nights are spent (or set by a label), categories
/// from labelled places. A pure value: the caller (the session agent's `GeoClueLocationSource`)
/// feeds it fixes and hands the visits on; coordinates never leave it.
public struct VisitTracker: Sendable {
    /// Night time at a place before it can be inferred as home, ns.
    public static let minimumNightForHome: Int64 = 2 * 3_600 * 1_000_000_000
    /// `distanceFromHome` while no home is known.
    public static let unknownDistance: Double = -1

    private var detector: StayPointDetector
    private var book: PlaceBook
    private let labels: [PlaceLabel]
    private let utcOffsetSeconds: Int64

    /// The places seen so far, for keeping across a restart (`PlaceBookText`).
    public var places: [PlaceBook.Place] { book.places }

    /// `utcOffsetSeconds`: the participant's time zone, for what "night" means (00:00 to 06:00);
    /// `places`: the book a previous run kept, so identifiers and home carry over.
    public init(
        key: PlaceKey, labels: [PlaceLabel] = [], places: [PlaceBook.Place] = [], utcOffsetSeconds: Int = 0,
        parameters: StayPointDetector.Parameters = StayPointDetector.Parameters()
    ) {
        detector = StayPointDetector(parameters: parameters)
        book = PlaceBook(key: key, places: places)
        self.labels = Array(labels.prefix(64))
        self.utcOffsetSeconds = Int64(utcOffsetSeconds)
    }

    /// Adds a fix; returns the visit it completed, if any.
    public mutating func add(_ fix: LocationFix) -> SRVisit? {
        guard let stay = detector.add(fix), let index = book.place(latitude: stay.latitude, longitude: stay.longitude) else {
            return nil
        }
        // Certainly there: from the latest arrival to the earliest departure.
        let night = Self.nightOverlap(
            from: stay.arrival.upperBound, to: stay.departure.lowerBound, utcOffsetSeconds: utcOffsetSeconds)
        book.addNight(night, to: index)
        let place = book.places[index]
        let home = homePlace()
        let distance = home.map {
            Geodesy.distance(
                latitude1: $0.latitude, longitude1: $0.longitude, latitude2: place.latitude, longitude2: place.longitude
            ).rounded()
        }
        return SRVisit(
            distanceFromHome: distance ?? Self.unknownDistance, arrivalDateInterval: Self.dates(stay.arrival),
            departureDateInterval: Self.dates(stay.departure), locationCategory: category(of: place, home: home),
            identifier: place.identifier)
    }

    /// Where home is: a place labelled home, else the place with the most night time (at least
    /// `minimumNightForHome`).
    private func homePlace() -> (latitude: Double, longitude: Double, identifier: UUID?)? {
        if let label = labels.first(where: { $0.category == .home }) {
            return (label.latitude, label.longitude, nil)
        }
        guard let best = book.places.max(by: { $0.nightNanoseconds < $1.nightNanoseconds }),
            best.nightNanoseconds >= Self.minimumNightForHome
        else { return nil }
        return (best.latitude, best.longitude, best.identifier)
    }

    private func category(
        of place: PlaceBook.Place, home: (latitude: Double, longitude: Double, identifier: UUID?)?
    ) -> SRVisit.LocationCategory {
        let labelled = labels.first {
            Geodesy.distance(
                latitude1: $0.latitude, longitude1: $0.longitude, latitude2: place.latitude, longitude2: place.longitude)
                <= $0.radius
        }
        if let labelled { return labelled.category }
        return home?.identifier == place.identifier ? .home : .unknown
    }

    /// How much of [from, to] (Unix ns) falls in local night hours, 00:00 to 06:00.
    package static func nightOverlap(from: Int64, to: Int64, utcOffsetSeconds: Int64) -> Int64 {
        let day: Int64 = 86_400 * 1_000_000_000
        let night: Int64 = 6 * 3_600 * 1_000_000_000
        guard to > from, to.subtractingSaturating(from) < 400 * day else { return 0 }
        let offset = utcOffsetSeconds * 1_000_000_000
        let (localFrom, localTo) = (from.addingSaturating(offset), to.addingSaturating(offset))
        var midnight = localFrom - ((localFrom % day) + day) % day
        var total: Int64 = 0
        while midnight < localTo {
            let start = max(midnight, localFrom), end = min(midnight + night, localTo)
            if end > start { total += end - start }
            midnight += day
        }
        return total
    }

    static func dates(_ range: ClosedRange<Int64>) -> DateInterval {
        DateInterval(
            start: range.lowerBound == .min ? .distantPast : Date(timeIntervalSince1970: Double(range.lowerBound) / 1e9),
            end: Date(timeIntervalSince1970: Double(range.upperBound) / 1e9))
    }
}

/// A place the participant or the study named: a category for stays within `radius` metres.
public struct PlaceLabel: Hashable, Sendable {
    public var category: SRVisit.LocationCategory
    public var latitude: Double
    public var longitude: Double
    public var radius: Double

    public init(_ category: SRVisit.LocationCategory, latitude: Double, longitude: Double, radius: Double = 150) {
        self.category = category
        self.latitude = latitude
        self.longitude = longitude
        self.radius = radius
    }
}
