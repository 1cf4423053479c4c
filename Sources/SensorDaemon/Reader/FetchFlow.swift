import SensorKitModel

/// What one fetch does next (docs/protocol.md §6.1), without queues, sockets or the store: each
/// event returns the actions `FetchStream` executes, and the results of those actions (a batch
/// read, a frame written) come back as events. `Batch` is what the cursor yields (`EncodedBatch`
/// in the daemon), with its sample count.
///
/// Rules: credit never exceeds the window; one frame in the socket at a time and one batch read
/// ahead, so the final reply follows the last batch at once; a fetch that waits `parkAfter` for
/// its client parks its cursor, and one without progress for `idleTimeout` ends with 110.
struct FetchFlow<Batch> {
    enum State {
        case waitingToStart
        case running(Running)
        case finished
    }

    struct Running {
        var credit: Int
        /// The next batch and its sample count, read ahead while the previous one is being written.
        var lookahead: (batch: Batch, count: Int)?
        var exhausted = false
        /// A frame handed to the connection and not yet completely written.
        var writing = false
        /// A `.step` is queued: one step per turn of the queue, so acks and cancels get a turn.
        var stepQueued = false
        var parked = false
        /// When the client last made the fetch move (an ack, or a frame fully taken).
        var lastProgress: Int64
        var sent = 0
    }

    enum Event {
        /// The fetch was accepted; `now` is the scheduler's time.
        case start(now: Int64)
        /// A turn of the queue (the `.scheduleStep` queued before).
        case step
        /// The cursor answered `.read`: a batch and its sample count, or nil when the range is exhausted.
        case read(Batch?, count: Int)
        case readFailed(String)
        /// The frame of the last `.send` is completely in the socket.
        case written(now: Int64)
        /// The client acknowledged `batches` frames (its number, unchecked).
        case acknowledged(batches: Int, now: Int64)
        case cancelled(silently: Bool)
        /// The app lost its right to the data (consent denied, entitlement or binding removed,
        /// app uninstalled): the fetch ends with `error`, whatever it was doing.
        case revoked(WireError)
        /// The watchdog's period passed.
        case tick(now: Int64)
        case parkFailed(String)
    }

    enum Action {
        /// Arm the watchdog: a `.tick` every `period` ns.
        case startWatchdog(period: Int64)
        /// Read the next batch; answer with `.read` or `.readFailed`.
        case read
        /// Hand the batch to the connection; answer with `.written` once it is in the socket.
        case send(Batch)
        /// Queue a `.step` for the next turn.
        case scheduleStep
        /// Let go of the store snapshot (`FetchCursor.park`); answer a failure with `.parkFailed`.
        case park
        /// Send this final reply.
        case reply(WireReply)
        /// The fetch is over: stop the watchdog, tell the service.
        case finish
    }

    let requestID: UInt32
    let window: Int
    let idleTimeout: Int64
    let parkAfter: Int64
    let notice: String?
    private(set) var state: State = .waitingToStart

    init(requestID: UInt32, window: Int, idleTimeout: Int64, parkAfter: Int64, notice: String? = nil) {
        self.requestID = requestID
        self.window = max(1, window)
        self.idleTimeout = max(1, idleTimeout)
        self.parkAfter = max(1, parkAfter)
        self.notice = notice
    }

    var isFinished: Bool {
        if case .finished = state { return true }
        return false
    }

