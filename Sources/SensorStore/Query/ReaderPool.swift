import Synchronization

/// Idle read connections, so a query does not pay for opening one. WAL lets any number of them
/// read a consistent snapshot while the writer commits.
final class ReaderPool: Sendable {
    private let path: String
    private let idle = Mutex<[SQLiteDatabase]>([])
    private static let maxIdle = 4

    init(path: String) { self.path = path }

    /// A connection for one query; give it back with `checkIn` when done.
    func checkOut() throws(SQLiteError) -> SQLiteDatabase {
        if let connection = idle.withLock({ $0.popLast() }) { return connection }
        let connection = try SQLiteDatabase(path: path, create: false)
        try connection.execute("PRAGMA query_only = ON")
        return connection
    }

    func checkIn(_ connection: SQLiteDatabase) {
        guard connection.isAutocommit else { return }  // a query that failed mid-transaction: drop it
        idle.withLock { if $0.count < Self.maxIdle { $0.append(connection) } }
    }

    func closeAll() { idle.withLock { $0.removeAll() } }
}
