import Dispatch
import Glibc
import SensorKitModel
import SensorSystem
import Synchronization

/// One client's socket: reads frames, writes replies, never blocks and never buffers without
/// bound. Confined to its own serial queue; every mutable field is touched only there. When to
/// read, pause, watch the socket, time out a partial frame and close is `ConnectionFlow`'s
/// decision; this class carries it out on the socket, which `SocketPoller` watches and closes.
final class ClientConnection: @unchecked Sendable {
    // @unchecked: all state below is confined to `queue` (checked by dispatchPrecondition).
    let id: Int
    let peer: UnixSocket.PeerCredentials
    let queue: DispatchQueue
    private let fd: Int32
    private var decoder = FrameDecoder(limit: WireLimits.maxClientFrame)
    /// The socket in the poller, which owns the descriptor from `start` on (nil before, and after the close).
    private var socket: SocketPoller.Socket?
    private let poller: SocketPoller
    /// What the poller was last asked to report; nil once it reported (interest is one-shot)
    /// or before the first ask.
    private var armed: SocketPoller.Interest?
    /// A readiness is being handled: `rearm` waits for its end rather than arm on every event.
    private var handlingReadiness = false
    /// Frames queued for the socket, oldest first from `pendingHead`; the first has its first
    /// `pendingOffset` bytes written. Frames are kept whole (no copying into one buffer).
    private var pending: [Outgoing] = []
    private var pendingHead = 0
    private var pendingOffset = 0
    private var flow: ConnectionFlow
    private var onFrame: (@Sendable (Frame) -> Void)?
    private var onClose: (@Sendable (String) -> Void)?

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
    private let scheduler: any Scheduler
    private var partialFrameTimer: (any ScheduledTimer)?

    init(
        id: Int, fd: Int32, peer: UnixSocket.PeerCredentials, poller: SocketPoller,
        partialFrameTimeout: Double = defaultPartialFrameTimeout, scheduler: any Scheduler = DispatchScheduler(),
        released: @escaping @Sendable () -> Void = {}
    ) {
        self.id = id
        self.fd = fd
        self.poller = poller
        self.peer = peer
        self.partialFrameTimeout = partialFrameTimeout
        self.scheduler = scheduler
        self.flow = ConnectionFlow(
            maxQueuedRequests: Self.maxQueuedRequests, readPauseBytes: Self.readPauseBytes,
            maxPendingBytes: Self.maxPendingBytes, partialFrameTimeout: partialFrameTimeout)
        self.released = released
        self.queue = DispatchQueue(label: "sensorkitd.reader.connection.\(id)", target: Self.lane(of: id))
    }

    /// What every connection's queue (and through it every fetch's) runs on: one of a few shared
    /// serial lanes, two a core (at least 4, at most 16), taken in turn by connection id. Nothing
    /// on a connection's queue may block (docs/reliability.md, "A blocked worker delays every
    /// connection"): a lane's connections wait for each other's work only. Two a core, not one:
    /// the 64-client fetch ran faster (docs/measurements/fetch.md).
    /// - Not a serial queue per connection: each would get a thread of its own whenever it has
    ///   work (serial queues target the overcommitting root queue), so 64 clients fetching at once
    ///   ran 64 threads, each with its frames in flight and its malloc arena, and the daemon's peak
    ///   RSS grew with the number of clients (docs/measurements/fetch.md). The lanes run a few at
    ///   once; the work is non-blocking socket I/O and reads of the store, which more threads
    ///   cannot speed up.
    /// - Not one concurrent queue (which bounds threads the same way): its blocks run on the
    ///   non-overcommitting root queue, whose first worker starts libdispatch's worker monitor on
    ///   Linux — a timer that wakes the daemon once a second from then on, for as long as it runs
    ///   (docs/measurements/iio.md, "the worker monitor"). Serial lanes never start it.
    static let lanes: [DispatchQueue] = (0..<laneCount).map { DispatchQueue(label: "sensorkitd.reader.connections.\($0)") }
    static let laneCount = min(max(2 * Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 4), 16)

    /// The lane of connection `id`.
    static func lane(of id: Int) -> DispatchQueue { lanes[Int(UInt(bitPattern: id) % UInt(laneCount))] }

