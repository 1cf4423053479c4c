import Foundation
import Glibc
import SensorSystem

/// A child started with `posix_spawn` in a process group of its own (so `kill(-pid)` reaches
/// everything it starts), with an empty signal mask and default dispositions: Foundation's
/// `Process` would pass on the test thread's mask, in which Dispatch blocks SIGTERM, and the
/// daemon would never hear the polite stop.
public final class ChildProcess {
    public let pid: pid_t
    private var status: Int32?

    public init(_ arguments: [String], stdin: Int32, stdout: Int32, stderr: Int32) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let result = posix_spawn(&child, arguments[0], &actions, &attributes, &argv, environ)
        guard result == 0 else { throw SystemError("posix_spawn(\(arguments[0]))", errno: result) }
        pid = child
    }

    /// Reaps the child if it exited (`waitpid(WNOHANG)`).
    public var isRunning: Bool {
        guard status == nil else { return false }
        var raw: Int32 = 0
        if waitpid(pid, &raw, WNOHANG) == pid { status = raw }
        return status == nil
    }

    public func wait() {
        guard status == nil else { return }
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) == -1 && errno == EINTR {}
        status = raw
    }

    /// The exit status once waited for: the code, or 128 + the signal that ended it.
    public var exitStatus: Int32? {
        status.map { ($0 & 0x7F) == 0 ? ($0 >> 8) & 0xFF : 128 + ($0 & 0x7F) }
    }
}
