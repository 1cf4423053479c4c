import Glibc

/// Unix users by name (`getpwnam_r`). Reads /etc/passwd or NSS; may block briefly.
public enum UserDatabase {
    public static func uid(forName name: String) -> UInt32? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getpwnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return entry.pw_uid
    }

    public static func name(forUID uid: UInt32) -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil,
            let name = entry.pw_name
        else { return nil }
        return String(cString: name)
    }
}

/// Facts about a process.
public enum ProcessIdentity {
    /// This process's effective uid and gid: its user and group stand beside root as administrators.
    public static var own: (uid: UInt32, gid: UInt32) { (geteuid(), getegid()) }

    /// The executable of a process (`readlink /proc/<pid>/exe`); nil when it cannot be read.
    public static func executable(ofPID pid: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