    /// Starts reading; `onFrame` and `onClose` run on `queue`.
    func start(onFrame: @escaping @Sendable (Frame) -> Void, onClose: @escaping @Sendable (String) -> Void) {
        queue.async {
            self.onFrame = onFrame
            self.onClose = onClose
            guard !self.flow.isClosed else { return }  // a reply queued before the start failed: already closed
            self.socket = self.poller.watch(self.fd, queue: self.queue) { [weak self] readiness in self?.ready(readiness) }
            self.rearm()
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

    /// Bytes queued and not yet written, and requests read and not yet answered, as the last
    /// event on `queue` left them; any queue (`daemonStatus` reads every connection's, and must
    /// not wait for a queue a busy fetch holds).
    var backlog: (bytes: Int, requests: Int) { published.withLock { $0 } }
    private let published = Mutex((bytes: 0, requests: 0))

    /// The service finished with one request this connection handed it; callable from any queue.
    func requestAnswered() {
        queue.async { _ = self.handle(.requestAnswered) }
    }

    /// Feeds `event` to the flow and carries out its actions; false when the flow ended the
    /// current turn of reading (`endTurn`).
    @discardableResult
    private func handle(_ event: ConnectionFlow.Event) -> Bool {
        dispatchPrecondition(condition: .onQueue(queue))
        var goOn = true
        for action in flow.on(event) {
            switch action {
            case .endTurn:
                goOn = false
            case .pauseReading, .resumeReading, .watchWritable, .unwatchWritable, .stopReading:
                rearm()  // the poller is asked for what the flow now wants
            case .readAgain:
                queue.async { self.readAvailable() }
            case .flush:
                flush()
            case .armPartialFrameDeadline:
                armPartialFrameTimer()
            case .disarmPartialFrameDeadline:
                partialFrameTimer?.cancel()
                partialFrameTimer = nil
            case .replyMalformed(let problem):
                enqueue(
                    WireJSON.frame(WireReply.failure(nil, WireError(.malformedRequest, "\(problem); closing the connection")))
                        .encoded())
                handle(.closeRequested(problem, flushFirst: true))
            case .close(let reason):
                release(reason: reason)
            }
        }
        let now = (bytes: flow.pendingBytes, requests: flow.unanswered)
        published.withLock { $0 = now }
        return goOn
    }

    func enqueue(_ bytes: [UInt8]) {
        enqueue(Outgoing(bytes: bytes, count: bytes.count, written: nil))
    }

    private func enqueue(_ frame: Outgoing) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !flow.isClosed else { return }
        pending.append(frame)
        handle(.queued(bytes: frame.total))
    }

    private func readAvailable() {
        dispatchPrecondition(condition: .onQueue(queue))
        var handled = 0
        var tookFrame = false
        while handle(.readTurn) {
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
                handle(.requestRead)
                onFrame?(frame)
                handled += 1
                if handled == Self.framesPerTurn {
                    handle(.turnFull)
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
                handle(.readBlocked(buffered: decoder.bufferedCount, newFrame: tookFrame))
                return
            case .done(0):
                close(reason: "client closed the connection")
                return
            case .done:
                continue
            }
        }
    }

    /// (Re)starts the partial-frame deadline: `partialFrameTimeout` from now.
    private func armPartialFrameTimer() {
        partialFrameTimer?.cancel()
        partialFrameTimer = scheduler.schedule(on: queue, after: Int64(partialFrameTimeout * 1e9), repeating: nil) {
            [weak self] in
            guard let self else { return }
            self.handle(.partialFrameExpired(buffered: self.decoder.bufferedCount))
        }
    }

    /// Writes queued frames straight from their own bytes until the socket is full.
    private func flush() {
        dispatchPrecondition(condition: .onQueue(queue))
        while pendingHead < pending.count && !flow.isClosed {
            let frame = pending[pendingHead]
            let result: IOResult<Int>
            do {
                result = try frame.bytes.withUnsafeBytes { head in
                    try frame.tail.withUnsafeBytes { tail in
                        if pendingOffset >= frame.count {
                            return try UnixSocket.write(
                                fd, UnsafeRawBufferPointer(rebasing: tail[(pendingOffset - frame.count)...]))
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
                handle(.written(bytes: n))
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
                handle(.writeBlocked)
                return
            }
        }
        if !flow.isClosed { handle(.writesDone) }
    }

    /// Closes the connection (on `queue`); with `flushFirst`, after queued replies are written
    /// (bounded: a client that does not read is closed at once).
    func close(reason: String, flushFirst: Bool = false) {
        dispatchPrecondition(condition: .onQueue(queue))
        handle(.closeRequested(reason, flushFirst: flushFirst))
    }

    /// The socket is readable or writable (or hung up): read and write what the flow allows,
    /// then ask the poller for the next readiness the flow wants.
    private func ready(_ readiness: SocketPoller.Readiness) {
        dispatchPrecondition(condition: .onQueue(queue))
        armed = nil  // reported: the one-shot interest is used up
        handlingReadiness = true
        if readiness.readable && flow.wantsToRead { readAvailable() }
        if readiness.writable && flow.writeWatched && !flow.isClosed { flush() }
        handlingReadiness = false
        rearm()
    }

    /// Asks the poller for what the flow wants now: reading unless paused or stopped, writing
    /// while replies wait for room in the socket.
    private func rearm() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let socket, !handlingReadiness, !flow.isClosed else { return }
        var wanted: SocketPoller.Interest = []
        if flow.wantsToRead { wanted.insert(.read) }
        if flow.writeWatched { wanted.insert(.write) }
        guard wanted != armed, !(wanted.isEmpty && armed == nil) else { return }
        do {
            try socket.want(wanted)
            armed = wanted
        } catch {
            close(reason: "cannot watch the socket: \(error)")
        }
    }

    /// The flow closed the connection: the descriptor closes now (the peer sees the end), what
    /// was queued is dropped, and the server and the service are told.
    private func release(reason: String) {
        if let socket {
            socket.close()
        } else {
            SystemCalls.close(fd)  // closed before `start` handed the descriptor to the poller
        }
        socket = nil
        armed = nil
        partialFrameTimer?.cancel()
        partialFrameTimer = nil
        pending = []
        pendingHead = 0
        pendingOffset = 0
        released()
        let onClose = self.onClose
        self.onFrame = nil
        self.onClose = nil
        onClose?(reason)
    }
}
