import Foundation
import SensorKitModel

/// The places stays happened at, each with a stable identifier, its category and the night time
/// spent there. A place's identifier is a keyed hash of the grid cell it was first seen in; the
/// session agent keeps the book itself in an owner-only file beside the key (`PlaceBookText`),
/// so a place near a cell's edge keeps its identifier, and home stays known, across a restart.
public struct PlaceBook: Sendable {
    /// Stays whose centroids lie within this many metres of a place's are at that place.
    public static let mergeRadius = 150.0
    /// Places remembered; a stay past this is at an unknown place (no identifier is reused).
    public static let maximumPlaces = 1024
    /// Size of the grid cells identifiers are derived from, degrees of latitude (about 110 m).
    public static let cellDegrees = 0.001

    public struct Place: Sendable {
        public var latitude: Double
        public var longitude: Double
        public var identifier: UUID
        /// Time certainly spent here during local night hours (00:00 to 06:00), ns.
        public var nightNanoseconds: Int64 = 0

        public init(latitude: Double, longitude: Double, identifier: UUID, nightNanoseconds: Int64 = 0) {
            self.latitude = latitude
            self.longitude = longitude
            self.identifier = identifier
            self.nightNanoseconds = nightNanoseconds
        }
    }

    private let key: PlaceKey
    public private(set) var places: [Place] = []

    /// `places`: the book as it was kept (at most `maximumPlaces`; a repeated identifier is
    /// dropped, so two places never share one).
    public init(key: PlaceKey, places: [Place] = []) {
        self.key = key
        var seen = Set<UUID>()
        for place in places where self.places.count < Self.maximumPlaces && seen.insert(place.identifier).inserted {
            self.places.append(place)
        }
    }

    /// The index of the place a stay at (`latitude`, `longitude`) belongs to, added when new; nil
    /// when the book is full.
    public mutating func place(latitude: Double, longitude: Double) -> Int? {
        let nearest = places.indices.min {
            distance(places[$0], latitude, longitude) < distance(places[$1], latitude, longitude)
        }
        if let nearest, distance(places[nearest], latitude, longitude) <= Self.mergeRadius { return nearest }
        guard places.count < Self.maximumPlaces else { return nil }
        var identifier = key.identifier(cellLatitude: Self.cell(latitude), cellLongitude: Self.cell(longitude))
        // Two places in one cell (each more than the merge radius from the other): the second gets
        // the next identifier of the cell.
        var salt: UInt64 = 1
        while places.contains(where: { $0.identifier == identifier }) {
            identifier = key.identifier(cellLatitude: Self.cell(latitude), cellLongitude: Self.cell(longitude), salt: salt)
            salt += 1
        }
        places.append(Place(latitude: latitude, longitude: longitude, identifier: identifier))
        return places.count - 1
    }

    public mutating func addNight(_ nanoseconds: Int64, to index: Int) {
        places[index].nightNanoseconds = places[index].nightNanoseconds.addingSaturating(nanoseconds)
    }

    static func cell(_ degrees: Double) -> Int64 { Int64((degrees / cellDegrees).rounded(.down)) }

    private func distance(_ place: Place, _ latitude: Double, _ longitude: Double) -> Double {
        Geodesy.distance(latitude1: place.latitude, longitude1: place.longitude, latitude2: latitude, longitude2: longitude)
    }
}

/// The secret that place identifiers are derived from (128 bits, kept by whoever runs the
/// tracker — the session agent — and never sent with the visits).
public struct PlaceKey: Sendable {
    private let first: SipHash24
    private let second: SipHash24

    public init(k0: UInt64, k1: UInt64) {
        first = SipHash24(k0: k0, k1: k1)
        second = SipHash24(k0: ~k0, k1: k1 &+ 0x9e37_79b9_7f4a_7c15)
    }

    /// A version-8 (custom) UUID from the keyed hash of a grid cell.
    func identifier(cellLatitude: Int64, cellLongitude: Int64, salt: UInt64 = 0) -> UUID {
        var bytes: [UInt8] = []
        for value in [UInt64(bitPattern: cellLatitude), UInt64(bitPattern: cellLongitude), salt] {
            for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
        let (high, low) = (first.hash(bytes), second.hash(bytes))
        var uuid = [UInt8](repeating: 0, count: 16)
        for i in 0..<8 {
            uuid[i] = UInt8(truncatingIfNeeded: high >> UInt64(56 - 8 * i))
            uuid[8 + i] = UInt8(truncatingIfNeeded: low >> UInt64(56 - 8 * i))
        }
        uuid[6] = (uuid[6] & 0x0f) | 0x80  // version 8
        uuid[8] = (uuid[8] & 0x3f) | 0x80  // RFC 9562 variant
        return UUID(
            uuid: (
                uuid[0], uuid[1], uuid[2], uuid[3], uuid[4], uuid[5], uuid[6], uuid[7], uuid[8], uuid[9], uuid[10], uuid[11],
                uuid[12], uuid[13], uuid[14], uuid[15]
            ))
    }
}
