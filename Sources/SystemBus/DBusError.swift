/// Why a bus operation failed. `remote` carries the D-Bus error name a peer replied with
/// (e.g. `org.bluez.Error.InProgress`), bounded and escaped, so callers branch on the name.
public enum DBusError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An error reply: its name and message, each at most 255 bytes, escaped.
    case remote(name: String, message: String)
    /// No reply within the call's timeout.
    case timedOut
    /// The connection is closed or was lost; nothing more goes through it. Open a new one.
    case disconnected
    /// A bound of `DBusLimits` was reached (pending calls, queued requests, subscriptions).
    case limitReached(String)
    /// The caller's arguments cannot be sent (bad name, path, value or signature).
    case invalidArgument(String)
    /// What came from the bus is not what was asked for, or exceeds a bound.
    case malformed(String)
    /// sd-bus refused: the call and the errno it returned.
    case failed(String, errno: Int32)

    init(name: String, message: String) {
        switch name {
        case "org.freedesktop.DBus.Error.Timeout", "org.freedesktop.DBus.Error.TimedOut": self = .timedOut
        default: self = .remote(name: DBusText.escaped(name), message: DBusText.escaped(message))
        }
    }

    /// The D-Bus error name of a `remote` error.
    public var name: String? {
        if case let .remote(name, _) = self { return name }
        return nil
    }

    public var description: String {
        switch self {
        case let .remote(name, message): "\(name): \(message)"
        case .timedOut: "no reply before the timeout"
        case .disconnected: "the bus connection is closed"
        case let .limitReached(what): "limit reached: \(what)"
        case let .invalidArgument(what): "invalid argument: \(what)"
        case let .malformed(what): "malformed input from the bus: \(what)"
        case let .failed(call, errno): "\(call) failed with errno \(errno)"
        }
    }
}
