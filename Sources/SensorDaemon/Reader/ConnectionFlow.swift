import SensorKitModel

/// What one client connection does next (docs/protocol.md §2, §6.2), without the socket, its
/// poller or the frame buffers: each event returns the actions `ClientConnection`
/// carries out. It owns the counts behind the backpressure (requests unanswered, reply bytes
/// unwritten), whether reading is paused and writability watched, the
/// partial-frame deadline, and the way to the close.
///
/// Rules: reading pauses while `maxQueuedRequests` requests are unanswered or `readPauseBytes`
/// of replies are unwritten, and resumes once both are at most half that; a client that leaves
/// more than `maxPendingBytes` unread is closed; a frame whose first bytes came and whose rest
/// does not within the partial-frame timeout gets error 100 and the connection closes after
/// that reply; a close "after flush" waits for queued replies only when they are few.
struct ConnectionFlow {
    enum State: Equatable {
        case open
        /// Reading has stopped; the connection closes once the queued replies are written.
        case closingAfterFlush(reason: String)
        case closed(reason: String)
    }

    enum Event {
        /// A turn of reading is about to start (the socket became readable, or `readAgain` came due).
        case readTurn
        /// A frame was decoded and handed to the service.
        case requestRead
        /// `framesPerTurn` frames were handled in this turn: the rest waits for a later one.
        case turnFull
        /// The service answered one request.
        case requestAnswered
        /// A frame of `bytes` was queued for the socket.
        case queued(bytes: Int)
        /// `bytes` went into the socket.
        case written(bytes: Int)
        /// The socket is full with frames still queued.
        case writeBlocked
        /// Every queued frame is written.
        case writesDone
        /// Reading would block; `buffered` bytes of an incomplete frame wait in the decoder, and
        /// `newFrame` says a whole frame was taken in this turn (so those bytes start a new one).
        case readBlocked(buffered: Int, newFrame: Bool)
        /// The partial-frame deadline passed with `buffered` bytes of a frame waiting.
        case partialFrameExpired(buffered: Int)
        /// Close now, or once the queued replies are written (`flushFirst`).
        case closeRequested(String, flushFirst: Bool)
    }

    enum Action: Equatable {
        /// Stop this turn of reading.
        case endTurn
        case pauseReading
        /// Read again (it was paused).
        case resumeReading
        /// Run a turn of reading later on the queue (frames may wait in the decoder).
        case readAgain
        /// Try writing the queued frames now.
        case flush
        case watchWritable
        case unwatchWritable
        case armPartialFrameDeadline
        case disarmPartialFrameDeadline
        /// Queue error 100 without an id with this message, then request a close after flush.
        case replyMalformed(String)
        /// Stop reading for good (the connection closes once its replies are written).
        case stopReading
        /// Release everything and tell the service.
        case close(reason: String)
    }

    let maxQueuedRequests: Int
    let readPauseBytes: Int
    let maxPendingBytes: Int
    /// Queued bytes a close "after flush" still waits for; with more it closes at once.
    let flushBeforeCloseBytes: Int
    let partialFrameTimeout: Double

    private(set) var state: State = .open
    private(set) var unanswered = 0
    private(set) var pendingBytes = 0
    private(set) var readPaused = false
    private(set) var writeWatched = false
    private(set) var partialFrameArmed = false
    private var readAgainQueued = false
    private var reading = true

    init(
        maxQueuedRequests: Int, readPauseBytes: Int, maxPendingBytes: Int, flushBeforeCloseBytes: Int = 65_536,
        partialFrameTimeout: Double
    ) {
        self.maxQueuedRequests = maxQueuedRequests
        self.readPauseBytes = readPauseBytes
        self.maxPendingBytes = maxPendingBytes
        self.flushBeforeCloseBytes = flushBeforeCloseBytes
        self.partialFrameTimeout = partialFrameTimeout
    }

