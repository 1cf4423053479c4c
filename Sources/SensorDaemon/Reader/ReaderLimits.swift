/// How many connections the reader socket keeps open, how many fetches run at once, and how long
/// a fetch may wait for its client (docs/protocol.md §6.2, `[reader]` in docs/configuration.md).
public struct ReaderLimits: Hashable, Sendable {
    /// What the configuration says; nil means "derive from the descriptors left".
    public struct Settings: Hashable, Sendable {
        public var maxConnections: Int?
        public var maxConnectionsPerUser: Int?
        public var maxFetches: Int?
        public var maxFetchesPerUser: Int?
        /// Nanoseconds a fetch may go without progress (an `ack`, or a frame taken by the client).
        public var fetchIdleTimeout: Int64 = 60_000_000_000

        public init() {}
    }

    public var maxConnections: Int
    public var maxConnectionsPerUser: Int
    /// Fetches running at once (parked ones included), in all and per Unix user.
    public var maxFetches: Int
    public var maxFetchesPerUser: Int
    public var fetchIdleTimeout: Int64

    /// Read connections the store may have open at once: one per running fetch, and a few for
    /// `health`, `fetchDevices` and deletion records, which take one for a moment.
    public var maxStoreReaders: Int { maxFetches + Self.spareStoreReaders }
    static let spareStoreReaders = 4

    /// Descriptors kept for everything that is not a client or a fetch: recording (IIO devices,
    /// Bluetooth sockets, udev), the store's writer, the journal.
    static func reserve(openFiles: Int) -> Int { max(64, openFiles / 8) }

    /// Descriptors one read connection of the store holds: the database and its write-ahead log
    /// (the shared-memory index is one per process). Measured: docs/reliability.md.
    static let descriptorsPerStoreReader = 2

    /// `openFiles`: the soft `RLIMIT_NOFILE` (nil: unlimited); `inUse`: descriptors already open
    /// (the store, the socket, the journal). Of the descriptors left after `reserve`, a quarter
    /// go to the store's read connections (so fetches) and the rest to client connections: clients
    /// and their fetches together never exhaust what the daemon needs to record. One user gets an
    /// eighth of each, so one user alone can never lock the others out.
    public init(_ settings: Settings, openFiles: Int?, inUse: Int = 0) {
        let left = openFiles.map { max(0, $0 - max(0, inUse) - Self.reserve(openFiles: $0)) }
        let forReaders = left.map { $0 / 4 }
        let connections = left.map { min(4096, max(8, $0 - $0 / 4)) } ?? 4096
        let fetches = forReaders.map { min(1024, max(2, $0 / Self.descriptorsPerStoreReader - Self.spareStoreReaders)) } ?? 1024
        maxConnections = settings.maxConnections ?? connections
        maxConnectionsPerUser = settings.maxConnectionsPerUser ?? max(4, maxConnections / 8)
        maxFetches = settings.maxFetches ?? fetches
        maxFetchesPerUser = settings.maxFetchesPerUser ?? max(1, maxFetches / 8)
        fetchIdleTimeout = settings.fetchIdleTimeout
    }
}
