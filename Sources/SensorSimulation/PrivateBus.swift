import Foundation
import Glibc
import SensorSystem

/// A private `dbus-daemon` for the tests (docs/dbus.md §6): a session-type broker listening on
/// a socket in a scratch folder, open to the current user only, which the tests can kill and
/// start again at the same address. Services for it (a Python script, python-dbusmock) are
/// started through `spawn`; every process runs under `timeout` in a process group of its own
/// and is killed with the folder removed by `close()`.
public final class PrivateBus {
    public let folder: String
    public var address: String { "unix:path=\(folder)/bus" }
    private var daemon: ChildProcess?
    private var children: [ChildProcess] = []
    private var logs = 0

    public static let daemonPath = "/usr/bin/dbus-daemon"

    /// Starts the broker; `seconds` bounds the life of every process started here.
    public init(seconds: Int = 120) throws {
        var template = Array("/tmp/skbus-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemError("mkdtemp", errno: errno) }
        folder = String(cString: made)
        self.seconds = seconds
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(folder)/bus</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        try config.write(toFile: folder + "/bus.conf", atomically: true, encoding: .utf8)
        do {
            try start()
        } catch {
            close()
            throw error
        }
    }

    private let seconds: Int

    deinit { close() }

    /// Starts the broker (again, after `kill`) and returns once it accepts connections: it
    /// prints its address (`--print-address`) only after it listens.
    public func start() throws {
        precondition(daemon == nil, "the bus is running")
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw SystemError("pipe", errno: errno) }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        defer { Glibc.close(ends[0]) }
        do {
            defer { Glibc.close(ends[1]) }
            daemon = try spawnLogged(
                [Self.daemonPath, "--config-file=\(folder)/bus.conf", "--nofork", "--nopidfile", "--print-address"],
                log: "dbus-daemon", stdout: ends[1])
        }
        var printed: [UInt8] = []
        var entry = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
        let deadline = Date().addingTimeInterval(10)
        while !printed.contains(UInt8(ascii: "\n")) {
            let left = Int32(max(0, deadline.timeIntervalSinceNow) * 1000)
            guard left > 0, poll(&entry, 1, left) > 0 else {
                throw SystemError("dbus-daemon did not print its address (log in \(folder))", errno: ETIMEDOUT)
            }
            var buffer = [UInt8](repeating: 0, count: 512)
            let count = read(ends[0], &buffer, buffer.count)
            guard count > 0 else { throw SystemError("dbus-daemon exited before listening (log in \(folder))", errno: EPIPE) }
            printed += buffer[..<count]
        }
    }

    /// Kills the broker with SIGKILL: every connection to it ends at once.
    public func kill() {
        guard let daemon else { return }
        Self.end(daemon)
        self.daemon = nil
        unlink(folder + "/bus")
    }

    /// Starts `arguments` (under `timeout`), its output in a log file in the folder (its standard
    /// output in `stdout` instead, when given: `dbus-monitor --binary`, say).
    @discardableResult
    public func spawn(_ arguments: [String], log: String, stdout: Int32? = nil) throws -> ChildProcess {
        let child = try spawnLogged(arguments, log: log, stdout: stdout)
        children.append(child)
        return child
    }

    /// Kills a child started by `spawn` (SIGKILL to its process group) and reaps it.
    public func stop(_ child: ChildProcess) {
        Self.end(child)
        children.removeAll { $0 === child }
    }

    public func close() {
        for child in children { Self.end(child) }
        children = []
        kill()
        try? FileManager.default.removeItem(atPath: folder)
    }

    private func spawnLogged(_ arguments: [String], log: String, stdout: Int32? = nil) throws -> ChildProcess {
        logs += 1
        let path = "\(folder)/\(logs)-\(log).log"
        let output = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        let input = Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer {
            if output >= 0 { Glibc.close(output) }
            if input >= 0 { Glibc.close(input) }
        }
        guard output >= 0, input >= 0 else { throw SystemError("open(\(path))", errno: errno) }
        return try ChildProcess(
            ["/usr/bin/timeout", "-s", "KILL", String(seconds)] + arguments, stdin: input,
            stdout: stdout ?? output, stderr: output)
    }

    private static func end(_ child: ChildProcess) {
        if child.isRunning { Glibc.kill(-child.pid, SIGKILL) }
        child.wait()
    }

    /// The text of the logs so far, for a failing test's message.
    public func logText() -> String {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".log") }.sorted()) ?? []
        return names.map { name in
            "== \(name)\n" + ((try? String(contentsOfFile: folder + "/" + name, encoding: .utf8)) ?? "")
        }.joined(separator: "\n")
    }
}
