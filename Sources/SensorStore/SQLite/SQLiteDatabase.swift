import CSQLite

// The one place this project touches sqlite3. A connection, prepared statements with
// typed binds and columns, and errors that carry SQLite's code and message. Every call here may
// block on disk I/O (and on another connection's lock for up to the busy timeout), so none of it
// belongs on a sampling queue.

/// A failed SQLite call: which operation, SQLite's (extended) result code and its message.
public struct SQLiteError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What we were doing ("open /var/lib/sensorkit/store.sqlite", "prepare INSERT …", "step").
    public let operation: String
    /// The extended result code (`sqlite3_extended_errcode`), e.g. 13 `SQLITE_FULL`, 11 `SQLITE_CORRUPT`.
    public let code: Int32
    /// `sqlite3_errmsg` at the time of failure.
    public let message: String

    public var description: String { "\(operation): \(message) (sqlite \(code))" }

    /// The primary result code (the low byte of the extended code).
    public var primaryCode: Int32 { code & 0xFF }
    /// The database or the disk is full (`SQLITE_FULL`).
    public var isDiskFull: Bool { primaryCode == SQLITE_FULL }

    /// Every read connection the store may open is in use (`ReaderPool`), reported as `SQLITE_BUSY`.
    static func readersExhausted(limit: Int) -> SQLiteError {
        SQLiteError(
            operation: "open a read connection", code: SQLITE_BUSY,
            message: "all \(limit) read connections of the store are in use")
    }
}

/// `SQLITE_TRANSIENT`, a macro Swift does not import: tells SQLite to copy bound bytes at once.
private let transientDestructor = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One SQLite connection (`sqlite3_open_v2` with `SQLITE_OPEN_NOMUTEX`): use it from one thread
/// at a time. Closed (`sqlite3_close_v2`) when released.
///
/// `@unchecked Sendable`: a connection is handed between threads but used by one owner at a time
/// (the writer's stays on the writer thread; a reader is checked out of `ReaderPool` by one query).
final class SQLiteDatabase: @unchecked Sendable {
    private var handle: OpaquePointer?
    let path: String

    /// Opens (creating if asked) the database at `path`, with a busy timeout so a short lock held
    /// by another connection (a checkpoint, the writer) waits instead of failing.
    init(path: String, create: Bool = true, busyTimeoutMilliseconds: Int32 = 10_000) throws(SQLiteError) {
        self.path = path
        var flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX
        if create { flags |= SQLITE_OPEN_CREATE }
        var db: OpaquePointer?
        let result = sqlite3_open_v2(path, &db, flags, nil)
        guard result == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(result))
            sqlite3_close_v2(db)
            throw SQLiteError(operation: "open \(path)", code: result, message: message)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
    }

    deinit { sqlite3_close_v2(handle) }

    private func failure(_ operation: String, _ code: Int32) -> SQLiteError {
        SQLiteError(
            operation: operation, code: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)))
    }

    /// Runs SQL without results (`sqlite3_exec`): schema statements, pragmas, BEGIN/COMMIT.
    func execute(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(handle, sql, nil, nil, &message)
        guard result == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(result))
            sqlite3_free(message)
            throw SQLiteError(operation: "exec \(sql.prefix(80))", code: sqlite3_extended_errcode(handle), message: text)
        }
    }

    /// Compiles one statement (`sqlite3_prepare_v3`).
    func prepare(_ sql: String, persistent: Bool = false) throws(SQLiteError) -> SQLiteStatement {
        var statement: OpaquePointer?
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        let result = sqlite3_prepare_v3(handle, sql, -1, flags, &statement, nil)
        guard result == SQLITE_OK, let statement else { throw failure("prepare \(sql.prefix(80))", result) }
        return SQLiteStatement(statement, database: self, sql: sql)
    }

    /// A single integer from a query such as `PRAGMA page_count`; nil when it returns no row.
    func scalar(_ sql: String) throws(SQLiteError) -> Int64? {
        let statement = try prepare(sql)
        return try statement.step() ? statement.int64(0) : nil
    }

    /// Runs `body` inside `BEGIN IMMEDIATE … COMMIT`, rolling back if it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// The rowid of the last successful INSERT on this connection.
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows changed by the last INSERT/UPDATE/DELETE.
    var changes: Int { Int(sqlite3_changes64(handle)) }

    /// False while a transaction is open (`sqlite3_get_autocommit`).
    var isAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    fileprivate func error(_ operation: String) -> SQLiteError {
        failure(operation, sqlite3_errcode(handle))
    }

    fileprivate var connection: OpaquePointer? { handle }
}

