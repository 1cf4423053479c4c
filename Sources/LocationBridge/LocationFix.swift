import Foundation

/// One position as a location service reports it. Coordinates live only in these values, inside
/// the tracker's process, for as long as the stay they belong to is open; nothing that leaves the
/// tracker carries one.
public struct LocationFix: Hashable, Sendable {
    /// Degrees north.
    public var latitude: Double
    /// Degrees east.
    public var longitude: Double
    /// Radius of the 68 % confidence circle, metres.
    public var accuracy: Double
    /// When it was measured: Unix time, ns (GeoClue's `Timestamp`).
    public var time: Int64

    public init(latitude: Double, longitude: Double, accuracy: Double, time: Int64) {
        self.latitude = latitude
        self.longitude = longitude
        self.accuracy = accuracy
        self.time = time
    }

    /// Whether the values can be a position on Earth at all (a hostile or broken service can send
    /// NaN, infinities or out-of-range degrees).
    public var isPlausible: Bool {
        latitude.isFinite && longitude.isFinite && accuracy.isFinite && abs(latitude) <= 90 && abs(longitude) <= 180
            && accuracy >= 0
    }
}

/// Distances on the Earth's surface.
public enum Geodesy {
    /// The mean Earth radius (IUGG), metres.
    public static let earthRadius = 6_371_008.8

    /// The great-circle (haversine) distance between two positions, metres.
    public static func distance(
        latitude1: Double, longitude1: Double, latitude2: Double, longitude2: Double
    ) -> Double {
        let radians = Double.pi / 180
        let (phi1, phi2) = (latitude1 * radians, latitude2 * radians)
        let dPhi = (latitude2 - latitude1) * radians
        let dLambda = (longitude2 - longitude1) * radians
        let a = sin2(dPhi / 2) + cos(phi1) * cos(phi2) * sin2(dLambda / 2)
        return 2 * earthRadius * asin(min(1, a.squareRoot()))
    }

    static func sin2(_ x: Double) -> Double {
        let s = sin(x)
        return s * s
    }
}
