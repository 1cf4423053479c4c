import Foundation
import Glibc
import SensorSimulation
import SensorSystem

/// A size-limited tmpfs mounted by the test, owned by the scratch server's user (mode 0700), for
/// a PostgreSQL tablespace that can fill up while WAL and the catalogs stay on the normal disk.
/// Needs `mount` (root with CAP_SYS_ADMIN); `remove()` unmounts it and removes the mount point.
final class SmallTablespace {
    let mountPoint: String
    private var mounted = false

    /// The mounted file system, or why this machine does not let the test mount one.
    static func make(megabytes: Int) throws -> Result<SmallTablespace, MountRefused> {
        guard geteuid() == 0 else { return .failure(MountRefused(reason: "the test does not run as root")) }
        let made = try SmallTablespace()
        do {
            try made.mount(["-t", "tmpfs", "-o", "size=\(megabytes)m,mode=700,uid=65534,gid=65534", "tmpfs", made.mountPoint])
        } catch {
            made.remove()
            return .failure(MountRefused(reason: "\(error)"))
        }
        made.mounted = true
        return .success(made)
    }

    struct MountRefused: Error, CustomStringConvertible {
        let reason: String
        var description: String { "mounting a size-limited tmpfs is not permitted here (\(reason))" }
    }

    private init() throws {
        var template = Array("/tmp/skpg-tablespace-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemError("mkdtemp", errno: errno) }
        mountPoint = String(cString: made)
    }

    deinit { remove() }

    /// Bytes in use on the file system.
    func usedBytes() throws -> Int {
        var stats = statvfs()
        guard statvfs(mountPoint, &stats) == 0 else { throw SystemError("statvfs", errno: errno) }
        return Int(stats.f_blocks - stats.f_bfree) * Int(stats.f_frsize)
    }

    /// Sets the file system's size (tmpfs refuses a size below what is in use).
    func resize(bytes: Int) throws {
        try mount(["-o", "remount,size=\(bytes)", mountPoint])
    }

    /// Unmounts (lazily if a process still holds a file there) and removes the mount point.
    func remove() {
        if mounted {
            mounted = false
            if (try? ScratchPostgres.run(["/usr/bin/umount", mountPoint], seconds: 20)) == nil {
                _ = try? ScratchPostgres.run(["/usr/bin/umount", "-l", mountPoint], seconds: 20)
            }
        }
        rmdir(mountPoint)
    }

    private func mount(_ arguments: [String]) throws {
        try ScratchPostgres.run(["/usr/bin/mount"] + arguments, seconds: 20)
    }
}
