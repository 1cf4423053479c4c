import SensorSystem
import Synchronization

/// A Unix fd received from (or to be sent on) the bus, owned here: closed exactly once, by
/// `close()` or when the last reference goes. `take()` hands the number over to a new owner.
/// Received descriptors are duplicates (`F_DUPFD_CLOEXEC`) of the ones the message owned, so
/// they outlive the message.
public final class DBusFileDescriptor: Sendable, Equatable, CustomStringConvertible {
    private let number: Mutex<Int32?>

    /// Takes ownership of `descriptor`.
    public init(owning descriptor: Int32) { number = Mutex(descriptor) }

    deinit { close() }

    /// The fd, while this object still owns it.
    public var descriptor: Int32? { number.withLock { $0 } }

    /// Gives the fd up: the caller closes it. Nil when closed or taken already.
    public func take() -> Int32? {
        number.withLock { value in
            defer { value = nil }; return value
        }
    }

    public func close() {
        if let descriptor = take() { SystemCalls.close(descriptor) }
    }

    public var description: String { descriptor.map { "fd \($0)" } ?? "fd (closed)" }

    public static func == (lhs: DBusFileDescriptor, rhs: DBusFileDescriptor) -> Bool { lhs === rhs }
}
