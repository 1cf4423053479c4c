import Foundation
import Glibc

/// Small whole-file reads and atomic writes of text, through `open`/`read` (not Foundation's URL
/// APIs, which bypass umockdev's preload). For sysfs/procfs attributes and small state files.
public enum SystemFiles {
    /// Reads a small file (≤ 64 KiB). May block: sysfs attributes of slow sensors can take
    /// seconds, so never call this on a sampling queue.
    public static func read(_ path: String, limit: Int = 65_536) throws(SystemError) -> String {
        let fd = try syscall("open(\(path))") { open(path, O_RDONLY | O_CLOEXEC) }
        defer { close(fd) }
        return String(decoding: try read(fileDescriptor: fd, path: path, limit: limit), as: UTF8.self)
    }

    /// What is left to read of an open file, until its end or until at least `limit` bytes are in
    /// (a caller that must refuse a longer file asks for one byte more than it takes). `path`
    /// names the file in errors.
    public static func read(fileDescriptor fd: Int32, path: String, limit: Int) throws(SystemError) -> [UInt8] {
        var bytes = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < limit {
            let n = try syscall("read(\(path))") { chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) } }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return bytes
    }

    /// The file's text without surrounding white space, or nil when it cannot be read.
    public static func readTrimmed(_ path: String) -> String? {
        guard let text = try? read(path) else { return nil }
        return text.trimmingCharacters(in: .whitespacesAndNewlines.union(.controlCharacters))
    }

    /// Writes `contents` to `path` atomically: a temporary file in the same folder, fsync, rename,
    /// fsync of the folder. After a crash the file holds the old or the new contents, never a mix.
    /// The temporary file is always a new file (`O_EXCL | O_NOFOLLOW`): in a folder others may
    /// write in, a link planted at its name must never lead the write, or the mode, to another file.
    public static func writeAtomically(_ path: String, contents: [UInt8], mode: mode_t = 0o600) throws(SystemError) {
        let temporary = path + ".tmp.\(getpid())"
        let fd = try createExclusively(temporary, mode: mode)
        var written = 0
        do {
            while written < contents.count {
                let n = try syscall("write(\(temporary))") {
                    contents.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
                }
                written += n
            }
            _ = try syscall("fsync(\(temporary))") { fsync(fd) }
            _ = try syscall("fchmod(\(temporary))") { fchmod(fd, mode) }
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        _ = try syscall("rename(\(temporary), \(path))") { rename(temporary, path) }
        let folder = (path as NSString).deletingLastPathComponent
        let dirfd = open(folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirfd >= 0 {
            fsync(dirfd)
            close(dirfd)
        }
    }

    /// Creates `path` as a new file, never through a link. Whatever already has the name (a
    /// leftover of a crash, or something planted) is unlinked — the entry itself, never what a
    /// link points to — and the creation tried once more.
    static func createExclusively(_ path: String, mode: mode_t) throws(SystemError) -> Int32 {
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC
        do {
            return try syscall("open(\(path))") { open(path, flags, mode) }
        } catch  where error.errno == EEXIST {
            _ = try syscall("unlink(\(path))") { unlink(path) }
            return try syscall("open(\(path))") { open(path, flags, mode) }
        }
    }

    /// Creates an empty file with `mode` unless `path` already exists; never through a link.
    public static func createIfMissing(_ path: String, mode: mode_t) throws(SystemError) {
        let fd: Int32
        do {
            fd = try syscall("open(\(path))") { open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode) }
        } catch  where error.errno == EEXIST {
            return
        }
        defer { close(fd) }
        // The umask may have taken bits away from `mode`; the file gets exactly `mode`.
        _ = try syscall("fchmod(\(path))") { fchmod(fd, mode) }
    }

    /// Creates a folder and its parents (like `mkdir -p`).
    public static func makeDirectory(_ path: String, mode: mode_t = 0o755) throws(SystemError) {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/" + component
            if mkdir(current, mode) != 0, errno != EEXIST { throw SystemError("mkdir(\(current))", errno: errno) }
        }
    }
}
