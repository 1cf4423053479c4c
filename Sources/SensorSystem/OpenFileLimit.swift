import Glibc

/// The process's limit on open file descriptors (`RLIMIT_NOFILE`, systemd's `LimitNOFILE=`).
public enum OpenFileLimit {
    /// The soft limit: opening descriptor number `current` fails with EMFILE. Nil when unlimited
    /// or unknown.
    public static var current: Int? {
        var limit = rlimit()
        guard
            (try? syscall("getrlimit(RLIMIT_NOFILE)", { getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) })) != nil,
            limit.rlim_cur != rlim_t.max  // RLIM_INFINITY
        else { return nil }
        return Int(exactly: limit.rlim_cur)
    }

    /// Descriptors open now (the entries of /proc/self/fd, less the one reading it); nil when
    /// it cannot be read.
    public static var inUse: Int? {
        guard let entries = try? SystemCalls.directoryEntries("/proc/self/fd") else { return nil }
        return max(0, entries.count - 1)
    }
}
