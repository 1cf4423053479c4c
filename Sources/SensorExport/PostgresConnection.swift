import CPostgres
import Glibc

/// A PostgreSQL error: libpq's message (never the connection string) and the SQLSTATE when the
/// server sent one.
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public let sqlState: String?
    public var description: String { sqlState.map { "\(message) (SQLSTATE \($0))" } ?? message }
}

/// One libpq connection; the only file that calls libpq. Confined to the task that made it.
public final class PostgresConnection {
    private let handle: OpaquePointer

    /// Connects with a libpq connection string or URI; an empty string means the `PG*` variables
    /// and libpq's defaults. The password comes from `PGPASSWORD`, `~/.pgpass` or `PGPASSFILE`.
    public init(_ conninfo: String) throws(PostgresError) {
        guard let made = PQconnectdb(conninfo) else { throw PostgresError(message: "libpq: out of memory", sqlState: nil) }
        guard PQstatus(made) == CONNECTION_OK else {
            let message = Self.trimmed(PQerrorMessage(made))
            PQfinish(made)
            throw PostgresError(message: message, sqlState: nil)
        }
        handle = made
    }

    deinit { PQfinish(handle) }

    /// Whether `conninfo` carries a password (which must not travel on a command line): nil when
    /// libpq cannot parse it, with its message.
    public static func carriesPassword(_ conninfo: String) -> Result<Bool, PostgresError> {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &error) else {
            let message = error.map { String(cString: $0) } ?? "cannot parse the connection string"
            if let error { PQfreemem(error) }
            return .failure(PostgresError(message: message.trimmingSpaces, sqlState: nil))
        }
        defer { PQconninfoFree(options) }
        var option = options
        while let keyword = option.pointee.keyword {
            if String(cString: keyword) == "password", let value = option.pointee.val, value.pointee != 0 {
                return .success(true)
            }
            option += 1
        }
        return .success(false)
    }

    /// Where this connection went, for logs: user, database, host or socket folder, port.
    public var summary: String {
        func text(_ pointer: UnsafeMutablePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "?" }
        return "user \(text(PQuser(handle))) database \(text(PQdb(handle))) on \(text(PQhost(handle))):\(text(PQport(handle)))"
    }

    /// Runs one statement with text parameters; the rows of its result as text (NULL as nil).
    @discardableResult
    public func execute(_ sql: String, _ parameters: [String?] = []) throws(PostgresError) -> [[String?]] {
        let result = withParameters(parameters) { values in
            PQexecParams(handle, sql, Int32(parameters.count), nil, values, nil, nil, 0)
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else { throw error(of: result) }
        var rows: [[String?]] = []
        for row in 0..<PQntuples(result) {
            rows.append(
                (0..<PQnfields(result)).map { column in
                    PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
                })
        }
        return rows
    }

    /// Runs `COPY … FROM STDIN` and sends `parts` in order as its data; the rows the server took.
    @discardableResult
    public func copyIn(_ sql: String, _ parts: [ArraySlice<UInt8>]) throws(PostgresError) -> Int {
        let start = PQexec(handle, sql)
        guard PQresultStatus(start) == PGRES_COPY_IN else {
            defer { PQclear(start) }
            throw error(of: start)
        }
        PQclear(start)
        var failed = false
        for part in parts where !part.isEmpty && !failed {
            // libpq takes an int length: send at most 1 MiB per call.
            var offset = part.startIndex
            while offset < part.endIndex && !failed {
                let end = min(offset + 1 << 20, part.endIndex)
                failed = part[offset..<end].withUnsafeBufferPointer { buffer in
                    buffer.withMemoryRebound(to: CChar.self) { PQputCopyData(handle, $0.baseAddress, Int32($0.count)) != 1 }
                }
                offset = end
            }
        }
        let ended = PQputCopyEnd(handle, failed ? "sensorkit-export: sending failed" : nil) == 1
        var firstError: PostgresError?
        var rows = 0
        while let result = PQgetResult(handle) {
            if PQresultStatus(result) == PGRES_COMMAND_OK {
                rows = Int(String(cString: PQcmdTuples(result))) ?? 0
            } else if firstError == nil {
                firstError = error(of: result)
            }
            PQclear(result)
        }
        if let firstError { throw firstError }
        guard ended, !failed else { throw PostgresError(message: Self.trimmed(PQerrorMessage(handle)), sqlState: nil) }
        return rows
    }

    private func withParameters<R>(_ parameters: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        let copies = parameters.map { $0.map { strdup($0) } ?? nil }
        defer { for copy in copies { free(copy) } }
        return body(copies.map { $0.map { UnsafePointer($0) } })
    }

    private func error(of result: OpaquePointer?) -> PostgresError {
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
        let message = result.flatMap { PQresultErrorMessage($0) }.map { Self.trimmed($0) } ?? ""
        return PostgresError(message: message.isEmpty ? Self.trimmed(PQerrorMessage(handle)) : message, sqlState: state)
    }

    private static func trimmed(_ pointer: UnsafePointer<CChar>?) -> String {
        pointer.map { String(cString: $0).trimmingSpaces } ?? "unknown libpq error"
    }
}

extension String {
    var trimmingSpaces: String {
        var text = Substring(self)
        while let last = text.last, last.isWhitespace { text = text.dropLast() }
        while let first = text.first, first.isWhitespace { text = text.dropFirst() }
        return String(text)
    }
}
