import Dispatch
import Synchronization

/// A live signal subscription; `cancel()` removes the match (from any thread).
public final class DBusSubscription: Sendable {
    private let connection: Mutex<DBusConnection?>
    let subscriber: Subscriber

    init(connection: DBusConnection, subscriber: Subscriber) {
        self.connection = Mutex(connection)
        self.subscriber = subscriber
    }

    public func cancel() {
        subscriber.stop()
        if let connection = connection.withLock({ value in
            defer { value = nil }; return value
        }) {
            connection.cancel(subscriber)
        }
    }
}

/// One subscriber's delivery state: the signals handed to its queue and not yet handled are
/// counted; past the bound they are counted as lost and reported once the queue drains.
final class Subscriber: Sendable {
    let rule: String
    let queue: DispatchQueue
    let limits: DBusLimits
    let handler: @Sendable (DBusSignalEvent) -> Void
    let installed: @Sendable (DBusError?) -> Void
    /// `accepting`: new signals are taken; `cancelled`: those already queued are dropped too.
    private let delivery = Mutex<(queued: Int, lost: Int, accepting: Bool, cancelled: Bool)>((0, 0, true, false))

    init(
        rule: String, queue: DispatchQueue, limits: DBusLimits, handler: @escaping @Sendable (DBusSignalEvent) -> Void,
        installed: @escaping @Sendable (DBusError?) -> Void
    ) {
        self.rule = rule
        self.queue = queue
        self.limits = limits
        self.handler = handler
        self.installed = installed
    }

    func stop() {
        delivery.withLock { state in
            state.accepting = false
            state.cancelled = true
        }
    }

    func deliver(_ message: DBusMessage?) {
        let accepted = delivery.withLock { state -> Bool in
            if !state.accepting { return false }
            guard message != nil, state.queued < limits.queuedSignalsPerSubscriber else { state.lost += 1; return false }
            state.queued += 1
            return true
        }
        guard accepted, let message else { return }
        queue.async { [self] in
            if delivery.withLock({ $0.cancelled }) { return }
            handler(.signal(message))
            let lost = delivery.withLock { state -> Int in
                state.queued -= 1
                guard state.queued == 0 else { return 0 }
                defer { state.lost = 0 }
                return state.lost
            }
            if lost > 0 { handler(.lost(lost)) }
        }
    }

    /// The connection ended: signals already queued are still handled, then `.ended`.
    func end() {
        let wasAccepting = delivery.withLock { state in
            defer { state.accepting = false }; return state.accepting
        }
        if wasAccepting {
            queue.async { [self] in
                if !delivery.withLock({ $0.cancelled }) { handler(.ended) }
            }
        }
    }
}
