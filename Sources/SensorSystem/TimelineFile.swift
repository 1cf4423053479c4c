import Foundation
import SensorKitModel

/// The timeline persisted as JSON (`<state-dir>/timeline.json`, published read-only beside the
/// socket for clients). Written atomically, so a crash leaves the old or the new timeline.
public enum TimelineFile {
    public static let fileName = "timeline.json"
    /// Left in the state directory by `sensorkitctl time --confirm-clock`: the next boot is
    /// anchored by its synchronised wall clock however far past recorded time that puts it.
    public static let confirmationFileName = "clock-confirmed"

    /// The timeline at `path`, nil when there is none yet. A file that exists but cannot be parsed
    /// is an error: silently founding a new timeline would shift every stored time.
    public static func load(_ path: String) throws -> Timeline? {
        let text: String
        do {
            text = try SystemFiles.read(path, limit: 4 << 20)
        } catch  where error.errno == ENOENT {
            return nil
        }
        return try JSONDecoder().decode(Timeline.self, from: Data(text.utf8))
    }

    /// Saves `timeline` to `path`: private (0600) in the state directory; the copy published for
    /// clients passes 0644.
    public static func save(_ timeline: Timeline, to path: String, mode: mode_t = 0o600) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        try SystemFiles.writeAtomically(path, contents: Array(try encoder.encode(timeline)), mode: mode)
    }
}