    mutating func on(_ event: Event) -> [Action] {
        switch state {
        case .waitingToStart:
            guard case .start(let now) = event else {
                // Only `start` leads out of here; anything else (a cancel racing the start) ends it.
                if case .cancelled(let silently) = event { return finish(silently ? nil : cancelledReply(sent: 0)) }
                if case .revoked(let error) = event { return finish(.failure(requestID, error)) }
                return []
            }
            state = .running(Running(credit: window, lastProgress: now))
            return [.startWatchdog(period: min(parkAfter, idleTimeout))] + step()
        case .finished:
            // Late results of actions taken before the end (a frame written, a read that was in
            // flight) and requests about a fetch that is over change nothing.
            return []
        case .running(var running):
            switch event {
            case .start:
                return []
            case .step:
                running.stepQueued = false
                state = .running(running)
                return step()
            case .read(let batch, let count):
                running.lookahead = batch.map { ($0, count) }
                running.exhausted = batch == nil
                state = .running(running)
                return sendOrFinish()
            case .readFailed(let message), .parkFailed(let message):
                return finish(.failure(requestID, WireError(.dataInaccessible, "reading the store failed: \(message)")))
            case .written(let now):
                running.lastProgress = now
                running.writing = false
                state = .running(running)
                return scheduleIfUseful()
            case .acknowledged(let batches, let now):
                if batches > 0 { running.lastProgress = now }
                running.credit = min(window, running.credit.addingSaturating(max(0, batches)))
                state = .running(running)
                return scheduleIfUseful()
            case .cancelled(let silently):
                return finish(silently ? nil : cancelledReply(sent: running.sent))
            case .revoked(let error):
                return finish(.failure(requestID, error))
            case .tick(let now):
                let idle = now.subtractingSaturating(running.lastProgress)
                if idle >= idleTimeout {
                    return finish(
                        .failure(
                            requestID,
                            WireError(
                                .timedOut,
                                "fetch ended after \(idleTimeout / 1_000_000_000) s without an ack or a batch read by the client (\(running.sent) samples sent)"
                            )))
                }
                if idle >= parkAfter && !running.parked {
                    running.parked = true
                    state = .running(running)
                    return [.park]
                }
                return []
            }
        }
    }

    /// One turn: read if nothing is read ahead, else send or finish.
    private mutating func step() -> [Action] {
        guard case .running(var running) = state else { return [] }
        running.parked = false  // reading resumes the cursor
        state = .running(running)
        if running.lookahead == nil && !running.exhausted { return [.read] }
        return sendOrFinish()
    }

    /// After a read or on a turn: sends the read-ahead batch if the client has credit and the
    /// socket is free (and reads the next one ahead), finishes when nothing is left, or queues
    /// the next turn.
    private mutating func sendOrFinish() -> [Action] {
        guard case .running(var running) = state else { return [] }
        if let (batch, count) = running.lookahead, running.credit > 0, !running.writing {
            running.lookahead = nil
            running.sent = running.sent.addingSaturating(count)
            running.credit -= 1
            running.writing = true
            state = .running(running)
            return [.send(batch)] + (running.exhausted ? finishIfDone() : [.read])
        }
        return finishIfDone()
    }

    private mutating func finishIfDone() -> [Action] {
        guard case .running(let running) = state else { return [] }
        if running.exhausted && running.lookahead == nil {
            var done = WireReply(id: requestID, ok: true)
            done.count = running.sent
            done.notice = notice
            return finish(done)
        }
        return scheduleIfUseful()
    }

    /// Queues one more turn if it can make progress and none is queued.
    private mutating func scheduleIfUseful() -> [Action] {
        guard case .running(var running) = state, !running.stepQueued else { return [] }
        let canSend = running.lookahead != nil && running.credit > 0 && !running.writing
        let canRead = running.lookahead == nil && !running.exhausted
        let canFinish = running.exhausted && running.lookahead == nil
        guard canSend || canRead || canFinish else { return [] }
        running.stepQueued = true
        state = .running(running)
        return [.scheduleStep]
    }

    private mutating func finish(_ final: WireReply?) -> [Action] {
        state = .finished
        return (final.map { [Action.reply($0)] } ?? []) + [.finish]
    }

    private func cancelledReply(sent: Int) -> WireReply {
        .failure(requestID, WireError(.cancelled, "fetch cancelled by the client after \(sent) samples"))
    }
}
