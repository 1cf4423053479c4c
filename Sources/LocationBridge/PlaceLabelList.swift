import Foundation
import SensorKitModel

/// The places file's text (docs/visits.md, "Place labels") as `PlaceLabel`s: one place a line,
/// `category latitude,longitude[,radius_m]`, `#` starting a comment. The text is hostile: a line
/// that does not parse is skipped and reported by its number and the reason — never its text,
/// which holds a coordinate — and the rest of the file still counts, so one typo does not silently
/// turn every visit into `unknown`.
public enum PlaceLabelList {
    /// Labels kept; lines past this are reported and skipped (the tracker looks at no more).
    public static let maximumLabels = 64
    /// Longest line looked at, in bytes.
    public static let maximumLineBytes = 256
    /// The radius of a label without one, and the range a given radius must lie in, metres.
    public static let defaultRadius = 150.0
    public static let radiusRange = 10.0...5_000.0

    public struct Problem: Hashable, Sendable, CustomStringConvertible {
        public var line: Int
        public var reason: String
        public var description: String { "line \(line): \(reason)" }
    }

    public static func parse(_ text: String) -> (labels: [PlaceLabel], problems: [Problem]) {
        var labels: [PlaceLabel] = []
        var problems: [Problem] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            guard raw.utf8.count <= maximumLineBytes else {
                problems.append(Problem(line: number, reason: "longer than \(maximumLineBytes) bytes"))
                continue
            }
            let content = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let words = content.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            if words.isEmpty { continue }
            switch label(words) {
            case .success(let label):
                guard labels.count < maximumLabels else {
                    problems.append(Problem(line: number, reason: "more than \(maximumLabels) places"))
                    continue
                }
                labels.append(label)
            case .failure(let reason): problems.append(Problem(line: number, reason: reason.text))
            }
        }
        return (labels, problems)
    }

    struct Reason: Error { var text: String }

    /// Categories by the names the file uses; `unknown` is not a label.
    static let categories: [String: SRVisit.LocationCategory] = [
        "home": .home, "work": .work, "school": .school, "gym": .gym,
    ]

    private static func label(_ words: [Substring]) -> Result<PlaceLabel, Reason> {
        guard words.count == 2 else { return .failure(Reason(text: "not `category latitude,longitude[,radius]`")) }
        guard let category = categories[words[0].lowercased()] else {
            return .failure(Reason(text: "the category is not one of home, work, school, gym"))
        }
        let numbers = words[1].split(separator: ",", omittingEmptySubsequences: false).map { Double(String($0)) }
        guard numbers.count == 2 || numbers.count == 3, numbers.allSatisfy({ $0?.isFinite == true }) else {
            return .failure(Reason(text: "not two or three numbers separated by commas"))
        }
        let (latitude, longitude) = (numbers[0]!, numbers[1]!)
        guard (-90.0...90.0).contains(latitude), (-180.0...180.0).contains(longitude) else {
            return .failure(Reason(text: "latitude or longitude out of range"))
        }
        let radius = numbers.count == 3 ? numbers[2]! : defaultRadius
        guard radiusRange.contains(radius) else {
            return .failure(
                Reason(text: "radius out of \(Int(radiusRange.lowerBound))…\(Int(radiusRange.upperBound)) m"))
        }
        return .success(PlaceLabel(category, latitude: latitude, longitude: longitude, radius: radius))
    }
}
