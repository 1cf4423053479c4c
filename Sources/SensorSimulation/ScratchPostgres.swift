import Foundation
import Glibc
import SensorSystem

/// A real PostgreSQL 15 server (tests and `make bench`) in a scratch folder, listening only on a Unix socket there, run by
/// an unprivileged user (`nobody` when the tests run as root, as CI does). Every command runs
/// under `timeout`; `close()` stops the server and removes the folder.
public final class ScratchPostgres {
    static let binaries = "/usr/lib/postgresql/15/bin"
    public let folder: String
    public var data: String { folder + "/data" }
    private var closed = false

    public init() throws {
        var template = Array("/tmp/skpg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemError("mkdtemp", errno: errno) }
        folder = String(cString: made)
        chmod(folder, 0o755)
        if getuid() == 0 { chown(folder, 65534, 65534) }
        do {
            try Self.run(
                Self.asServerUser([
                    Self.binaries + "/initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8",
                    "--no-sync", "--no-instructions",
                ]), seconds: 60)
            try start()
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// libpq connection string for a database of this server.
    public func conninfo(_ database: String = "postgres") -> String { "host=\(folder) user=postgres dbname=\(database)" }

    public func start() throws {
        try Self.run(
            Self.asServerUser([
                Self.binaries + "/pg_ctl", "-D", data, "-l", folder + "/server.log", "-w", "-t", "30",
                "-o", "-k \(folder) -c listen_addresses='' -F", "start",
            ]), seconds: 40)
    }

    public func stop() throws {
        try Self.run(
            Self.asServerUser([Self.binaries + "/pg_ctl", "-D", data, "-m", "fast", "-w", "-t", "30", "stop"]), seconds: 40)
    }

    /// `psql -At` with `sql`: the output lines (fields separated by `|`).
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") throws -> [String] {
        let output = try Self.run(
            [
                "/usr/bin/psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", folder, "-U", "postgres",
                "-d", database, "-c", sql,
            ], seconds: 60)
        return output.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }

    public func close() {
        guard !closed else { return }
        closed = true
        if FileManager.default.fileExists(atPath: data + "/postmaster.pid") { try? stop() }
        try? FileManager.default.removeItem(atPath: folder)
    }

    static func asServerUser(_ arguments: [String]) -> [String] {
        getuid() == 0 ? ["/usr/sbin/runuser", "-u", "nobody", "--"] + arguments : arguments
    }

    /// Runs a command with a time limit; its standard output, or an error with its output.
    @discardableResult
    public static func run(_ arguments: [String], seconds: Int) throws -> String {
        // Output to a file, not a pipe: the server pg_ctl starts would keep a pipe open for ever.
        var template = Array("/tmp/skpg-out-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw SystemError("mkstemp", errno: errno) }
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer {
            Glibc.close(fd)
            unlink(path)
        }
        let null = open("/dev/null", O_RDONLY)
        defer { Glibc.close(null) }
        let child = try ChildProcess(
            ["/usr/bin/timeout", "--kill-after=5", String(seconds)] + arguments, stdin: null, stdout: fd, stderr: fd)
        child.wait()
        let output = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        guard child.exitStatus == 0 else {
            throw CommandFailed(command: arguments.joined(separator: " "), status: child.exitStatus ?? -1, output: output)
        }
        return output
    }

    struct CommandFailed: Error, CustomStringConvertible {
        let command: String, status: Int32, output: String
        var description: String { "\(command) exited \(status): \(output)" }
    }
}
