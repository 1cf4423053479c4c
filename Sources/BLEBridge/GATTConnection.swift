import Dispatch

/// Arms and cancels the one transaction timer of a connection. Production: `DispatchTransactionTimer`;
/// tests may fire it by hand.
public protocol TransactionTimer: AnyObject {
    /// Calls `expired` on `queue` after `nanoseconds` unless `cancel()` or another `arm` comes first.
    func arm(nanoseconds: Int64, on queue: DispatchQueue, _ expired: @escaping @Sendable () -> Void)
    func cancel()
}

public final class DispatchTransactionTimer: TransactionTimer {
    private var timer: (any DispatchSourceTimer)?

    public init() {}

    public func arm(nanoseconds: Int64, on queue: DispatchQueue, _ expired: @escaping @Sendable () -> Void) {
        cancel()
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .nanoseconds(Int(clamping: nanoseconds)))
        timer.setEventHandler(handler: expired)
        timer.resume()
        self.timer = timer
    }

    public func cancel() {
        timer?.cancel()
        timer = nil
    }

    deinit { timer?.cancel() }
}

/// Runs a `GATTClient` over an `ATTBearer` on one serial queue: reads PDUs when the bearer's fd
/// is readable, sends what the client asks, arms the transaction timer, and hands events to
/// `onEvent` (on the same queue). A link failure closes the bearer and is reported once as
/// `.linkFailed`. All methods must be called on `queue`.
public final class GATTConnection: @unchecked Sendable {
    public let queue: DispatchQueue
    /// The ATT transaction timeout (Core Vol 3 Part F §3.3.3: 30 s).
    public let transactionTimeoutNanoseconds: Int64
    public private(set) var client: GATTClient
    public private(set) var ignoredPDUs = 0
    /// PDUs read per turn on the queue. Links share one queue: a peripheral that floods its
    /// socket gets this many, then the other links' turns come (the read source fires again while
    /// PDUs are waiting), so a flood cannot make another strap's measurements late.
    public static let pdusPerTurn = 16

    private let bearer: any ATTBearer
    private let timer: any TransactionTimer
    private let onEvent: (GATTClient.Event) -> Void
    private var source: (any DispatchSourceRead)?
    private var closed = false

    public init(
        bearer: any ATTBearer, queue: DispatchQueue, preferredMTU: UInt16 = 247,
        transactionTimeoutNanoseconds: Int64 = 30_000_000_000, timer: any TransactionTimer = DispatchTransactionTimer(),
        onEvent: @escaping (GATTClient.Event) -> Void
    ) {
        self.bearer = bearer
        self.queue = queue
        self.transactionTimeoutNanoseconds = transactionTimeoutNanoseconds
        self.timer = timer
        self.onEvent = onEvent
        client = GATTClient(preferredMTU: preferredMTU)
    }

    /// Starts reading and begins MTU exchange and discovery.
    public func start() {
        dispatchPrecondition(condition: .onQueue(queue))
        let source = DispatchSource.makeReadSource(fileDescriptor: bearer.fileDescriptor, queue: queue)
        source.setEventHandler { [weak self] in self?.readable() }
        source.resume()
        self.source = source
        perform(client.start())
    }

    @discardableResult
    public func read(_ handle: UInt16) -> GATTClient.OperationID {
        dispatchPrecondition(condition: .onQueue(queue))
        let (id, actions) = client.read(handle)
        perform(actions)
        return id
    }

    @discardableResult
    public func write(_ handle: UInt16, value: [UInt8]) -> GATTClient.OperationID {
        dispatchPrecondition(condition: .onQueue(queue))
        let (id, actions) = client.write(handle, value: value)
        perform(actions)
        return id
    }

    @discardableResult
    public func subscribe(_ characteristic: GATTCharacteristic) -> GATTClient.OperationID? {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let (id, actions) = client.subscribe(characteristic) else { return nil }
        perform(actions)
        return id
    }

    /// Closes the link (a planned disconnect: the owner stops streams first).
    public func close() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !closed else { return }
        closed = true
        timer.cancel()
        source?.cancel()
        source = nil
        bearer.close()
    }

    private func readable() {
        for _ in 0..<Self.pdusPerTurn where !closed {
            let pdu: [UInt8]?
            do {
                pdu = try bearer.receive()
            } catch {
                if case .oversizedPDU = error {
                    ignoredPDUs += 1
                    continue
                }
                linkFailed(error.description)
                return
            }
            guard let pdu else { return }
            perform(client.received(pdu))
        }
    }

    private func perform(_ actions: [GATTClient.Action]) {
        for action in actions {
            guard !closed else { return }
            switch action {
            case .send(let pdu):
                do {
                    try bearer.send(pdu)
                } catch {
                    linkFailed(error.description)
                    return
                }
            case .startTimer:
                timer.arm(nanoseconds: transactionTimeoutNanoseconds, on: queue) { [weak self] in
                    guard let self else { return }
                    self.perform(self.client.timedOut())
                }
            case .stopTimer:
                timer.cancel()
            case .event(.ignoredPDU(let why)):
                ignoredPDUs += 1
                onEvent(.ignoredPDU(why))
            case .event(.linkFailed(let why)):
                linkFailed(why)
                return
            case .event(let event):
                onEvent(event)
            }
        }
    }

    private func linkFailed(_ why: String) {
        guard !closed else { return }
        close()
        onEvent(.linkFailed(why))
    }
}