    /// Whether the socket should be read now: open, not paused, not stopped.
    var wantsToRead: Bool { state == .open && reading && !readPaused }

    var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    private var backlogFull: Bool { unanswered >= maxQueuedRequests || pendingBytes >= readPauseBytes }

    mutating func on(_ event: Event) -> [Action] {
        if case .closed = state {
            // Late answers and results after the close change nothing (the service still
            // answers the requests it had; their replies are dropped).
            if case .requestAnswered = event { unanswered -= 1 }
            return event.isReadTurn ? [.endTurn] : []
        }
        switch event {
        case .readTurn:
            readAgainQueued = false
            guard state == .open, reading, !readPaused else { return [.endTurn] }
            guard !backlogFull else {
                // Bytes of a frame may wait in the decoder: the daemon stopped reading, not the
                // client sending, so the frame's deadline starts again when reading resumes.
                readPaused = true
                return disarm() + [.pauseReading, .endTurn]
            }
            return []
        case .requestRead:
            unanswered += 1
            return []
        case .turnFull:
            return readAgain()
        case .requestAnswered:
            unanswered -= 1
            return resumeIfDrained()
        case .queued(let bytes):
            pendingBytes = pendingBytes.addingSaturating(bytes)
            if pendingBytes > maxPendingBytes {
                return close("client left more than \(maxPendingBytes) bytes of replies unread")
            }
            return [.flush]
        case .written(let bytes):
            pendingBytes -= bytes
            return []
        case .writeBlocked:
            var actions: [Action] = []
            if !writeWatched {
                writeWatched = true
                actions.append(.watchWritable)
            }
            return actions + resumeIfDrained()
        case .writesDone:
            var actions: [Action] = []
            if writeWatched {
                writeWatched = false
                actions.append(.unwatchWritable)
            }
            if case .closingAfterFlush(let reason) = state { return actions + close(reason) }
            return actions + resumeIfDrained()
        case .readBlocked(let buffered, let newFrame):
            guard buffered > 0 else { return disarm() }
            if partialFrameArmed && !newFrame { return [] }  // the same frame, still arriving
            partialFrameArmed = true
            return [.armPartialFrameDeadline]
        case .partialFrameExpired(let buffered):
            guard state == .open, !readPaused, buffered > 0 else { return [] }
            return [
                .replyMalformed("incomplete frame: \(buffered) bytes of it arrived and no more within \(partialFrameTimeout) s")
            ]
        case .closeRequested(let reason, let flushFirst):
            if flushFirst && pendingBytes > 0 && pendingBytes < flushBeforeCloseBytes {
                // Already closing after the flush: the later reason is the one reported.
                guard state == .open else {
                    state = .closingAfterFlush(reason: reason)
                    return []
                }
                state = .closingAfterFlush(reason: reason)
                reading = false
                readPaused = false
                return [.stopReading]
            }
            return close(reason)
        }
    }

    private mutating func resumeIfDrained() -> [Action] {
        guard readPaused, state == .open, unanswered <= maxQueuedRequests / 2, pendingBytes <= readPauseBytes / 2 else {
            return []
        }
        readPaused = false
        return [.resumeReading] + readAgain()
    }

    private mutating func readAgain() -> [Action] {
        guard !readAgainQueued else { return [] }
        readAgainQueued = true
        return [.readAgain]
    }

    private mutating func disarm() -> [Action] {
        guard partialFrameArmed else { return [] }
        partialFrameArmed = false
        return [.disarmPartialFrameDeadline]
    }

    private mutating func close(_ reason: String) -> [Action] {
        let action = Action.close(reason: reason)
        state = .closed(reason: reason)
        reading = false
        readPaused = false
        writeWatched = false
        partialFrameArmed = false
        pendingBytes = 0
        return [action]
    }
}

extension ConnectionFlow.Event {
    fileprivate var isReadTurn: Bool {
        if case .readTurn = self { return true }
        return false
    }
}
