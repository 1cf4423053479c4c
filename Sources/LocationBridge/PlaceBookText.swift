import Foundation

/// The place book as the session agent keeps it across restarts (docs/visits.md, "The place
/// book"): one place a line, `identifier latitude longitude night_ns`. The file is the
/// participant's own (mode 0600, beside the place key), yet it is read as hostile input: a line
/// that does not parse, a coordinate out of range or a negative night is skipped, and no more
/// than `PlaceBook.maximumPlaces` lines are looked at.
public enum PlaceBookText {
    static let header = "# sensorkit-session place book: identifier latitude longitude night_ns"
    /// Longest file read, bytes: a full book's lines are each under 100 bytes.
    public static let maximumBytes = PlaceBook.maximumPlaces * 128

    public static func encode(_ places: [PlaceBook.Place]) -> String {
        var text = header + "\n"
        for place in places.prefix(PlaceBook.maximumPlaces) {
            // Swift prints the shortest text that reads back as the same Double.
            text += "\(place.identifier.uuidString) \(place.latitude) \(place.longitude) \(place.nightNanoseconds)\n"
        }
        return text
    }

    /// The places of `text` and how many lines were skipped.
    public static func decode(_ text: String) -> (places: [PlaceBook.Place], skipped: Int) {
        var places: [PlaceBook.Place] = []
        var skipped = 0
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard places.count < PlaceBook.maximumPlaces, let place = place(line) else {
                skipped += 1
                continue
            }
            places.append(place)
        }
        return (places, skipped)
    }

    private static func place(_ line: Substring) -> PlaceBook.Place? {
        let words = line.split(separator: " ")
        guard words.count == 4, let identifier = UUID(uuidString: String(words[0])),
            let latitude = Double(String(words[1])), let longitude = Double(String(words[2])),
            let night = Int64(String(words[3])),
            (-90.0...90.0).contains(latitude), (-180.0...180.0).contains(longitude), night >= 0
        else { return nil }
        return PlaceBook.Place(latitude: latitude, longitude: longitude, identifier: identifier, nightNanoseconds: night)
    }
}
