import Dispatch
import Glibc
import SensorKitModel
import SensorSystem

/// One client's socket: reads frames, writes replies, never blocks and never buffers without
/// bound. Confined to its own serial queue; every mutable field is touched only there.
final class ClientConnection: @unchecked Sendable {
    // @unchecked: all state below is confined to `queue` (checked by dispatchPrecondition).
    let id: Int
    let peer: UnixSocket.PeerCredentials
    let queue: DispatchQueue
    private let fd: Int32
    private var decoder = FrameDecoder(limit: WireLimits.maxClientFrame)
    private var readSource: (any DispatchSourceRead)?
    private var writeSource: (any DispatchSourceWrite)?
    private var writeSuspended = true
    /// Frames queued for the socket, oldest first from `pendingHead`; the first has its first
    /// `pendingOffset` bytes written. Frames are kept whole (no copying into one buffer).
    private var pending: [Outgoing] = []
    private var pendingHead = 0
    private var pendingOffset = 0
    private var pendingBytes = 0
    private var closed = false
    private var onFrame: (@Sendable (Frame) -> Void)?
    private var onClose: (@Sendable (String) -> Void)?
    /// Requests handed to the service and not yet answered (`requestAnswered`).
    private var unanswered = 0
    /// The read source is suspended because the backlog is full (`backlogFull`).
    private var readPaused = false
    private var continuationQueued = false

    /// Bytes of replies a client may leave unread before it is dropped. A fetch queues its next
    /// batch only once the previous one is written (`FetchStream`), so batches add at most one
    /// frame per running fetch (≤ `maxConcurrentFetches` × one batch of ≤ ≈ 459 KB), which stays
    /// far below this: it only trips for a client that sends requests and never reads the replies.
    static let maxPendingBytes = 96 * 1024 * 1024

    /// The work a client may leave in flight before the daemon stops reading its socket
    /// (docs/protocol.md §6.2): requests read and not yet answered, and reply bytes it has not
    /// read. The kernel's socket buffer then pushes back on the client, so a client that pipelines
    /// requests and never reads holds at most this much of the daemon's memory and of the control
    /// queue's time. Reading resumes once both are below half.
    static let maxQueuedRequests = 16
    static let readPauseBytes = 1024 * 1024
    /// Frames handled per turn of the connection's queue, so one busy client cannot keep a thread
    /// of the shared target for itself while others wait.
    static let framesPerTurn = 16

    /// Called once the connection's descriptor is closed (the server counts connections per
    /// user, and waits for descriptors when it ran out).
    private let released: @Sendable () -> Void

    /// How long a frame may take to arrive once its first byte has (docs/protocol.md §2). A
    /// client writes a request of at most 64 KiB at once, so a frame still incomplete after this
    /// was cut short: without a deadline the daemon would wait on it, and hold the connection,
    /// forever.
    static let defaultPartialFrameTimeout = 10.0
    private let partialFrameTimeout: Double
    private var partialFrameTimer: (any DispatchSourceTimer)?
    private var partialFrameArmed = false

    init(id: Int, fd: Int32, peer: UnixSocket.PeerCredentials, partialFrameTimeout: Double = defaultPartialFrameTimeout,
         released: @escaping @Sendable () -> Void = {}) {
        self.id = id
        self.fd = fd
        self.peer = peer
        self.partialFrameTimeout = partialFrameTimeout
        self.released = released
        self.queue = DispatchQueue(label: "sensorkitd.reader.connection.\(id)", target: Self.sharedTarget)
    }

    /// What every connection's queue (and through it every fetch's) runs on. A serial queue of
    /// its own would get a thread of its own whenever it has work (serial queues target the
    /// overcommitting root queue), so 64 clients fetching at once ran 64 threads, each with its
    /// frames in flight and its malloc arena, and the daemon's peak RSS grew with the number of
    /// clients (docs/measurements/fetch.md). A concurrent queue runs about as many at once as there are cores; the
    /// work is non-blocking socket I/O and reads of the store, which more threads cannot speed up.
    static let sharedTarget = DispatchQueue(label: "sensorkitd.reader.connections", attributes: .concurrent)

    /// Starts reading; `onFrame` and `onClose` run on `queue`.
    func start(onFrame: @escaping @Sendable (Frame) -> Void, onClose: @escaping @Sendable (String) -> Void) {
        queue.async {
            self.onFrame = onFrame
            self.onClose = onClose
            let read = DispatchSource.makeReadSource(fileDescriptor: self.fd, queue: self.queue)
            read.setEventHandler { [weak self] in self?.readAvailable() }
            let write = DispatchSource.makeWriteSource(fileDescriptor: self.fd, queue: self.queue)
            write.setEventHandler { [weak self] in self?.flush() }
            // libdispatch may still watch the fd until both cancel handlers ran: close it only then,
            // or a new connection that reuses the fd number never gets its events.
            let fd = self.fd
            let cancelled = DispatchGroup()
            cancelled.enter()
            cancelled.enter()
            read.setCancelHandler { cancelled.leave() }
            write.setCancelHandler { cancelled.leave() }
            let released = self.released
            cancelled.notify(queue: self.queue) {
                SystemCalls.close(fd)
                released()
            }
            self.readSource = read
            self.writeSource = write
            read.resume()
        }
    }

