import Foundation
import Glibc
import SensorSystem
import Synchronization

/// A Unix-socket relay that records every byte it passes: a client (the session agent) connects
/// to `path`, the relay connects on to `target` (the daemon's socket) and copies both ways, so a
/// test can search what the client really sent. The daemon sees the relay's credentials — this
/// test process's uid, the same as the agent's.
final class ByteRecordingRelay: Sendable {
    /// Bytes recorded per direction at most; the rest is passed on unrecorded (and noted).
    static let recordLimit = 16 << 20

    let path: String
    private let target: String
    private let listener: Int32
    private let sent = Mutex<[UInt8]>([])
    private let received = Mutex<[UInt8]>([])
    private let overflowed = Atomic<Bool>(false)
    private let connections = Mutex<[Int32]>([])

    init(path: String, target: String) throws {
        self.path = path
        self.target = target
        listener = try UnixSocket.listen(path: path, mode: 0o600)
        // Blocking accepts on a thread of their own; `stop` wakes it with shutdown.
        let flags = fcntl(listener, F_GETFL)
        _ = fcntl(listener, F_SETFL, flags & ~O_NONBLOCK)
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    deinit { close(listener) }

    /// What clients sent towards `target`, and what came back.
    var bytesSent: [UInt8] { sent.withLock { $0 } }
    var bytesReceived: [UInt8] { received.withLock { $0 } }
    var recordedEverything: Bool { !overflowed.load(ordering: .relaxed) }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        connections.withLock { fds in
            for fd in fds { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            // Children the test starts later must not hold the connection open.
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            guard let server = try? UnixSocket.connect(path: target) else {
                close(client)
                continue
            }
            connections.withLock { $0 += [client, server] }
            let pumps = PumpCount()
            let finish: @Sendable () -> Void = { [self] in
                // The second pump to end closes both (under the lock `stop` shuts them down with).
                guard pumps.ended.add(1, ordering: .acquiringAndReleasing).newValue == 2 else { return }
                connections.withLock { fds in
                    fds.removeAll { $0 == client || $0 == server }
                    close(client)
                    close(server)
                }
            }
            Thread.detachNewThread { [self] in
                pump(from: client, to: server, into: sent)
                finish()
            }
            Thread.detachNewThread { [self] in
                pump(from: server, to: client, into: received)
                finish()
            }
        }
    }

    private func pump(from source: Int32, to destination: Int32, into record: borrowing Mutex<[UInt8]>) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(source, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            let chunk = Array(buffer[0..<n])
            record.withLock { bytes in
                if bytes.count + n <= Self.recordLimit {
                    bytes += chunk
                } else {
                    overflowed.store(true, ordering: .relaxed)
                }
            }
            guard Self.sendAll(destination, chunk) else { break }
        }
        // The other side sees the end too.
        shutdown(destination, Int32(SHUT_WR))
        shutdown(source, Int32(SHUT_RD))
    }

    /// `send` without SIGPIPE: a peer gone is the end of the relay, not of the test process.
    private static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }
}

/// How many of a connection's two pumps have ended.
private final class PumpCount: Sendable {
    let ended = Atomic<Int>(0)
}
