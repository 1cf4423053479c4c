import Glibc

/// A listening socket handed over by the service manager (socket activation): checked to be what
/// the reader API needs — a listening AF_UNIX stream socket bound to a path — and made
/// non-blocking and close-on-exec like the sockets the daemon opens itself.
public enum InheritedSocket {
    /// The path `fd` listens on; throws when `fd` is not a listening AF_UNIX stream socket with a
    /// filesystem path (an abstract or unnamed socket has no folder to publish the timeline in).
    public static func adoptListener(_ fd: Int32) throws(SystemError) -> String {
        func option(_ name: Int32, _ label: String) throws(SystemError) -> Int32 {
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            _ = try syscall("getsockopt(\(fd), \(label))") { getsockopt(fd, SOL_SOCKET, name, &value, &length) }
            return value
        }
        guard try option(SO_DOMAIN, "SO_DOMAIN") == AF_UNIX else {
            throw SystemError("fd \(fd) is not an AF_UNIX socket", errno: EAFNOSUPPORT)
        }
        guard try option(SO_TYPE, "SO_TYPE") == Int32(SOCK_STREAM.rawValue) else {
            throw SystemError("fd \(fd) is not a stream socket", errno: ESOCKTNOSUPPORT)
        }
        guard try option(SO_ACCEPTCONN, "SO_ACCEPTCONN") != 0 else {
            throw SystemError("fd \(fd) is not listening", errno: EINVAL)
        }
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        _ = try syscall("getsockname(\(fd))") {
            withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
        }
        let pathOffset = MemoryLayout<sa_family_t>.size
        let pathBytes = withUnsafeBytes(of: &address.sun_path) { raw in
            Array(raw.prefix(max(0, min(Int(length) - pathOffset, raw.count))).prefix { $0 != 0 })
        }
        guard !pathBytes.isEmpty, pathBytes[0] == UInt8(ascii: "/") else {
            throw SystemError("fd \(fd) is not bound to an absolute filesystem path", errno: EINVAL)
        }
        try UnixSocket.setNonBlocking(fd)
        _ = try syscall("fcntl(\(fd), F_SETFD)") { fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return String(decoding: pathBytes, as: UTF8.self)
    }
}
