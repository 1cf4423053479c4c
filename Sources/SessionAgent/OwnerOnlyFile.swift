import Glibc
import SensorSystem

/// A small file of the participant's own that holds coordinates (the place labels, the place
/// book): read only when it is a regular file owned by this user that nobody else may read or
/// write — a file others can read has already leaked its places, and one others can write could
/// steer the categories.
enum OwnerOnlyFile {
    enum Refusal: Error, CustomStringConvertible {
        case unreadable(SystemError)
        case notRegularFile
        case notOwnedByThisUser(uid: UInt32)
        case openToOthers(mode: UInt32)
        case tooLarge(limit: Int)

        var description: String {
            switch self {
            case .unreadable(let error): return "\(error)"
            case .notRegularFile: return "it is not a regular file"
            case .notOwnedByThisUser(let uid): return "it is owned by uid \(uid), not by this user (uid \(geteuid()))"
            case .openToOthers(let mode):
                return "it has mode \(FileRefusal.octal(mode)): others may read or write it (chmod 600 it)"
            case .tooLarge(let limit): return "it is larger than \(limit) bytes"
            }
        }
    }

    /// The file's text; nil when there is no such file.
    static func read(_ path: String, limit: Int) throws(Refusal) -> String? {
        // O_NONBLOCK: a FIFO planted in its place must not hang the agent; O_NOFOLLOW: a link
        // must not lead the check to a file other than the one read.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw .unreadable(SystemError("open(\(path))", errno: errno))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .unreadable(SystemError("fstat(\(path))", errno: errno)) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .notRegularFile }
        guard info.st_uid == geteuid() else { throw .notOwnedByThisUser(uid: info.st_uid) }
        guard info.st_mode & 0o077 == 0 else { throw .openToOthers(mode: info.st_mode) }
        guard info.st_size <= limit else { throw .tooLarge(limit: limit) }
        let bytes: [UInt8]
        do throws(SystemError) {
            bytes = try SystemFiles.read(fileDescriptor: fd, path: path, limit: limit + 1)
        } catch {
            throw .unreadable(error)
        }
        // It may have grown since `fstat`.
        guard bytes.count <= limit else { throw .tooLarge(limit: limit) }
        return String(decoding: bytes, as: UTF8.self)
    }
}