    /// A frame waiting for the socket — the first `count` bytes of `bytes`, then all of `tail` —
    /// and who wants `bytes` back once everything is written.
    private struct Outgoing {
        let bytes: [UInt8]
        let count: Int
        var tail: [UInt8] = []
        let written: (@Sendable ([UInt8]) -> Void)?

        var total: Int { count + tail.count }
    }

    /// Queues a frame for the client; callable from any queue.
    func send(_ bytes: [UInt8]) {
        queue.async { self.enqueue(bytes) }
    }

    /// Queues the first `count` bytes of `bytes`, then `tail`, as one frame for the client;
    /// callable from any queue. `written` gets `bytes` back (on `queue`) once the frame's last
    /// byte is in the socket, for reuse — never if the connection closes first.
    func send(_ bytes: [UInt8], count: Int, tail: [UInt8] = [], written: @escaping @Sendable ([UInt8]) -> Void) {
        precondition(count <= bytes.count)
        queue.async { self.enqueue(Outgoing(bytes: bytes, count: count, tail: tail, written: written)) }
    }

    /// Bytes queued and not yet written (on `queue`).
    var pendingCount: Int {
        dispatchPrecondition(condition: .onQueue(queue))
        return pendingBytes
    }

    /// Requests read and not yet answered (on `queue`).
    var queuedRequests: Int {
        dispatchPrecondition(condition: .onQueue(queue))
        return unanswered
    }

    /// The service finished with one request this connection handed it; callable from any queue.
    func requestAnswered() {
        queue.async {
            self.unanswered -= 1
            self.resumeReadingIfDrained()
        }
    }

    private var backlogFull: Bool {
        unanswered >= Self.maxQueuedRequests || pendingBytes >= Self.readPauseBytes
    }

    private func pauseReading() {
        guard !readPaused, let readSource else { return }
        readPaused = true
        readSource.suspend()
    }

    private func resumeReadingIfDrained() {
        guard readPaused, !closed, unanswered <= Self.maxQueuedRequests / 2,
              pendingBytes <= Self.readPauseBytes / 2, let readSource else { return }
        readPaused = false
        readSource.resume()
        continueReading()  // frames may wait in the decoder, with nothing new for the source to report
    }

    /// Runs `readAvailable` again on a later turn of the queue.
    private func continueReading() {
        guard !continuationQueued else { return }
        continuationQueued = true
        queue.async {
            self.continuationQueued = false
            self.readAvailable()
        }
    }

    /// A suspended source must be resumed before it is cancelled, or its cancel handler never runs.
    private func cancelReadSource() {
        if readPaused { readSource?.resume() }
        readPaused = false
        readSource?.cancel()
        readSource = nil
    }

    func enqueue(_ bytes: [UInt8]) {
        enqueue(Outgoing(bytes: bytes, count: bytes.count, written: nil))
    }

