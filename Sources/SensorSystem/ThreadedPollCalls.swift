import CSensorLinux
import Glibc

/// The calls a thread that sleeps in `poll(2)` of its own needs from outside this module (the
/// D-Bus connection's thread, docs/dbus.md §4): through the funnel like every other call.
extension SystemCalls {
    /// `poll` on `entries`; EINTR retried; the number of entries with events.
    public static func poll(_ entries: inout [pollfd], timeoutMilliseconds: Int32) throws(SystemError) -> Int32 {
        let count = nfds_t(entries.count)
        return try syscall("poll") { Glibc.poll(&entries, count, timeoutMilliseconds) }
    }

    /// A close-on-exec duplicate of `descriptor` numbered 3 or above, owned by the caller.
    public static func duplicate(_ descriptor: Int32) throws(SystemError) -> Int32 {
        try syscall("fcntl(\(descriptor), F_DUPFD_CLOEXEC)") { fcntl(descriptor, F_DUPFD_CLOEXEC, 3) }
    }

    /// A non-blocking, close-on-exec eventfd: a counter another thread writes to wake a poller.
    public static func wakeCounter() throws(SystemError) -> Int32 {
        try syscall("eventfd") { csl_wake_counter() }
    }

    /// Names the calling thread for the kernel (`ps -L`, /proc; 15 bytes kept).
    public static func nameThisThread(_ name: String) {
        _ = csl_name_this_thread(name)
    }
}
