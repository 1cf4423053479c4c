import Foundation
import Glibc
import SensorSystem

/// A bound `AF_UNIX` datagram socket standing where systemd's `$NOTIFY_SOCKET` would be: the
/// daemon's `READY=1`, `STATUS=`, `WATCHDOG=1` and `STOPPING=1` arrive here, for the tests and the
/// bench. Read from one thread.
public final class NotifyListener: @unchecked Sendable {
    // @unchecked: `fd` is immutable; `watchdogPings` is read from one thread only.
    public let path: String
    private let fd: Int32
    private var pings = 0

    public init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket(AF_UNIX, SOCK_DGRAM)", errno: errno) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8) + [0]
        guard bytes.count <= MemoryLayout.size(ofValue: address.sun_path) else {
            Glibc.close(fd)
            throw SystemError("bind(\(path))", errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            let error = errno
            Glibc.close(fd)
            throw SystemError("bind(\(path))", errno: error)
        }
    }

    deinit { Glibc.close(fd) }

    /// Messages received until `done` holds for all received so far, or `seconds` pass.
    public func receive(until done: ([String]) -> Bool, seconds: Double) -> [String] {
        var messages: [String] = []
        let deadline = Date().addingTimeInterval(seconds)
        while !done(messages) {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { break }
            if let message = next(waiting: left) { messages.append(message) }
        }
        return messages
    }

    /// Whether a message containing `text` arrives within `seconds`.
    public func waitFor(_ text: String, seconds: Double) -> Bool {
        receive(until: { $0.last?.contains(text) == true }, seconds: seconds).last?.contains(text) == true
    }

    /// `WATCHDOG=1` messages received so far (reads what is waiting, never blocks).
    public func watchdogPings() -> Int {
        while let message = next(waiting: 0) {
            if message.contains("WATCHDOG=1") { pings += 1 }
        }
        return pings
    }

    private func next(waiting seconds: Double) -> String? {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, seconds <= 0 ? 0 : Int32(seconds * 1000) + 1) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }
}