    private func enqueue(_ frame: Outgoing) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !closed else { return }
        pending.append(frame)
        pendingBytes += frame.total
        if pendingCount > Self.maxPendingBytes {
            close(reason: "client left more than \(Self.maxPendingBytes) bytes of replies unread")
            return
        }
        flush()
    }

    private func readAvailable() {
        dispatchPrecondition(condition: .onQueue(queue))
        var handled = 0
        var tookFrame = false
        while !closed && !readPaused && readSource != nil {
            if backlogFull {
                // Bytes of a frame may wait in the decoder: the daemon stopped reading, not the
                // client sending, so its deadline starts again when reading resumes.
                disarmPartialFrame()
                pauseReading()
                return
            }
            let frame: Frame?
            do {
                frame = try decoder.next()
            } catch {
                let reply = WireReply.failure(nil, WireError(.malformedRequest, "\(error); closing the connection"))
                enqueue(WireJSON.frame(reply).encoded())
                close(reason: "bad framing: \(error)", flushFirst: true)
                return
            }
            if let frame {
                tookFrame = true
                unanswered += 1
                onFrame?(frame)
                handled += 1
                if handled == Self.framesPerTurn {
                    continueReading()
                    return
                }
                continue
            }
            // Straight into the decoder's buffer (requests are small; many arrive in one read).
            var result: IOResult<Int> = .wouldBlock
            var failure: (any Error)?
            _ = decoder.fill { room in
                do {
                    result = try UnixSocket.read(fd, into: room)
                } catch {
                    failure = error
                    return -1
                }
                if case .done(let n) = result { return n }
                return -1
            }
            if let failure {
                // A client that exits with replies or events still unread resets the socket:
                // an ordinary goodbye, not a failure.
                if let error = failure as? SystemError, error.errno == ECONNRESET {
                    close(reason: "client closed the connection (with replies or events unread)")
                } else {
                    close(reason: "read failed: \(failure)")
                }
                return
            }
            switch result {
            case .wouldBlock:
                watchPartialFrame(newFrame: tookFrame)
                return
            case .done(0):
                close(reason: "client closed the connection")
                return
            case .done:
                continue
            }
        }
    }

    private func disarmPartialFrame() {
        if partialFrameArmed { partialFrameTimer?.schedule(deadline: .distantFuture) }
        partialFrameArmed = false
    }

    /// Arms the partial-frame deadline when bytes of a frame wait for the rest (restarting it when
    /// that is a new frame), disarms it when nothing waits.
    private func watchPartialFrame(newFrame: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard decoder.bufferedCount > 0 else {
            disarmPartialFrame()
            return
        }
        if partialFrameArmed && !newFrame { return }  // the same frame, still arriving
        let timer: any DispatchSourceTimer
        if let existing = partialFrameTimer {
            timer = existing
        } else {
            timer = DispatchSource.makeTimerSource(queue: queue)
            timer.setEventHandler { [weak self] in self?.partialFrameExpired() }
            timer.resume()
            partialFrameTimer = timer
        }
        timer.schedule(deadline: .now() + partialFrameTimeout)
        partialFrameArmed = true
    }

    private func partialFrameExpired() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !closed, !closingAfterFlush, !readPaused, decoder.bufferedCount > 0 else { return }
        let problem = "incomplete frame: \(decoder.bufferedCount) bytes of it arrived and no more within \(partialFrameTimeout) s"
        enqueue(WireJSON.frame(WireReply.failure(nil, WireError(.malformedRequest, "\(problem); closing the connection"))).encoded())
        close(reason: problem, flushFirst: true)
    }

    /// Writes queued frames straight from their own bytes until the socket is full.
    private func flush() {
        dispatchPrecondition(condition: .onQueue(queue))
        while pendingHead < pending.count && !closed {
            let frame = pending[pendingHead]
            let result: IOResult<Int>
            do {
                result = try frame.bytes.withUnsafeBytes { head in
                    try frame.tail.withUnsafeBytes { tail in
                        if pendingOffset >= frame.count {
                            return try UnixSocket.write(fd, UnsafeRawBufferPointer(rebasing: tail[(pendingOffset - frame.count)...]))
                        }
                        let rest = UnsafeRawBufferPointer(rebasing: head[pendingOffset..<frame.count])
                        return tail.isEmpty ? try UnixSocket.write(fd, rest) : try UnixSocket.write(fd, rest, tail)
                    }
                }
            } catch {
                // A client that has gone (EPIPE: it closed its end) left with something of ours
                // unsent: an ordinary goodbye, as ECONNRESET is on the read side.
                if let error = error as? SystemError, error.errno == EPIPE || error.errno == ECONNRESET {
                    close(reason: "client closed the connection (with replies or events unsent)")
                } else {
                    close(reason: "write failed: \(error)")
                }
                return
            }
            switch result {
            case .done(let n):
                pendingOffset += n
                pendingBytes -= n
                if pendingOffset == frame.total {
                    pending[pendingHead] = Outgoing(bytes: [], count: 0, written: nil)  // the bytes go back or away
                    pendingHead += 1
                    pendingOffset = 0
                    if pendingHead == pending.count {
                        pending.removeAll(keepingCapacity: true)
                        pendingHead = 0
                    } else if pendingHead >= 64 && pendingHead * 2 >= pending.count {
                        pending.removeFirst(pendingHead)
                        pendingHead = 0
                    }
                    frame.written?(frame.bytes)
                }
            case .wouldBlock:
                if writeSuspended, let writeSource {
                    writeSuspended = false
                    writeSource.resume()
                }
                resumeReadingIfDrained()
                return
            }
        }
        if !writeSuspended, let writeSource {
            writeSuspended = true
            writeSource.suspend()
        }
        if closingAfterFlush { finishClose() } else { resumeReadingIfDrained() }
    }

    private var closingAfterFlush = false
    private var closeReason = ""

    /// Closes the connection (on `queue`); with `flushFirst`, after queued replies are written
    /// (bounded: a client that does not read is closed at once).
    func close(reason: String, flushFirst: Bool = false) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !closed else { return }
        closeReason = reason
        if flushFirst && pendingCount > 0 && pendingCount < 65_536 {
            closingAfterFlush = true
            cancelReadSource()
            return
        }
        finishClose()
    }

    private func finishClose() {
        guard !closed else { return }
        closed = true
        cancelReadSource()
        if let writeSource {
            if writeSuspended { writeSource.resume() }  // a suspended source cannot be released
            writeSource.cancel()
        }
        writeSource = nil
        partialFrameTimer?.cancel()
        partialFrameTimer = nil
        SystemCalls.shutdown(fd)  // the peer sees the end now; the fd closes after the cancel handlers
        pending = []
        pendingHead = 0
        pendingOffset = 0
        pendingBytes = 0
        let onClose = self.onClose
        self.onFrame = nil
        self.onClose = nil
        onClose?(closeReason)
    }
}
