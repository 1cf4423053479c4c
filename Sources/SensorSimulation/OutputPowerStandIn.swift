import Foundation
import Glibc
import SensorSystem

/// The tests' `output-power-compositor` (Tests/OutputPowerCompositor): a Wayland server that
/// powers its one output off and on when told, which Debian 12's compositors cannot do without a
/// DRM device (docs/wayland.md §7). It runs under `timeout` in a scratch runtime folder and is
/// driven through its stdin, a word a line (`off`, `on`, `fail`, `remove`, `quit`).
public final class OutputPowerStandIn {
    public let folder: String
    /// The server's socket, as an absolute path (`wl_display_connect` takes one).
    public let display: String
    private let child: ChildProcess
    private let control: Int32

    /// `binary`: the built `output-power-compositor`; `arguments`: its options (`--without-toplevels`).
    public init(binary: String, arguments: [String] = [], seconds: Int = 60) throws {
        var template = Array("/tmp/skpower-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemError("mkdtemp", errno: errno) }
        let folder = String(cString: made)
        self.folder = folder
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw SystemError("pipe", errno: errno) }
        let output = open(folder + "/out", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        defer {
            Glibc.close(ends[0])
            Glibc.close(output)
        }
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        control = ends[1]
        child = try ChildProcess(
            ["/usr/bin/timeout", "-s", "KILL", String(seconds), "/usr/bin/env", "XDG_RUNTIME_DIR=\(folder)", binary]
                + arguments, stdin: ends[0], stdout: output, stderr: output)
        var name = ""
        let up = HeadlessSway.eventually(10) {
            name = ((try? String(contentsOfFile: folder + "/out", encoding: .utf8)) ?? "")
            return name.hasSuffix("\n")
        }
        guard up, name.hasPrefix("wayland-") else {
            Glibc.close(control)
            if child.isRunning { kill(-child.pid, SIGKILL) }
            child.wait()
            throw SystemError("output-power-compositor did not start in 10 s: \(name)", errno: ETIMEDOUT)
        }
        display = folder + "/" + name.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Tells the server one word; false when it could not be written (the server is gone).
    @discardableResult
    public func send(_ word: String) -> Bool {
        let line = Array((word + "\n").utf8)
        return write(control, line, line.count) == line.count
    }

    public func close() {
        Glibc.close(control)
        if child.isRunning { kill(-child.pid, SIGKILL) }
        child.wait()
        try? FileManager.default.removeItem(atPath: folder)
    }
}
