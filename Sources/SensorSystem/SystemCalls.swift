import Glibc

/// Typed wrappers of the libc calls the rest of the code needs, each through `syscall` /
/// `nonBlockingSyscall`: EINTR is retried, EAGAIN is `.wouldBlock`, a failure is a `SystemError`
/// naming the call (and the path, where there is one). Nothing outside this module calls libc's
/// file, socket, signal or clock functions directly.
public enum SystemCalls {
    /// `read` on a blocking fd; 0 is end of file.
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, _ what: @autoclosure () -> String = "fd")
        throws(SystemError) -> Int
    {
        try syscall("read(\(what()))") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// `read` on a non-blocking fd: `.wouldBlock` when nothing is there yet.
    public static func readNonBlocking(
        _ fd: Int32, into buffer: UnsafeMutableRawBufferPointer,
        _ what: @autoclosure () -> String = "fd"
    ) throws(SystemError) -> IOResult<Int> {
        try nonBlockingSyscall("read(\(what()))") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// One `write` of `bytes` (it may take fewer).
    public static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, _ what: @autoclosure () -> String = "fd")
        throws(SystemError) -> Int
    {
        try syscall("write(\(what()))") { Glibc.write(fd, bytes.baseAddress, bytes.count) }
    }

    /// One `pwrite` of `bytes` at `offset` (it may take fewer).
    public static func pwrite(
        _ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int, _ what: @autoclosure () -> String = "fd"
    ) throws(SystemError) -> Int {
        try syscall("pwrite(\(what()))") { Glibc.pwrite(fd, bytes.baseAddress, bytes.count, off_t(offset)) }
    }

    /// One `pread` into `buffer` from `offset`; 0 is end of file.
    public static func pread(
        _ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int, _ what: @autoclosure () -> String = "fd"
    ) throws(SystemError) -> Int {
        try syscall("pread(\(what()))") { Glibc.pread(fd, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// `ftruncate(fd, length)`.
    public static func ftruncate(_ fd: Int32, to length: Int, _ what: @autoclosure () -> String = "fd") throws(SystemError) {
        _ = try syscall("ftruncate(\(what()))") { Glibc.ftruncate(fd, off_t(length)) }
    }

    /// `fdatasync(fd)`: the file's data on the disk.
    public static func fdatasync(_ fd: Int32, _ what: @autoclosure () -> String = "fd") throws(SystemError) {
        _ = try syscall("fdatasync(\(what()))") { Glibc.fdatasync(fd) }
    }

    /// `fstat(fd)`.
    public static func fstat(_ fd: Int32, _ what: @autoclosure () -> String = "fd") throws(SystemError) -> Glibc.stat {
        var status = Glibc.stat()
        _ = try syscall("fstat(\(what()))") { Glibc.fstat(fd, &status) }
        return status
    }

    /// `open(path, flags, mode)`.
    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(SystemError) -> Int32 {
        try syscall("open(\(path))") { Glibc.open(path, flags, mode) }
    }

    /// `close`. Never retried: on Linux the fd is released even when close reports EINTR, and
    /// a retry could close a number another thread has just been given.
    @discardableResult
    public static func close(_ fd: Int32) -> SystemError? {
        if Glibc.close(fd) == 0 { return nil }
        let error = Glibc.errno
        return error == EINTR ? nil : SystemError("close(\(fd))", errno: error)
    }

    /// `shutdown(fd, SHUT_RDWR)`: the peer sees the end now, whoever still holds the fd.
    @discardableResult
    public static func shutdown(_ fd: Int32) -> SystemError? {
        do { _ = try syscall("shutdown(\(fd))") { Glibc.shutdown(fd, Int32(SHUT_RDWR)) } } catch { return error }
        return nil
    }

    /// `unlink(path)`.
    public static func unlink(_ path: String) throws(SystemError) {
        _ = try syscall("unlink(\(path))") { Glibc.unlink(path) }
    }

    /// `stat(path)`.
    public static func stat(_ path: String) throws(SystemError) -> Glibc.stat {
        var status = Glibc.stat()
        _ = try syscall("stat(\(path))") { libcStat(path, &status) }
        return status
    }

    /// `statvfs(path)`.
    public static func statvfs(_ path: String) throws(SystemError) -> Glibc.statvfs {
        var status = Glibc.statvfs()
        _ = try syscall("statvfs(\(path))") { libcStatvfs(path, &status) }
        return status
    }

    /// Entry names of a directory, `.` and `..` left out, in the order `readdir` gives them.
    /// `opendir`/`readdir` on purpose: umockdev's preload library intercepts exactly these
    /// (scandir and the Foundation enumerators bypass it, docs/iio.md).
    public static func directoryEntries(_ path: String) throws(SystemError) -> [String] {
        guard let directory = Glibc.opendir(path) else { throw SystemError("opendir(\(path))", errno: Glibc.errno) }
        defer { Glibc.closedir(directory) }
        var names: [String] = []
        while true {
            Glibc.errno = 0
            guard let entry = Glibc.readdir(directory) else {
                if Glibc.errno != 0 { throw SystemError("readdir(\(path))", errno: Glibc.errno) }
                return names
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
    }

    /// `clock_gettime(clock)` in nanoseconds.
    public static func clockNanoseconds(_ clock: clockid_t) throws(SystemError) -> Int64 {
        var ts = timespec()
        _ = try syscall("clock_gettime(\(clock))") { clock_gettime(clock, &ts) }
        return Int64(ts.tv_sec) &* 1_000_000_000 &+ Int64(ts.tv_nsec)
    }

    /// `sigaction(number, SIG_IGN)`: the process ignores the signal (SIGPIPE, or one a Dispatch
    /// signal source takes over).
    public static func ignoreSignal(_ number: Int32) throws(SystemError) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = SIG_IGN
        sigemptyset(&action.sa_mask)
        _ = try syscall("sigaction(\(number))") { sigaction(number, &action, nil) }
    }

    /// `pthread_sigmask(SIG_BLOCK, …)`: the calling thread, and every thread it starts from now on,
    /// blocks `numbers` (so only a Dispatch signal source reads them). Does not block.
    public static func blockSignals(_ numbers: [Int32]) throws(SystemError) {
        var blocked = sigset_t()
        sigemptyset(&blocked)
        for number in numbers { sigaddset(&blocked, number) }
        // pthread_sigmask returns the error number instead of setting errno.
        let result = pthread_sigmask(SIG_BLOCK, &blocked, nil)
        if result != 0 { throw SystemError("pthread_sigmask(SIG_BLOCK)", errno: result) }
    }

    /// An `AF_UNIX` datagram socket, close-on-exec.
    public static func datagramSocket() throws(SystemError) -> Int32 {
        try syscall("socket(AF_UNIX, SOCK_DGRAM)") {
            socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
    }

    /// A connected pair of blocking `AF_UNIX` stream sockets, close-on-exec.
    public static func streamSocketPair() throws(SystemError) -> (Int32, Int32) {
        var pair: [Int32] = [-1, -1]
        _ = try syscall("socketpair(AF_UNIX, SOCK_STREAM)") {
            socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair)
        }
        return (pair[0], pair[1])
    }

    /// `sendto` one datagram to `address` (of `length` bytes), with `MSG_NOSIGNAL`.
    public static func sendDatagram(
        _ fd: Int32, _ bytes: UnsafeRawBufferPointer, to address: inout sockaddr_un,
        length: socklen_t
    ) throws(SystemError) -> IOResult<Int> {
        try withUnsafePointer(to: &address) { (pointer) throws(SystemError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (raw) throws(SystemError) in
                try nonBlockingSyscall("sendto") { sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), raw, length) }
            }
        }
    }

    /// `poll` one fd, EINTR retried; the revents, 0 on timeout.
    public static func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) throws(SystemError) -> Int16 {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        let n = try syscall("poll(\(fd))") { Glibc.poll(&entry, 1, timeoutMilliseconds) }
        return n > 0 ? entry.revents : 0
    }
}

// Outside `SystemCalls`, whose own `stat`/`statvfs` would shadow them; the struct and the
// function share each name, and only an unqualified call picks the function.
private func libcStat(_ path: String, _ status: inout Glibc.stat) -> Int32 { stat(path, &status) }
private func libcStatvfs(_ path: String, _ status: inout Glibc.statvfs) -> Int32 { statvfs(path, &status) }
