import Foundation
import LocationBridge
import SensorKitModel

/// A participant's day and the next morning in Berlin, as fixes: home, a fast commute to work, a
/// gap at work, the gym, home, and off to work again — with GPS noise, single outliers and a
/// cell-tower fix, and the true arrival and departure times the visits must bound.
public struct ScriptedDay {
    public static let midnight: Int64 = 1_796_083_200 * 1_000_000_000  // 2026-12-01 00:00 UTC
    public static let minute: Int64 = 60 * 1_000_000_000
    public static let home = (latitude: 52.5200, longitude: 13.4050)
    public static let work = offset(home, east: 4_000, north: 0)
    public static let gym = offset(work, east: 0, north: 1_500)

    public struct Truth {
        public var place: String
        public var arrival: Int64?
        public var departure: Int64
    }

    /// The fixes in time order.
    public var fixes: [LocationFix] = []
    /// The visits the day holds, in order (the last stay, at work, stays open).
    public let truths: [Truth] = [
        Truth(place: "home", arrival: nil, departure: at(7, 58)),
        Truth(place: "work", arrival: at(8, 6), departure: at(17, 3)),
        Truth(place: "gym", arrival: at(17, 6), departure: at(18, 31)),
        Truth(place: "home", arrival: at(18, 40), departure: at(24 + 7, 1)),
    ]

    public init() {
        var random = SeededGenerator(seed: 29)
        func noisy(_ p: (latitude: Double, longitude: Double), _ time: Int64, accuracy: Double = 12) {
            let jitter = Self.offset(
                p, east: Double.random(in: -15...15, using: &random), north: Double.random(in: -15...15, using: &random))
            fixes.append(LocationFix(latitude: jitter.latitude, longitude: jitter.longitude, accuracy: accuracy, time: time))
        }
        func stay(_ p: (latitude: Double, longitude: Double), from: Int64, to: Int64) {
            var t = from
            while t <= to {
                noisy(p, t)
                t += 5 * Self.minute
            }
        }
        func travel(
            _ a: (latitude: Double, longitude: Double), _ b: (latitude: Double, longitude: Double), start: Int64, times: [Int64]
        ) {
            let metres = Self.distance(a, b)
            for t in times {
                let fraction = min(1, Double(t - start) / Double(Self.minute) * 500 / metres)
                noisy(
                    (a.latitude + (b.latitude - a.latitude) * fraction, a.longitude + (b.longitude - a.longitude) * fraction), t)
            }
        }
        stay(Self.home, from: Self.at(0, 0), to: Self.at(2, 55))
        noisy(Self.offset(Self.home, east: 400, north: 0), Self.at(2, 57))  // one outlier: noise
        stay(Self.home, from: Self.at(3, 0), to: Self.at(7, 55))
        travel(Self.home, Self.work, start: Self.at(7, 58), times: [Self.at(8, 0), Self.at(8, 2), Self.at(8, 4)])
        stay(Self.work, from: Self.at(8, 10), to: Self.at(12, 0))
        // 12:00 to 13:30: nothing (a basement canteen); then a cell-tower fix, too coarse to use.
        noisy(Self.work, Self.at(13, 30), accuracy: 1_500)
        stay(Self.work, from: Self.at(13, 35), to: Self.at(17, 0))
        travel(Self.work, Self.gym, start: Self.at(17, 3), times: [Self.at(17, 4)])
        stay(Self.gym, from: Self.at(17, 10), to: Self.at(18, 30))
        travel(Self.gym, Self.home, start: Self.at(18, 31), times: [Self.at(18, 33), Self.at(18, 36), Self.at(18, 39)])
        stay(Self.home, from: Self.at(18, 45), to: Self.at(24 + 7, 0))
        travel(Self.home, Self.work, start: Self.at(24 + 7, 1), times: [Self.at(24 + 7, 3), Self.at(24 + 7, 5)])
        stay(Self.work, from: Self.at(24 + 7, 10), to: Self.at(24 + 9, 0))
    }

    public static func at(_ hour: Int64, _ minute: Int64) -> Int64 { midnight + (hour * 60 + minute) * Self.minute }

    public static func offset(_ p: (latitude: Double, longitude: Double), east: Double, north: Double) -> (
        latitude: Double, longitude: Double
    ) {
        let perDegree = Geodesy.earthRadius * Double.pi / 180
        return (p.latitude + north / perDegree, p.longitude + east / (perDegree * cos(p.latitude * Double.pi / 180)))
    }

    public static func distance(_ a: (latitude: Double, longitude: Double), _ b: (latitude: Double, longitude: Double)) -> Double
    {
        Geodesy.distance(latitude1: a.latitude, longitude1: a.longitude, latitude2: b.latitude, longitude2: b.longitude)
    }

    public static let labels = [
        PlaceLabel(.work, latitude: work.latitude, longitude: work.longitude),
        PlaceLabel(.gym, latitude: gym.latitude, longitude: gym.longitude),
    ]
}
