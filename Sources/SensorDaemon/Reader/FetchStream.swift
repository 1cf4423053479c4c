import Dispatch
import SensorKitModel

/// One running fetch: pulls batches from a cursor and sends them while the client has credit
/// (docs/protocol.md §6.1). With no credit it simply stops producing until an `ack` comes, so a
/// slow client parks a cursor, never a thread. Confined to its own serial queue, which targets the
/// connection's queue.
///
/// One batch is read ahead (the lookahead), so the final reply goes out as soon as the last batch
/// does. The connection gets the next frame only once the previous one is written to the socket,
/// so the daemon holds at most two frames per fetch (one being written, one read ahead) however
/// much credit the client gives.
///
/// Why the connection's queue, not a queue of its own: a fetch hands each frame to the connection
/// and gets it back once written, two hops per batch. Between queues served by different threads
/// each hop wakes a sleeping thread (a futex wake and a context switch, often an IPI on a VM):
/// 16 % of the daemon's CPU in a one-client fetch (`sensorkit-bench fetch`). Within one
/// connection's queue the hops run on the thread that is already draining it. Fetches of
/// different clients still run in parallel; fetches of one client share its socket anyway.
final class FetchStream: @unchecked Sendable {
    // @unchecked: mutable state is touched only on `queue` (dispatchPrecondition in each step).
    let requestID: UInt32
    private let queue: DispatchQueue
    private let cursor: any FetchCursor
    private let connection: ClientConnection
    private var credit: Int
    private let window: Int
    private var finished = false
    /// The next batch, read ahead so the final reply goes out as soon as the last batch does,
    /// even while the client has no credit left.
    private var lookahead: EncodedBatch?
    private var exhausted = false
    /// A frame handed to the connection and not yet completely written to the socket.
    private var writing = false
    /// Frame buffers back from the connection, reused so their pages stay mapped.
    private var spare: [[UInt8]] = []
    private var producing = false
    private var sent = 0
    private let notice: String?
    private let onFinish: @Sendable (UInt32) -> Void
    /// When the client last made the fetch move (an `ack`, or a frame fully taken), and whether
    /// the cursor has let go of the store since (docs/protocol.md §6.1).
    private var lastProgress = DispatchTime.now()
    private var parked = false
    private let idleTimeout: Int64
    private var watchdog: (any DispatchSourceTimer)?
    /// A fetch that waits this long lets go of its store snapshot: a fast client never waits so
    /// long between batches, and a parked cursor costs a new read transaction to resume.
    static let parkAfterNanoseconds: Int64 = 1_000_000_000

    init(requestID: UInt32, cursor: any FetchCursor, connection: ClientConnection,
         window: Int, notice: String?, idleTimeout: Int64, onFinish: @escaping @Sendable (UInt32) -> Void) {
        self.requestID = requestID
        self.cursor = cursor
        self.connection = connection
        self.credit = window
        self.window = window
        self.notice = notice
        self.idleTimeout = max(1, idleTimeout)
        self.onFinish = onFinish
        self.queue = DispatchQueue(label: "sensorkitd.reader.fetch.\(requestID)", target: connection.queue)
    }

    func start() {
        queue.async {
            let period = DispatchTimeInterval.nanoseconds(Int(min(Self.parkAfterNanoseconds, self.idleTimeout)))
            let watchdog = DispatchSource.makeTimerSource(queue: self.queue)
            watchdog.schedule(deadline: .now() + period, repeating: period, leeway: .milliseconds(100))
            watchdog.setEventHandler { [weak self] in self?.checkProgress() }
            watchdog.resume()
            self.watchdog = watchdog
            self.produce()
        }
    }

    deinit { watchdog?.cancel() }

    /// Parks the cursor of a fetch that waits for its client, and ends one that has waited for
    /// `idleTimeout` with error 110 `timedOut`.
    private func checkProgress() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !finished else { return }
        let idle = DispatchTime.now().uptimeNanoseconds - lastProgress.uptimeNanoseconds
        if idle >= UInt64(idleTimeout) {
            end(WireReply.failure(requestID, WireError(.timedOut, "fetch ended after \(idleTimeout / 1_000_000_000) s without an ack or a batch read by the client (\(sent) samples sent)")))
            return
        }
        if idle >= UInt64(Self.parkAfterNanoseconds) && !parked {
            do {
                try cursor.park()
                parked = true
            } catch {
                end(WireReply.failure(requestID, WireError(.dataInaccessible, "reading the store failed: \(error)")))
            }
        }
    }

    /// Finishes the fetch with `final` as its last reply (nil: none).
    private func end(_ final: WireReply?) {
        finished = true
        lookahead = nil
        watchdog?.cancel()
        watchdog = nil
        if let final { reply(final) }
        onFinish(requestID)
    }

    /// The client acknowledged `batches` frames: it may receive that many more.
    func acknowledge(_ batches: Int) {
        queue.async {
            if batches > 0 { self.lastProgress = .now() }
            self.credit = min(self.window, self.credit.addingSaturating(max(0, batches)))   // the client's number
            self.schedule()
        }
    }

    /// Stops the fetch; the client gets a `cancelled` reply unless it is gone (`silently`).
    func cancel(silently: Bool) {
        queue.async {
            guard !self.finished else { return }
            self.end(silently ? nil : WireReply.failure(self.requestID, WireError(.cancelled, "fetch cancelled by the client after \(self.sent) samples")))
        }
    }

    /// Runs `produce` once more if it can make progress and is not already queued. One step per
    /// turn of the queue, so cancel and ack get a turn between batches.
    private func schedule() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !finished, !producing else { return }
        let canSend = lookahead != nil && credit > 0 && !writing
        let canRead = lookahead == nil && !exhausted
        let canFinish = exhausted && lookahead == nil
        guard canSend || canRead || canFinish else { return }
        producing = true
        queue.async { self.produce() }
    }

    private func produce() {
        dispatchPrecondition(condition: .onQueue(queue))
        producing = false
        guard !finished else { return }
        parked = false  // reading resumes the cursor
        do {
            if lookahead == nil && !exhausted {
                lookahead = try cursor.nextBatch(requestID: requestID, maxSamples: WireLimits.samplesPerBatch,
                                                 reusing: spare.popLast() ?? [])
                exhausted = lookahead == nil
            }
            if let batch = lookahead, credit > 0, !writing {
                lookahead = nil
                send(batch)
                // Read ahead now, so the next batch (or the final reply) is ready when `batch` is written.
                if !exhausted {
                    lookahead = try cursor.nextBatch(requestID: requestID, maxSamples: WireLimits.samplesPerBatch,
                                                     reusing: spare.popLast() ?? [])
                    exhausted = lookahead == nil
                }
            }
        } catch {
            end(WireReply.failure(requestID, WireError(.dataInaccessible, "reading the store failed: \(error)")))
            return
        }
        if exhausted && lookahead == nil {
            var done = WireReply(id: requestID, ok: true)
            done.count = sent
            done.notice = notice
            end(done)
            return
        }
        schedule()
    }

    private func send(_ batch: EncodedBatch) {
        sent += batch.count
        credit -= 1
        writing = true
        connection.send(batch.storage, count: batch.size, tail: batch.tail) { [self] storage in
            queue.async {
                self.lastProgress = .now()
                self.writing = false
                if !self.finished { self.spare.append(storage) }
                self.schedule()
            }
        }
    }

    private func reply(_ reply: WireReply) {
        connection.send(WireJSON.boundedFrame(reply).encoded())
    }
}
