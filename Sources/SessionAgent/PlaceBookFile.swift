import LocationBridge
import SensorSystem

/// The agent's place book across restarts (docs/visits.md, "The place book"): beside the place
/// key, `…/sensorkit/place-book`, mode 0600 — coordinates of place centres, in a file only the
/// participant can read, as the key is. Without it a place near a grid cell's edge could get a
/// new identifier after a restart, and home would be unknown until another night.
enum PlaceBookFile {
    /// The book's path beside the key at `keyPath`.
    static func path(besideKey keyPath: String) -> String {
        String(keyPath.dropLast("place-key".count)) + "place-book"
    }

    /// The places kept at `path`; none when there is no file or it is refused (logged).
    static func load(_ path: String, log: (LogMessage) -> Void) -> [PlaceBook.Place] {
        let text: String?
        do throws(OwnerOnlyFile.Refusal) {
            text = try OwnerOnlyFile.read(path, limit: PlaceBookText.maximumBytes)
        } catch {
            log("location: the place book \(path) is refused (\(error)); places are new from now on")
            return []
        }
        guard let text else { return [] }
        let (places, skipped) = PlaceBookText.decode(text)
        if skipped > 0 { log("location: \(skipped) damaged line(s) of the place book \(path) were skipped") }
        return places
    }

    static func save(_ places: [PlaceBook.Place], to path: String) throws(SystemError) {
        try SystemFiles.writeAtomically(path, contents: Array(PlaceBookText.encode(places).utf8), mode: 0o600)
    }
}
