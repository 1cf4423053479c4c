import Foundation
import Glibc

/// The daemon's state directory (the store, the timeline): consent, stakes and every held sample
/// live there, so it is private to the daemon's user — the folder 0700, what is in it 0600.
/// Bits that let others read are taken away (and reported); anything others could have written,
/// or that another user owns, makes the daemon refuse to start rather than trust it.
public enum StateDirectory {
    /// One permission change made by `secure`.
    public struct Tightening: Hashable, Sendable, CustomStringConvertible {
        public var path: String
        public var from: UInt32
        public var to: UInt32
        public var description: String { "\(path) \(FileRefusal.octal(from)) → \(FileRefusal.octal(to))" }
    }

    /// Creates the folder (0700) if missing, then checks it and everything in it; returns the
    /// permission changes it made. Call it before the store opens: closing a descriptor of the
    /// database file would drop the store's own SQLite locks on it.
    public static func secure(_ path: String) throws(FileRefusal) -> [Tightening] {
        do {
            try SystemFiles.makeDirectory(path, mode: 0o700)
        } catch {
            throw .unreadable(error)
        }
        let fd: Int32
        do {
            fd = try syscall("open(\(path))") { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        } catch {
            throw .unreadable(error)
        }
        defer { close(fd) }
        var changes: [Tightening] = []
        try secure(folder: fd, path: path, depth: 0, changes: &changes)
        return changes
    }

    /// The store keeps its files at the top; a few levels leave room without walking a deep tree.
    private static let maximumDepth = 4

    private static func secure(folder fd: Int32, path: String, depth: Int, changes: inout [Tightening]) throws(FileRefusal) {
        var info = stat()
        do {
            _ = try syscall("fstat(\(path))") { fstat(fd, &info) }
        } catch {
            throw .unreadable(error)
        }
        try tighten(fd, info, path: path, changes: &changes)
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        } catch {
            throw .unreadable(SystemError("opendir(\(path))", errno: EIO))
        }
        // The folder is now ours alone and not writable by others, so nothing here changes
        // between the look (fstatat) and the open below.
        for name in names {
            let entryPath = path + "/" + name
            var entry = stat()
            do {
                _ = try syscall("fstatat(\(entryPath))") { fstatat(fd, name, &entry, AT_SYMLINK_NOFOLLOW) }
            } catch {
                if error.errno == ENOENT { continue }
                throw .unreadable(error)
            }
            switch entry.st_mode & S_IFMT {
            case S_IFREG:
                try checkOwner(entry, path: entryPath)
                guard entry.st_mode & 0o077 != 0 else { continue }
                let file = try openEntry(fd, name, path: entryPath, flags: O_RDONLY | O_NONBLOCK | O_NOCTTY)
                defer { close(file) }
                try tighten(file, entry, path: entryPath, changes: &changes)
            case S_IFDIR where depth < maximumDepth:
                let folder = try openEntry(fd, name, path: entryPath, flags: O_RDONLY | O_DIRECTORY)
                defer { close(folder) }
                try secure(folder: folder, path: entryPath, depth: depth + 1, changes: &changes)
            default:
                throw .foreignEntry(entryPath)
            }
        }
    }

    private static func openEntry(_ folder: Int32, _ name: String, path: String, flags: Int32) throws(FileRefusal) -> Int32 {
        do {
            return try syscall("openat(\(path))") { openat(folder, name, flags | O_NOFOLLOW | O_CLOEXEC) }
        } catch {
            throw .unreadable(error)
        }
    }

    private static func checkOwner(_ info: stat, path: String) throws(FileRefusal) {
        guard info.st_uid == geteuid() else { throw .notOwnedByDaemonUser(path, uid: info.st_uid) }
    }

    /// Refuses what others could have written; takes away the bits that let them read.
    private static func tighten(_ fd: Int32, _ info: stat, path: String, changes: inout [Tightening]) throws(FileRefusal) {
        try checkOwner(info, path: path)
        guard info.st_mode & (S_IWGRP | S_IWOTH) == 0 else { throw .writableByOthers(path, mode: info.st_mode) }
        let mode = info.st_mode & 0o7777
        guard mode & 0o077 != 0 else { return }
        let tightened = mode & 0o700
        do {
            _ = try syscall("fchmod(\(path))") { fchmod(fd, tightened) }
        } catch {
            throw .unreadable(error)
        }
        changes.append(Tightening(path: path, from: mode, to: tightened))
    }
}
