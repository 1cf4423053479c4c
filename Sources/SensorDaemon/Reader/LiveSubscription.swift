import SensorKitModel
import Synchronization

/// One live subscription: batches the source records go to the client while it has credit
/// (docs/protocol.md §3.9). What to do next is `LiveFlow`'s decision; this class only carries it
/// out. The flow sits in a `Mutex`, not on a queue: batches are offered on the source's thread
/// and handed on at once, so a sample waits for no thread wake-up between the source and the
/// connection's queue (the latency docs/live.md measures). Actions run inside the lock, where
/// they only queue work on the connection, so frames and replies leave in the flow's order.
final class LiveSubscription: Sendable {
    let requestID: UInt32
    private let flow: Mutex<LiveFlow<[UInt8]>>
    private let connection: ClientConnection
    private let onFinish: @Sendable (UInt32) -> Void

    /// Batches and bytes a subscriber may leave unsent before it is dropped with 111 `overrun`:
    /// a few seconds of the fastest source at its hand-over size, and a bound on what a client
    /// that stops reading costs the daemon (per subscription, at most 32 per connection).
    static let maxBufferedBatches = 64
    static let maxBufferedBytes = 2 * 1024 * 1024
    static let maxPerConnection = 32

    init(
        requestID: UInt32, sensor: String, device: String, window: Int, connection: ClientConnection,
        onFinish: @escaping @Sendable (UInt32) -> Void
    ) {
        self.requestID = requestID
        self.flow = Mutex(
            LiveFlow(
                requestID: requestID, sensor: sensor, device: device, window: window,
                maxBuffered: Self.maxBufferedBatches, maxBufferedBytes: Self.maxBufferedBytes))
        self.connection = connection
        self.onFinish = onFinish
    }

    func start(notice: String?) { handle(.start(notice: notice)) }

    /// A recorded batch, on the source's thread.
    func offer(_ frame: LiveFrame) {
        let bytes = frame.addressed(to: requestID)
        handle(.offered(.init(batch: bytes, count: frame.count, first: frame.first, last: frame.last, bytes: bytes.count)))
    }

    func acknowledge(_ batches: Int) { handle(.acknowledged(batches: batches)) }
    func cancel(silently: Bool) { handle(.cancelled(silently: silently)) }
    func revoke(_ error: WireError) { handle(.revoked(error)) }
    func sourceStopped(_ why: String) { handle(.sourceStopped(why)) }
    func gap(_ missed: WireMissed) { handle(.gap(missed)) }

    private func handle(_ event: LiveFlow<[UInt8]>.Event) {
        flow.withLock { flow in
            for action in flow.on(event) {
                switch action {
                case .send(let bytes):
                    connection.send(bytes, count: bytes.count) { [weak self] _ in self?.handle(.written) }
                case .reply(let reply):
                    connection.send(WireJSON.boundedFrame(reply).encoded())
                case .finish:
                    onFinish(requestID)
                }
            }
        }
    }
}
