import Glibc

/// A file only the administrator may change (the configuration, app manifests): read whole, up to
/// a bound, and only when root or the daemon's user owns it and nobody else can write it — an
/// app's user who could edit its own `Binding.plist` could grant itself consent.
public enum AdministeredFile {
    /// The file's bytes. Refuses a file that is not a regular file, owned by another user,
    /// writable by group or others, or larger than `limit` bytes (checked on the open file, and
    /// again while reading, since it may grow in between).
    public static func read(_ path: String, limit: Int) throws(FileRefusal) -> [UInt8] {
        // O_NONBLOCK: opening a FIFO planted in place of the file must not hang the daemon.
        let fd: Int32
        do {
            fd = try syscall("open(\(path))") { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY) }
        } catch {
            throw .unreadable(error)
        }
        defer { close(fd) }
        var info = stat()
        do {
            _ = try syscall("fstat(\(path))") { fstat(fd, &info) }
        } catch {
            throw .unreadable(error)
        }
        try check(info, path: path)
        guard info.st_size <= limit else { throw .tooLarge(path, limit: limit) }
        var bytes = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n: Int
            do {
                n = try syscall("read(\(path))") { chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) } }
            } catch {
                throw .unreadable(error)
            }
            if n == 0 { return bytes }
            guard bytes.count + n <= limit else { throw .tooLarge(path, limit: limit) }
            bytes.append(contentsOf: chunk[0..<n])
        }
    }

    /// Refuses a folder (an app's manifest folder, apps.d) that another user could fill: owned by
    /// another user, or writable by group or others.
    public static func checkFolder(_ path: String) throws(FileRefusal) {
        var info = stat()
        do {
            _ = try syscall("stat(\(path))") { stat(path, &info) }
        } catch {
            throw .unreadable(error)
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw .notDirectory(path) }
        try checkOwnership(info, path: path)
    }

    private static func check(_ info: stat, path: String) throws(FileRefusal) {
        guard info.st_mode & S_IFMT == S_IFREG else { throw .notRegularFile(path) }
        try checkOwnership(info, path: path)
    }

    private static func checkOwnership(_ info: stat, path: String) throws(FileRefusal) {
        guard FileRefusal.isTrustedOwner(info.st_uid) else { throw .ownedByAnotherUser(path, uid: info.st_uid) }
        guard info.st_mode & (S_IWGRP | S_IWOTH) == 0 else { throw .writableByOthers(path, mode: info.st_mode) }
    }
}
