/// How many connections the reader socket keeps open, and how long a fetch may wait for its
/// client (docs/protocol.md §6.2, `[reader]` in docs/configuration.md).
public struct ReaderLimits: Hashable, Sendable {
    /// What the configuration says; nil means "derive from the open-file limit".
    public struct Settings: Hashable, Sendable {
        public var maxConnections: Int?
        public var maxConnectionsPerUser: Int?
        /// Nanoseconds a fetch may go without progress (an `ack`, or a frame taken by the client).
        public var fetchIdleTimeout: Int64 = 60_000_000_000

        public init() {}
    }

    public var maxConnections: Int
    public var maxConnectionsPerUser: Int
    public var fetchIdleTimeout: Int64

    /// Descriptors kept for everything that is not a client: the store's database, its
    /// write-ahead log and read connections, devices, the journal.
    static func reserve(openFiles: Int) -> Int { max(64, openFiles / 8) }

    /// `openFiles`: the soft `RLIMIT_NOFILE` (nil: unlimited). Connections in all stay below it
    /// by `reserve`, so clients alone never exhaust the descriptors the daemon needs to record;
    /// one user gets an eighth of them, so one user alone can never lock the others out.
    public init(_ settings: Settings, openFiles: Int?) {
        let derived = openFiles.map { min(4096, max(8, $0 - Self.reserve(openFiles: $0))) } ?? 4096
        maxConnections = settings.maxConnections ?? derived
        maxConnectionsPerUser = settings.maxConnectionsPerUser ?? max(4, maxConnections / 8)
        fetchIdleTimeout = settings.fetchIdleTimeout
    }
}
