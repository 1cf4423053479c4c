import Dispatch
import Synchronization

/// One message a monitor connection saw (`DBusConnection(monitoring:_:)`): its header, and only
/// the arguments its monitor selected.
public struct DBusMonitoredMessage: Sendable, Equatable {
    /// The message type, by the specification's numbers.
    public enum Kind: UInt8, Sendable {
        case methodCall = 1, methodReturn = 2, error = 3, signal = 4
    }

    public var kind: Kind
    public var serial: UInt64
    /// The call a reply or an error answers.
    public var replySerial: UInt64?
    public var sender: String?
    public var destination: String?
    public var path: DBusObjectPath?
    public var interface: String?
    public var member: String?
    /// The selected arguments by position.
    public var arguments: [Int: DBusValue]

    public init(
        kind: Kind, serial: UInt64, replySerial: UInt64?, sender: String?, destination: String?, path: DBusObjectPath?,
        interface: String?, member: String?, arguments: [Int: DBusValue]
    ) {
        self.kind = kind
        self.serial = serial
        self.replySerial = replySerial
        self.sender = sender
        self.destination = destination
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }
}

/// What a monitor connection watches and where it hands what it saw: the match rules given to
/// `BecomeMonitor`, which arguments of a message to read (`select`, asked on the bus thread with
/// the header only, so text a caller has no use for — a notification's summary and body — is
/// never read into a value), and the handler on `queue`. At most
/// `DBusLimits.queuedSignalsPerSubscriber` messages wait on the queue; the rest are counted and
/// reported as `.lost` once it drains.
public final class DBusMonitor: Sendable {
    public enum Event: Sendable, Equatable {
        case message(DBusMonitoredMessage)
        case lost(Int)
        /// The connection ended.
        case ended
    }

    public let rules: [String]
    let limits: DBusLimits
    let queue: DispatchQueue
    let select: @Sendable (DBusMonitoredMessage) -> Set<Int>
    private let handler: @Sendable (Event) -> Void
    private let delivery = Mutex<(queued: Int, lost: Int, ended: Bool)>((0, 0, false))

    public init(
        rules: [String], limits: DBusLimits = DBusLimits(), queue: DispatchQueue,
        select: @escaping @Sendable (DBusMonitoredMessage) -> Set<Int>, handler: @escaping @Sendable (Event) -> Void
    ) {
        self.rules = rules
        self.limits = limits
        self.queue = queue
        self.select = select
        self.handler = handler
    }

    func deliver(_ message: DBusMonitoredMessage) {
        let accepted = delivery.withLock { state -> Bool in
            guard !state.ended, state.queued < limits.queuedSignalsPerSubscriber else {
                state.lost += 1
                return false
            }
            state.queued += 1
            return true
        }
        guard accepted else { return }
        queue.async { [self] in
            handler(.message(message))
            let lost = delivery.withLock { state -> Int in
                state.queued -= 1
                guard state.queued == 0 else { return 0 }
                defer { state.lost = 0 }
                return state.lost
            }
            if lost > 0 { handler(.lost(lost)) }
        }
    }

    func end() {
        let first = delivery.withLock { state in
            defer { state.ended = true }
            return !state.ended
        }
        if first { queue.async { [self] in handler(.ended) } }
    }
}
