import Synchronization

/// The store's read connections: idle ones kept so a query does not pay for opening one, and a
/// bound on how many are open at once, since each holds descriptors (the database and its
/// write-ahead log) and the process has a limited number (docs/reliability.md, "Descriptors").
/// WAL lets any number of them read a consistent snapshot while the writer commits.
final class ReaderPool: Sendable {
    private struct State {
        var idle: [SQLiteDatabase] = []
        /// Open connections: idle and checked out.
        var open = 0
        var limit: Int
    }

    private let path: String
    private let state: Mutex<State>
    private static let maxIdle = 4

    init(path: String, limit: Int = 64) {
        self.path = path
        state = Mutex(State(limit: max(1, limit)))
    }

    /// How many connections may be open at once (the reader's fetch limit and a few more). A
    /// lower bound than what is open now takes effect as connections come back.
    func limit(to count: Int) { state.withLock { $0.limit = max(1, count) } }

    /// A connection for one query; give it back with `checkIn` when done. Fails with `SQLITE_BUSY`
    /// when `limit` connections are open.
    func checkOut() throws(SQLiteError) -> SQLiteDatabase {
        let reused: SQLiteDatabase? = try state.withLock { (state) throws(SQLiteError) in
            if let connection = state.idle.popLast() { return connection }
            guard state.open < state.limit else {
                throw SQLiteError.readersExhausted(limit: state.limit)
            }
            state.open += 1  // taken now; given back below if the open fails
            return nil
        }
        if let reused { return reused }
        do {
            let connection = try SQLiteDatabase(path: path, create: false)
            try connection.execute("PRAGMA query_only = ON")
            return connection
        } catch {
            state.withLock { $0.open -= 1 }
            throw error
        }
    }

    func checkIn(_ connection: SQLiteDatabase) {
        // A query that failed mid-transaction: drop it. Dropped connections close when released.
        let keep = connection.isAutocommit
        state.withLock { state in
            if keep && state.idle.count < Self.maxIdle && state.open <= state.limit {
                state.idle.append(connection)
            } else {
                state.open -= 1
            }
        }
    }

    func closeAll() {
        state.withLock { state in
            state.open -= state.idle.count
            state.idle.removeAll()
        }
    }
}
