import SensorKitModel

/// Why a store operation failed. SQLite and system-call failures arrive as `SQLiteError` and
/// `SystemError`; these are the store's own.
public enum StoreError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The database was written by a newer build (schema version `found` > `supported`).
    case newerSchema(found: Int64, supported: Int64)
    /// The timeline has no anchor for this boot, so its times cannot be placed on the SR timeline.
    case unknownBoot(BootID)
    /// The timeline has not adopted the clock's current boot, so "now" is unknown.
    case currentBootNotAdopted
    /// No stream with this id.
    case unknownStream(StreamID)
    /// The store was closed.
    case closed
    /// A stored descriptor could not be read back.
    case unreadableCatalog(String)

    public var description: String {
        switch self {
        case .newerSchema(let found, let supported):
            "store schema version \(found) is newer than this build supports (\(supported))"
        case .unknownBoot(let boot): "no timeline anchor for boot \(boot)"
        case .currentBootNotAdopted: "the timeline has not adopted the current boot"
        case .unknownStream(let id): "unknown \(id)"
        case .closed: "the store is closed"
        case .unreadableCatalog(let what): "unreadable catalog entry: \(what)"
        }
    }
}
