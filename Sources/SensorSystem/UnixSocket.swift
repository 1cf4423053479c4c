import CSensorLinux
import Glibc

/// The Unix-domain stream sockets of the reader API, through the syscall funnel. Every fd is
/// non-blocking and close-on-exec; reads and writes report `.wouldBlock` instead of waiting.
public enum UnixSocket {
    /// Credentials of the process at the other end (`getsockopt(SO_PEERCRED)`), taken by the kernel
    /// at `connect`: they cannot be forged by the client.
    public struct PeerCredentials: Hashable, Sendable {
        public var pid: Int32
        public var uid: UInt32
        public var gid: UInt32
        /// Supplementary groups at `connect` (`SO_PEERGROUPS`); empty where the kernel does not say.
        public var groups: [UInt32]
        public init(pid: Int32, uid: UInt32, gid: UInt32, groups: [UInt32] = []) {
            self.pid = pid
            self.uid = uid
            self.gid = gid
            self.groups = groups
        }
    }

    /// `socket` + `bind` + `listen` on `path`, replacing a stale socket file; the file gets `mode`
    /// (access is decided per connection from peer credentials, so 0666 is the norm). `type` is
    /// `SOCK_STREAM` for the reader API, `SOCK_SEQPACKET` for the emulated BLE transport.
    public static func listen(
        path: String, mode: mode_t = 0o666, backlog: Int32 = 128,
        type: Int32 = Int32(SOCK_STREAM.rawValue)
    ) throws(SystemError) -> Int32 {
        let fd = try syscall("socket(AF_UNIX)") {
            socket(AF_UNIX, type | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        do {
            unlink(path)
            var address = try socketAddress(path)
            _ = try syscall("bind(\(path))") {
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                    }
                }
            }
            _ = try syscall("chmod(\(path))") { chmod(path, mode) }
            _ = try syscall("listen(\(path))") { Glibc.listen(fd, backlog) }
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    /// `accept4` of one pending connection, non-blocking and close-on-exec.
    public static func accept(_ listener: Int32) throws(SystemError) -> IOResult<Int32> {
        try nonBlockingSyscall("accept4") { csl_accept_nonblocking(listener) }
    }

    /// Connects to the socket at `path` (blocking connect, then the fd is made non-blocking if asked).
    public static func connect(path: String, nonBlocking: Bool = false) throws(SystemError) -> Int32 {
        let fd = try syscall("socket(AF_UNIX)") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        do {
            var address = try socketAddress(path)
            _ = try syscall("connect(\(path))") {
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                    }
                }
            }
            if nonBlocking { try setNonBlocking(fd) }
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    public static func setNonBlocking(_ fd: Int32) throws(SystemError) {
        let flags = try syscall("fcntl(F_GETFL)") { fcntl(fd, F_GETFL) }
        _ = try syscall("fcntl(F_SETFL)") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
    }

    /// Asks for a send buffer of `bytes` (`SO_SNDBUF`); the kernel caps it at
    /// `net.core.wmem_max`. Best effort: returns whether the kernel took the request.
    @discardableResult
    public static func requestSendBuffer(_ fd: Int32, bytes: Int32) -> Bool {
        var size = bytes
        return setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size)) == 0
    }

    /// `getsockopt(SO_PEERCRED)`, and the supplementary groups of `SO_PEERGROUPS` (best effort:
    /// none when the kernel cannot say, which only ever withholds what a group would show).
    public static func peerCredentials(_ fd: Int32) throws(SystemError) -> PeerCredentials {
        var pid: pid_t = 0, uid: uid_t = 0, gid: gid_t = 0
        _ = try syscall("getsockopt(SO_PEERCRED)") { csl_peer_credentials(fd, &pid, &uid, &gid) }
        return PeerCredentials(pid: pid, uid: uid, gid: gid, groups: peerGroups(fd))
    }

    /// At most NGROUPS_MAX (65 536) groups; a first try with 64 covers nearly every user.
    private static func peerGroups(_ fd: Int32) -> [UInt32] {
        let peerGroupsOption: Int32 = 59  // SO_PEERGROUPS (Linux 4.13), not exported by Glibc's module
        var groups = [gid_t](repeating: 0, count: 64)
        for _ in 0..<2 {
            var length = socklen_t(groups.count * MemoryLayout<gid_t>.size)
            if getsockopt(fd, SOL_SOCKET, peerGroupsOption, &groups, &length) == 0 {
                return Array(groups.prefix(Int(length) / MemoryLayout<gid_t>.size))
            }
            guard errno == ERANGE, Int(length) / MemoryLayout<gid_t>.size <= 65_536 else { return [] }
            groups = [gid_t](repeating: 0, count: Int(length) / MemoryLayout<gid_t>.size)
        }
        return []
    }

    /// `read` into `buffer`; `.done(0)` is end of stream.
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try nonBlockingSyscall("read(socket)") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// `send` with `MSG_NOSIGNAL` (a vanished peer is an EPIPE error, not a SIGPIPE).
    public static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try nonBlockingSyscall("send(socket)") { send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) }
    }

    /// `sendmsg` of `first` then `second` in one call (a header and the bytes after it, without
    /// joining them first), with `MSG_NOSIGNAL`.
    public static func write(
        _ fd: Int32, _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer
    ) throws(SystemError) -> IOResult<Int> {
        var parts = [
            iovec(iov_base: UnsafeMutableRawPointer(mutating: first.baseAddress), iov_len: first.count),
            iovec(iov_base: UnsafeMutableRawPointer(mutating: second.baseAddress), iov_len: second.count),
        ]
        return try parts.withUnsafeMutableBufferPointer { (vector) throws(SystemError) in
            var message = msghdr()
            message.msg_iov = vector.baseAddress
            message.msg_iovlen = vector.count
            return try nonBlockingSyscall("sendmsg(socket)") { sendmsg(fd, &message, Int32(MSG_NOSIGNAL)) }
        }
    }

    /// Writes all of `bytes` to a blocking fd.
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                Result { () throws(SystemError) in try write(fd, UnsafeRawBufferPointer(rebasing: raw[offset...])) }
            }
            switch try result.get() {
            case .done(let n): offset += n
            case .wouldBlock: _ = poll(fd: fd, events: Int16(POLLOUT), timeoutMilliseconds: 1000)
            }
        }
    }

    /// `poll` one fd; returns the revents (0 on timeout).
    public static func poll(fd: Int32, events: Int16, timeoutMilliseconds: Int32) -> Int16 {
        // A failure (EBADF, ENOMEM) reads as "nothing ready"; the caller's next read or write names it.
        (try? SystemCalls.poll(fd, events: events, timeoutMilliseconds: timeoutMilliseconds)) ?? 0
    }

    static func socketAddress(_ path: String) throws(SystemError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            throw SystemError("socket path too long (\(bytes.count) ≥ \(capacity)): \(path)", errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }
}
