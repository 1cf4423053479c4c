import CSensorLinux
import Glibc

/// Unix-domain `SOCK_SEQPACKET` sockets: connection-oriented, and every `send` arrives as one
/// packet with its boundaries kept — what an L2CAP LE channel gives the ATT bearer, so the
/// emulated BLE transport uses them (docs/ble.md). Every fd is non-blocking and close-on-exec.
public enum SeqPacketSocket {
    private static let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)

    /// Connects to the listening socket at `path`. ENOENT / ECONNREFUSED come back as the
    /// `SystemError`'s errno (for the BLE bridge: the peripheral is out of range).
    public static func connect(path: String) throws(SystemError) -> Int32 {
        let fd = try syscall("socket(AF_UNIX, SOCK_SEQPACKET)") { socket(AF_UNIX, type, 0) }
        do throws(SystemError) {
            var address = try UnixSocket.socketAddress(path)
            let result = try nonBlockingSyscall("connect(\(path))") {
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                    }
                }
            }
            // A Unix socket connects at once or fails; EAGAIN means the listener's backlog is full.
            if case .wouldBlock = result { throw SystemError("connect(\(path))", errno: EAGAIN) }
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    /// `socket` + `bind` + `listen` at `path` (replacing a stale socket file).
    public static func listen(path: String, backlog: Int32 = 4) throws(SystemError) -> Int32 {
        try UnixSocket.listen(path: path, backlog: backlog, type: Int32(SOCK_SEQPACKET.rawValue))
    }

    /// `accept4` of one pending connection, non-blocking and close-on-exec.
    public static func accept(_ listener: Int32) throws(SystemError) -> IOResult<Int32> {
        try nonBlockingSyscall("accept4") { csl_accept_nonblocking(listener) }
    }

    /// A connected pair (`socketpair`), for tests and in-process peers.
    public static func pair() throws(SystemError) -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        _ = try syscall("socketpair(AF_UNIX, SOCK_SEQPACKET)") { socketpair(AF_UNIX, type, 0, &fds) }
        return (fds[0], fds[1])
    }

    /// Sends `packet` as one packet (`MSG_NOSIGNAL`: a vanished peer is EPIPE, not SIGPIPE).
    public static func send(_ fd: Int32, _ packet: [UInt8]) throws(SystemError) -> IOResult<Int> {
        let result = packet.withUnsafeBytes { raw in
            Result { () throws(SystemError) in
                try nonBlockingSyscall("send(seqpacket)") { Glibc.send(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL)) }
            }
        }
        return try result.get()
    }

    public enum Received: Equatable, Sendable {
        case packet([UInt8])
        /// A packet longer than the buffer: its first bytes and its real length.
        case truncated([UInt8], length: Int)
        /// The peer closed the connection.
        case closed
    }

    /// Receives one packet of at most `capacity` bytes (`MSG_TRUNC` reports a longer one).
    public static func receive(_ fd: Int32, capacity: Int) throws(SystemError) -> IOResult<Received> {
        var buffer = [UInt8](repeating: 0, count: max(1, capacity))
        let outcome = buffer.withUnsafeMutableBytes { raw in
            Result { () throws(SystemError) in
                try nonBlockingSyscall("recv(seqpacket)") { recv(fd, raw.baseAddress, raw.count, Int32(MSG_TRUNC)) }
            }
        }
        switch try outcome.get() {
        case .wouldBlock: return .wouldBlock
        case .done(0): return .done(.closed)
        case .done(let length) where length > buffer.count: return .done(.truncated(buffer, length: length))
        case .done(let length): return .done(.packet(Array(buffer[..<length])))
        }
    }
}
