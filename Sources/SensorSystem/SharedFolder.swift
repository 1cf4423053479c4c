import Glibc

/// A folder the daemon puts files in that others may share, like the socket's (`/run/sensorkit`,
/// or `/tmp` in a test): it is safe only if nobody else can replace or plant the daemon's files
/// there — owned by root or the daemon's user, and where others may write, the sticky bit set.
public enum SharedFolder {
    /// Creates the folder (0755) if missing and refuses it when others could replace files in it.
    public static func prepare(_ path: String) throws(FileRefusal) {
        var info = stat()
        do {
            try SystemFiles.makeDirectory(path)
            _ = try syscall("stat(\(path))") { stat(path, &info) }
        } catch {
            throw .unreadable(error)
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw .notDirectory(path) }
        guard FileRefusal.isTrustedOwner(info.st_uid) else { throw .ownedByAnotherUser(path, uid: info.st_uid) }
        if info.st_mode & (S_IWGRP | S_IWOTH) != 0, info.st_mode & S_ISVTX == 0 {
            throw .writableWithoutStickyBit(path, mode: info.st_mode)
        }
    }
}
