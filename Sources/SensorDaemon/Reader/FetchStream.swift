import Dispatch
import SensorKitModel

/// One running fetch: pulls batches from a cursor and sends them while the client has credit
/// (DESIGN §6.3 flow control). With no credit it simply stops producing until an `ack` comes, so a
/// slow client parks a cursor, never a thread, and the daemon buffers at most `window` batches for
/// it. Confined to its own serial queue (which targets a shared concurrent queue).
final class FetchStream: @unchecked Sendable {
    // @unchecked: mutable state is touched only on `queue` (dispatchPrecondition in each step).
    let requestID: UInt32
    private let queue: DispatchQueue
    private let cursor: any FetchCursor
    private let layout: BatchLayout
    private let connection: ClientConnection
    private var credit: Int
    private let window: Int
    private var finished = false
    /// The next batch, read ahead so the final reply goes out as soon as the last batch does,
    /// even while the client has no credit left.
    private var lookahead: FetchedColumns?
    private var exhausted = false
    private var sent = 0
    private let notice: String?
    private let onFinish: @Sendable (UInt32) -> Void

    static let sharedQueue = DispatchQueue(label: "sensorkitd.reader.fetch", attributes: .concurrent)

    init(requestID: UInt32, cursor: any FetchCursor, layout: BatchLayout, connection: ClientConnection,
         window: Int, notice: String?, onFinish: @escaping @Sendable (UInt32) -> Void) {
        self.requestID = requestID
        self.cursor = cursor
        self.layout = layout
        self.connection = connection
        self.credit = window
        self.window = window
        self.notice = notice
        self.onFinish = onFinish
        self.queue = DispatchQueue(label: "sensorkitd.reader.fetch.\(requestID)", target: FetchStream.sharedQueue)
    }

    func start() { queue.async { self.produce() } }

    /// The client acknowledged `batches` frames: it may receive that many more.
    func acknowledge(_ batches: Int) {
        queue.async {
            let wasBlocked = self.credit <= 0
            self.credit = min(self.window, self.credit + max(0, batches))
            if wasBlocked { self.produce() }
        }
    }

    /// Stops the fetch; the client gets a `cancelled` reply unless it is gone (`silently`).
    func cancel(silently: Bool) {
        queue.async {
            guard !self.finished else { return }
            self.finished = true
            if !silently {
                self.reply(WireReply.failure(self.requestID, WireError(.cancelled, "fetch cancelled by the client after \(self.sent) samples")))
            }
            self.onFinish(self.requestID)
        }
    }

    private func produce() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !finished else { return }
        do {
            if lookahead == nil && !exhausted {
                lookahead = try cursor.next(maxSamples: WireLimits.samplesPerBatch)
                exhausted = lookahead == nil
            }
            if let columns = lookahead, credit > 0 {
                lookahead = nil
                send(columns)
                if !exhausted {
                    lookahead = try cursor.next(maxSamples: WireLimits.samplesPerBatch)
                    exhausted = lookahead == nil
                }
            }
        } catch {
            finished = true
            reply(WireReply.failure(requestID, WireError(.dataInaccessible, "reading the store failed: \(error)")))
            onFinish(requestID)
            return
        }
        if exhausted && lookahead == nil {
            finished = true
            var done = WireReply(id: requestID, ok: true)
            done.count = sent
            done.notice = notice
            reply(done)
            onFinish(requestID)
            return
        }
        if credit > 0 { queue.async { self.produce() } }  // yield between batches so cancel and ack get a turn
    }

    private func send(_ columns: FetchedColumns) {
        let frame = SampleBatchFrame(requestID: requestID, layout: layout, sensorTimes: columns.sensorTimes,
                                     writeTimes: columns.writeTimes, columns: columns.columns, ragged: columns.ragged)
        var bytes: [UInt8] = []
        frame.appendFrame(to: &bytes)
        sent += frame.count
        credit -= 1
        connection.send(bytes)
    }

    private func reply(_ reply: WireReply) {
        connection.send(WireJSON.frame(reply).encoded())
    }
}