/// Reads one BLOB column row by row (`sqlite3_blob_open`, `_reopen`, `_read`): the bytes go
/// straight into an array of ours. `sqlite3_column_blob` first assembles a large blob (one spread
/// over overflow pages) in a buffer of SQLite's, which the caller then copies again. Reads within
/// the connection's current transaction; release it (or call `close`) before that ends.
final class SQLiteBlobReader {
    private let database: SQLiteDatabase
    private let table: String
    private let column: String
    private var blob: OpaquePointer?

    init(_ database: SQLiteDatabase, table: String, column: String) {
        self.database = database
        self.table = table
        self.column = column
    }

    deinit { close() }

    /// The column's bytes in row `rowid`.
    func bytes(ofRow rowid: Int64) throws(SQLiteError) -> [UInt8] {
        if let blob {
            let result = sqlite3_blob_reopen(blob, rowid)
            guard result == SQLITE_OK else { throw database.error("blob reopen \(table).\(column) row \(rowid)") }
        } else {
            let result = sqlite3_blob_open(database.connection, "main", table, column, rowid, 0, &blob)
            guard result == SQLITE_OK else {
                let error = database.error("blob open \(table).\(column) row \(rowid)")
                close()  // sqlite3_blob_open may leave a handle to release even when it fails
                throw error
            }
        }
        let count = Int(sqlite3_blob_bytes(blob))
        var result = SQLITE_OK
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            if count > 0 { result = sqlite3_blob_read(blob, buffer.baseAddress, Int32(count), 0) }
            initialized = result == SQLITE_OK ? count : 0
        }
        guard result == SQLITE_OK else { throw database.error("blob read \(table).\(column) row \(rowid)") }
        return bytes
    }

    func close() {
        sqlite3_blob_close(blob)
        blob = nil
    }
}

/// A prepared statement (`sqlite3_stmt`): bind, step, read columns, reset to reuse. Finalized
/// when released. Parameter and column indexes follow SQLite: parameters from 1, columns from 0.
final class SQLiteStatement {
    private let statement: OpaquePointer
    // Kept alive so the connection outlives its statements.
    private let database: SQLiteDatabase
    private let sql: String

    fileprivate init(_ statement: OpaquePointer, database: SQLiteDatabase, sql: String) {
        self.statement = statement
        self.database = database
        self.sql = sql
    }

    deinit { sqlite3_finalize(statement) }

    private func check(_ result: Int32, _ what: String) throws(SQLiteError) {
        guard result == SQLITE_OK else { throw database.error("\(what) in \(sql.prefix(60))") }
    }

    func bind(_ index: Int32, _ value: Int64) throws(SQLiteError) {
        try check(sqlite3_bind_int64(statement, index, value), "bind")
    }

    func bind(_ index: Int32, _ value: Int) throws(SQLiteError) { try bind(index, Int64(value)) }

    func bind(_ index: Int32, _ value: Double) throws(SQLiteError) {
        try check(sqlite3_bind_double(statement, index, value), "bind")
    }

    func bind(_ index: Int32, _ value: String) throws(SQLiteError) {
        try check(sqlite3_bind_text(statement, index, value, -1, transientDestructor), "bind")
    }

    /// Binds a BLOB; SQLite copies the bytes.
    func bind(_ index: Int32, blob: [UInt8]) throws(SQLiteError) {
        let result = blob.withUnsafeBytes { raw in
            // A zero-length blob needs a non-null pointer, or SQLite stores NULL.
            sqlite3_bind_blob(
                statement, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(raw.count), transientDestructor)
        }
        try check(result, "bind blob")
    }

    func bindNull(_ index: Int32) throws(SQLiteError) {
        try check(sqlite3_bind_null(statement, index), "bind")
    }

    /// Binds several values in order from parameter 1.
    func bind(_ values: [Int64]) throws(SQLiteError) {
        for (offset, value) in values.enumerated() { try bind(Int32(offset + 1), value) }
    }

    /// Advances (`sqlite3_step`): true when a row is available, false when done.
    @discardableResult
    func step() throws(SQLiteError) -> Bool {
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw database.error("step \(sql.prefix(60))")
        }
    }

    /// Steps to completion, for statements without results.
    func run() throws(SQLiteError) {
        while try step() {}
    }

    /// Clears bindings and rewinds for the next use (`sqlite3_reset`, `sqlite3_clear_bindings`).
    func reset() {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
    func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(statement, column)) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(statement, column) }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }

    func string(_ column: Int32) -> String {
        guard let text = sqlite3_column_text(statement, column) else { return "" }
        return String(cString: text)
    }

    /// The column's bytes, copied (`sqlite3_column_blob` + `sqlite3_column_bytes`).
    func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let pointer = sqlite3_column_blob(statement, column) else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// Runs `body` over the column's bytes without copying them; valid only inside `body`.
    func withBlob<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        let count = Int(sqlite3_column_bytes(statement, column))
        let pointer = sqlite3_column_blob(statement, column)
        return try body(UnsafeRawBufferPointer(start: count > 0 ? pointer : nil, count: count))
    }
}
