import LocationBridge
import SensorSystem

/// The places the participant or the study labels (docs/visits.md, "Place labels"):
/// `$XDG_CONFIG_HOME/sensorkit/places`, else `~/.config/sensorkit/places`, mode 0600. What is
/// logged about it is the line numbers and reasons only: the file's coordinates never reach a
/// log or the socket, only the categories they give.
enum PlaceLabelsFile {
    /// Largest file read, bytes (64 labels of a few dozen bytes, with room for comments).
    static let maximumBytes = 16_384

    static func path(environment: [String: String]) -> String? {
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") { return config + "/sensorkit/places" }
        if let home = environment["HOME"], home.hasPrefix("/") { return home + "/.config/sensorkit/places" }
        return nil
    }

    /// The labels at `path`: none when there is no file or it is refused (the refusal logged), the
    /// good lines of a file with bad ones (each bad line logged by number).
    static func load(_ path: String, log: (LogMessage) -> Void) -> [PlaceLabel] {
        let text: String?
        do throws(OwnerOnlyFile.Refusal) {
            text = try OwnerOnlyFile.read(path, limit: maximumBytes)
        } catch {
            log("location: the place labels in \(path) are refused (\(error)); visits are categorised without them")
            return []
        }
        guard let text else { return [] }
        let (labels, problems) = PlaceLabelList.parse(text)
        for problem in problems { log("location: \(path) \(problem); that line is skipped") }
        log("location: \(labels.count) labelled place(s) from \(path)")
        return labels
    }
}
