import Glibc
import SensorSystem

/// `sd_notify` without libsystemd: one datagram to `$NOTIFY_SOCKET` (`READY=1`, `STOPPING=1`,
/// `WATCHDOG=1`, `STATUS=…`). Does nothing when not started by systemd. Never blocks.
public struct ServiceManagerNotifier: Sendable {
    private let path: String?

    public init(environment: [String: String]) {
        path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Whether systemd asked for a watchdog ping, and how often (half of `WATCHDOG_USEC`).
    public static func watchdogInterval(environment: [String: String]) -> Double? {
        guard let usec = environment["WATCHDOG_USEC"].flatMap(Double.init), usec > 0 else { return nil }
        if let pid = environment["WATCHDOG_PID"].flatMap(Int32.init), pid != getpid() { return nil }
        return usec / 2e6
    }

    public func notify(_ state: String) {
        guard let path else { return }
        // Best effort, as sd_notify: a service manager that cannot be told is not the daemon's failure.
        guard let fd = try? SystemCalls.datagramSocket() else { return }
        defer { SystemCalls.close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }  // abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        _ = Array(state.utf8).withUnsafeBytes { try? SystemCalls.sendDatagram(fd, $0, to: &address, length: length) }
    }
}
