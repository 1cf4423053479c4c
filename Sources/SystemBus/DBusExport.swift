import Dispatch
import Synchronization

/// A method call to an object this connection exports (`DBusConnection.export`): decoded
/// within the connection's limits, hostile like every other input from the bus.
public struct DBusMethodCall: Sendable, Equatable {
    /// The caller's unique name; check it before trusting the call.
    public var sender: String?
    public var path: DBusObjectPath
    public var interface: String
    public var member: String
    public var arguments: [DBusValue]

    public init(sender: String?, path: DBusObjectPath, interface: String, member: String, arguments: [DBusValue]) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }
}

/// The answer to an exported method call.
public enum DBusMethodReply: Sendable, Equatable {
    case values([DBusValue])
    /// An error reply: a D-Bus error name (`org.bluez.Error.Rejected`) and a message.
    case error(name: String, message: String)
}

/// A live export; `cancel()` removes the object (from any thread).
public final class DBusExport: Sendable {
    private let connection: Mutex<DBusConnection?>
    let exporter: Exporter

    init(connection: DBusConnection, exporter: Exporter) {
        self.connection = Mutex(connection)
        self.exporter = exporter
    }

    /// After it returns no call reaches the handler any more (a call already handed over is still
    /// answered); the path is removed on the bus thread soon after.
    public func cancel() {
        exporter.cancelled.withLock { $0 = true }
        if let connection = connection.withLock({ value in
            defer { value = nil }
            return value
        }) {
            connection.unexport(exporter)
        }
    }
}

/// What an exported object needs on the bus thread. `thread` is set and read on the bus thread
/// only; `connection` is set once before the export is submitted.
final class Exporter: @unchecked Sendable {  // @unchecked: `thread` is confined to the bus thread
    let path: DBusObjectPath
    let interface: String
    let queue: DispatchQueue
    let limits: DBusLimits
    let handler: @Sendable (DBusMethodCall, @escaping @Sendable (DBusMethodReply) -> Void) -> Void
    var thread: BusThread?
    var connection: WeakConnection?
    /// Set by `DBusExport.cancel()` from any thread: calls arriving after it are left to sd-bus.
    let cancelled = Mutex(false)

    init(
        path: DBusObjectPath, interface: String, queue: DispatchQueue, limits: DBusLimits,
        handler: @escaping @Sendable (DBusMethodCall, @escaping @Sendable (DBusMethodReply) -> Void) -> Void
    ) {
        self.path = path
        self.interface = interface
        self.queue = queue
        self.limits = limits
        self.handler = handler
    }
}

/// The connection an answer goes back through, without keeping it alive.
struct WeakConnection: Sendable {
    weak var value: DBusConnection?
    init(_ value: DBusConnection) { self.value = value }
}

/// True the first time only: an exported call is answered once.
final class AnswerOnce: Sendable {
    private let done = Mutex(false)

    func first() -> Bool {
        done.withLock { done in
            defer { done = true }
            return !done
        }
    }
}
