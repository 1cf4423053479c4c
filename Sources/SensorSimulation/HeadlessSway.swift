import Foundation
import Glibc
import SensorSystem

/// A real compositor for the tests (docs/wayland.md, "Tests"): Debian's sway on wlroots' headless
/// backend with the pixman renderer, as nobody (sway wants an ordinary user) in a scratch
/// `XDG_RUNTIME_DIR`, one 640×480 output `HEADLESS-1`. Clients (`foot`) and `swaymsg` run as
/// nobody too; every process runs under `timeout` in a process group of its own and is killed,
/// with the folder removed, by `close()`.
public final class HeadlessSway {
    public let folder: String
    public var runtimeDirectory: String { folder + "/run" }
    /// The compositor's socket, as an absolute path (`wl_display_connect` takes one).
    public private(set) var display = ""
    private var ipcSocket = ""
    private var compositor: ChildProcess?
    private var clients: [ChildProcess] = []
    private var logs = 0
    private let seconds: Int

    public static let tools: [(path: String, package: String)] = [
        ("/usr/bin/sway", "sway"), ("/usr/bin/swaymsg", "sway"), ("/usr/bin/foot", "foot"),
        ("/usr/bin/timeout", "coreutils"), ("/usr/bin/setpriv", "util-linux"),
    ]
    private static let nobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]

    /// Starts sway and returns once its Wayland and IPC sockets exist; `seconds` bounds the life
    /// of every process started here. Throws, with sway's log, when it does not come up in 10 s.
    public init(seconds: Int = 90) throws {
        var template = Array("/tmp/sksway-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemError("mkdtemp", errno: errno) }
        folder = String(cString: made)
        self.seconds = seconds
        do {
            guard chmod(folder, 0o755) == 0, mkdir(runtimeDirectory, 0o700) == 0, chown(runtimeDirectory, 65534, 65534) == 0
            else { throw SystemError("runtime directory \(runtimeDirectory)", errno: errno) }
            try "output HEADLESS-1 resolution 640x480\ndefault_border none\n".write(
                toFile: folder + "/sway.conf", atomically: true, encoding: .utf8)
            try start()
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    private func start() throws {
        compositor = try spawnLogged(
            Self.nobody + [
                "/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "HOME=\(folder)", "XDG_RUNTIME_DIR=\(runtimeDirectory)",
                "WLR_BACKENDS=headless", "WLR_RENDERER=pixman", "WLR_LIBINPUT_NO_DEVICES=1",
                "/usr/bin/sway", "-c", folder + "/sway.conf",
            ], log: "sway")
        let up = Self.eventually(10) {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: runtimeDirectory)) ?? []
            guard let socket = names.first(where: { $0.hasPrefix("wayland-") && !$0.hasSuffix(".lock") }),
                let ipc = names.first(where: { $0.hasPrefix("sway-ipc.") })
            else { return false }
            display = runtimeDirectory + "/" + socket
            ipcSocket = runtimeDirectory + "/" + ipc
            return true
        }
        guard up else { throw SystemError("sway did not start in 10 s:\n\(logText())", errno: ETIMEDOUT) }
    }

    /// Kills the compositor (SIGKILL): its clients lose their connection at once.
    public func kill() {
        if let compositor { Self.end(compositor) }
        compositor = nil
    }

    /// Starts the compositor again after `kill()`, on the same display: the stale sockets are
    /// removed first, so sway takes the first free name again.
    public func restart() throws {
        kill()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: runtimeDirectory)) ?? [] {
            try? FileManager.default.removeItem(atPath: runtimeDirectory + "/" + name)
        }
        try start()
    }

    /// Opens a `foot` terminal with `appID` and `title` that lives until closed, and returns once
    /// sway maps it (its app id is in the tree). A new window takes the focus.
    @discardableResult
    public func open(appID: String, title: String = "terminal") throws -> ChildProcess {
        let client = try spawnLogged(
            Self.nobody + [
                "/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "HOME=\(folder)", "XDG_RUNTIME_DIR=\(runtimeDirectory)",
                "WAYLAND_DISPLAY=\(display)", "/usr/bin/foot", "--working-directory=\(folder)", "--app-id=\(appID)",
                "--title=\(title)",
                "/bin/sh", "-c", "sleep \(seconds)",
            ], log: "foot-\(appID)")
        clients.append(client)
        let mapped = Self.eventually(10) { ((try? swaymsg(["-t", "get_tree"])) ?? "").contains("\"app_id\": \"\(appID)\"") }
        guard mapped else { throw SystemError("foot \(appID) did not map in 10 s:\n\(logText())", errno: ETIMEDOUT) }
        return client
    }

    /// Runs `swaymsg` with `arguments` against this compositor; its output, or a throw naming it
    /// when it fails.
    @discardableResult
    public func swaymsg(_ arguments: [String]) throws -> String {
        let (status, output) = try CommandOutput.run(
            ["/usr/bin/timeout", "-s", "KILL", "10"] + Self.nobody + [
                "/usr/bin/env", "SWAYSOCK=\(ipcSocket)", "/usr/bin/swaymsg",
            ]
                + arguments)
        guard status == 0 else { throw SystemError("swaymsg \(arguments.joined(separator: " ")): \(output)", errno: EIO) }
        return output
    }

    public func close() {
        for client in clients { Self.end(client) }
        clients = []
        kill()
        try? FileManager.default.removeItem(atPath: folder)
    }

    private func spawnLogged(_ arguments: [String], log: String) throws -> ChildProcess {
        logs += 1
        let path = "\(folder)/\(logs)-\(log).log"
        let output = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        let input = Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer {
            if output >= 0 { Glibc.close(output) }
            if input >= 0 { Glibc.close(input) }
        }
        guard output >= 0, input >= 0 else { throw SystemError("open(\(path))", errno: errno) }
        return try ChildProcess(
            ["/usr/bin/timeout", "-s", "KILL", String(seconds)] + arguments, stdin: input, stdout: output, stderr: output)
    }

    private static func end(_ child: ChildProcess) {
        if child.isRunning { Glibc.kill(-child.pid, SIGKILL) }
        child.wait()
    }

    /// A bounded poll: true as soon as `condition` holds, false after `seconds`.
    public static func eventually(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    /// The logs so far (sway's, the clients'), for a failing test's message.
    public func logText() -> String {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".log") }.sorted()) ?? []
        return names.map { name in
            "== \(name)\n" + ((try? String(contentsOfFile: folder + "/" + name, encoding: .utf8)) ?? "")
        }.joined(separator: "\n")
    }
}
