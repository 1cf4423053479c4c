import Foundation
import Glibc
import SensorSystem

/// The consent decisions `[grant]` sections made that still stand as the configuration made them,
/// kept in the state directory (`configured-grants.json`): the store keeps a decision's status and
/// time but not who decided, and without this a `[grant]` removed while the daemon was stopped
/// would go on granting at the next start. Each entry is an app, a sensor and the decision's time;
/// a decision whose stored time differs was made again since (by a person) and is theirs.
public struct ConfiguredGrants: Codable, Hashable, Sendable {
    public struct Entry: Codable, Hashable, Sendable {
        public var app: String
        public var sensor: String
        public var decidedAt: Int64
    }

    public var entries: [Entry] = []

    public static let fileName = "configured-grants.json"
    /// The most the daemon reads of the file; it holds one short entry per configured grant.
    static let maximumBytes = 1 << 20

    public init(_ decisions: [ControlLedger.Key: ControlLedger.Decision]) {
        entries = decisions.filter { $0.value.decidedBy == "config" && $0.value.status == .authorized }
            .sorted { $0.key < $1.key }
            .map { Entry(app: $0.key.app, sensor: $0.key.sensor.rawValue, decidedAt: $0.value.decidedAt) }
    }

    /// The file's grants; none when it is missing. A file that cannot be read or parsed is an
    /// error: the daemon must not forget which grants it made.
    public static func load(_ path: String) throws -> ConfiguredGrants {
        let text: String
        do {
            text = try SystemFiles.read(path, limit: maximumBytes)
        } catch  where error.errno == ENOENT {
            return ConfiguredGrants([:])
        }
        return try JSONDecoder().decode(ConfiguredGrants.self, from: Data(text.utf8))
    }

    public func save(_ path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try SystemFiles.writeAtomically(path, contents: Array(try encoder.encode(self)))
    }
}
