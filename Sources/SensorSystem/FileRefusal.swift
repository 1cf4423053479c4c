import Glibc

/// Why the daemon will not use a file or folder: someone other than root or the daemon's own user
/// could change it, it is not what it should be, or it is larger than the daemon reads
/// (docs/configuration.md, "Ownership, permissions and sizes").
public enum FileRefusal: Error, Hashable, Sendable, CustomStringConvertible {
    case unreadable(SystemError)
    case notRegularFile(String)
    case notDirectory(String)
    case ownedByAnotherUser(String, uid: UInt32)
    case notOwnedByDaemonUser(String, uid: UInt32)
    case writableByOthers(String, mode: UInt32)
    case writableWithoutStickyBit(String, mode: UInt32)
    case foreignEntry(String)
    case tooLarge(String, limit: Int)

    public var description: String {
        switch self {
        case .unreadable(let error): return "\(error)"
        case .notRegularFile(let path): return "\(path) is not a regular file"
        case .notDirectory(let path): return "\(path) is not a folder"
        case .ownedByAnotherUser(let path, let uid):
            return "\(path) is owned by uid \(uid); it must be owned by root or by the daemon's user (uid \(geteuid()))"
        case .notOwnedByDaemonUser(let path, let uid):
            return "\(path) is owned by uid \(uid), not by the daemon's user (uid \(geteuid()))"
        case .writableByOthers(let path, let mode):
            return "\(path) has mode \(Self.octal(mode)): writable by users other than its owner"
        case .writableWithoutStickyBit(let path, let mode):
            return
                "\(path) has mode \(Self.octal(mode)): others may write in it and it has no sticky bit, so they could replace the daemon's files there"
        case .foreignEntry(let path): return "\(path) is neither a regular file nor a folder"
        case .tooLarge(let path, let limit): return "\(path) is larger than \(limit) bytes"
        }
    }

    /// The permission bits as `chmod` writes them (`0755`, `1777`).
    public static func octal(_ mode: UInt32) -> String {
        let digits = String(mode & 0o7777, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// Root and the daemon's own user: the only owners whose files and folders the daemon trusts.
    static func isTrustedOwner(_ uid: uid_t) -> Bool { uid == 0 || uid == geteuid() }
}
