import Dispatch
import Glibc
import SensorKitModel
import SensorSystem
import Synchronization

/// The Unix socket of the reader API (docs/protocol.md §1, §6): accepts connections, takes each peer's
/// credentials from the kernel, and hands the connection to the `ReaderService`.
public final class ReaderServer: @unchecked Sendable {
    // @unchecked: `acceptSource` is immutable and DispatchSource is thread-safe; every var is
    // touched only on `acceptQueue`.
    public let path: String
    public let limits: ReaderLimits
    private let service: ReaderService
    private let listener: Int32
    /// Bound by the daemon (removed at stop) or handed over by systemd (the socket unit owns the file).
    private let ownsSocketFile: Bool
    private let acceptQueue = DispatchQueue(label: "sensorkitd.reader.accept")
    private let acceptSource: any DispatchSourceRead
    /// Watches the connections' sockets and closes them (`ClientConnection`).
    private let poller: SocketPoller
    private var nextID = 0
    private let log: Journal
    private let partialFrameSeconds = Mutex(ClientConnection.defaultPartialFrameTimeout)

    /// Seconds a client frame may take to arrive whole once its first byte has (docs/protocol.md
    /// §2); applies to connections accepted after it is set. Tests shorten it.
    public var partialFrameTimeout: Double {
        get { partialFrameSeconds.withLock { $0 } }
        set { partialFrameSeconds.withLock { $0 = newValue } }
    }

    /// Open connections per uid and in all.
    private var open: [uid_t: Int] = [:]
    private var openCount = 0
    /// Refusals since the last summary line (one line per `refusalWindow`, with a count).
    private var refused = 0
    private var refusalReason = ""
    /// Accepting is paused after a failed accept (EMFILE…): since when, and how many retries.
    private var acceptPaused = false
    private var starvedSince: DispatchTime?
    private var starvedRetries = 0
    private var stopped = false

    static let refusalWindow = DispatchTimeInterval.seconds(1)
    static let acceptBackoffMilliseconds = 100

    /// Binds the socket (replacing a stale one); the folder is created if missing. With
    /// `inheritedListener` (socket activation, already checked by `InheritedSocket`) it serves that
    /// descriptor instead, listening on `path`.
    public init(
        path: String, service: ReaderService, limits: ReaderLimits = ReaderLimits(.init(), openFiles: OpenFileLimit.current),
        inheritedListener: Int32? = nil, log: Journal
    ) throws {
        let folder = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        if !folder.isEmpty && inheritedListener == nil { try SystemFiles.makeDirectory(folder) }
        self.path = path
        self.service = service
        self.limits = limits
        self.log = log
        self.poller = try SocketPoller.shared()
        self.listener = try inheritedListener ?? UnixSocket.listen(path: path)
        self.ownsSocketFile = inheritedListener == nil
        self.acceptSource = DispatchSource.makeReadSource(fileDescriptor: listener, queue: acceptQueue)
    }

    public func start() {
        acceptSource.setEventHandler { [weak self] in self?.acceptAll() }
        acceptSource.resume()
    }

    /// Stops accepting and removes the socket file. Open connections end with the process.
    public func stop() {
        acceptQueue.sync {
            stopped = true
            if acceptPaused { acceptSource.resume() }  // a suspended source is never cancelled
            acceptPaused = false
            acceptSource.cancel()
        }
        SystemCalls.close(listener)
        if ownsSocketFile { try? SystemCalls.unlink(path) }  // already gone: nothing to clean up
    }

    private func acceptAll() {
        dispatchPrecondition(condition: .onQueue(acceptQueue))
        while !acceptPaused && !stopped {
            let fd: Int32
            do {
                guard case .done(let accepted) = try UnixSocket.accept(listener) else {
                    caughtUp()
                    return
                }
                fd = accepted
            } catch {
                pauseAccepting(after: error)
                return
            }
            let peer: UnixSocket.PeerCredentials
            do {
                peer = try UnixSocket.peerCredentials(fd)
            } catch {
                log.warning("no peer credentials for a connection: \(error); closing it")
                SystemCalls.close(fd)
                continue
            }
            let mine = open[peer.uid, default: 0]
            if openCount >= limits.maxConnections {
                refuse(fd, "\(openCount) connections are open, the limit of the daemon (max-connections)")
                continue
            }
            if mine >= limits.maxConnectionsPerUser {
                refuse(fd, "uid \(peer.uid) has \(mine) connections open, the limit per user (max-connections-per-user)")
                continue
            }
            open[peer.uid] = mine + 1
            openCount += 1
            // A stored chunk goes out as one frame of up to 448 KiB; with the default send
            // buffer (≈ 208 KiB) each would take several writable wake-ups of the daemon.
            UnixSocket.requestSendBuffer(fd, bytes: 1 << 20)
            nextID += 1
            let uid = peer.uid
            service.attach(
                ClientConnection(
                    id: nextID, fd: fd, peer: peer, poller: poller, partialFrameTimeout: partialFrameTimeout,
                    scheduler: service.scheduler
                ) { [weak self] in
                    guard let self else { return }
                    self.acceptQueue.async { self.release(uid) }
                })
        }
    }

    /// A connection's descriptor is closed: its place is free, and a paused accept can go on now.
    private func release(_ uid: uid_t) {
        dispatchPrecondition(condition: .onQueue(acceptQueue))
        openCount -= 1
        let left = open[uid, default: 1] - 1
        open[uid] = left > 0 ? left : nil
        if acceptPaused && !stopped {
            acceptPaused = false
            acceptSource.resume()
            acceptAll()
        }
    }

    /// The backlog is empty: an episode without descriptors, if any, is over.
    private func caughtUp() {
        guard let since = starvedSince else { return }
        let milliseconds = (DispatchTime.now().uptimeNanoseconds - since.uptimeNanoseconds) / 1_000_000
        log.notice(
            "accepting connections on \(path) again: every waiting connection taken after \(milliseconds) ms and \(starvedRetries) more failed accepts (\(openCount) open)"
        )
        starvedSince = nil
    }

    /// Tells the client why (error 103 without an id, docs/protocol.md §6.2) and closes it. The log
    /// gets one line per burst, with a count, not one per connection.
    private func refuse(_ fd: Int32, _ reason: String) {
        dispatchPrecondition(condition: .onQueue(acceptQueue))
        let reply = WireReply.failure(nil, WireError(.tooManyRequests, "connection refused: \(reason)"))
        let frame = WireJSON.frame(reply).encoded()
        _ = try? frame.withUnsafeBytes { try UnixSocket.write(fd, $0) }  // a fresh socket takes it whole, or the client is gone
        SystemCalls.close(fd)
        if refused == 0 {
            acceptQueue.asyncAfter(deadline: .now() + Self.refusalWindow) { [weak self] in self?.summarizeRefusals() }
        }
        refused += 1
        refusalReason = reason
    }

    private func summarizeRefusals() {
        dispatchPrecondition(condition: .onQueue(acceptQueue))
        guard refused > 0 else { return }
        log.warning("refused \(refused) connection(s) on \(path) within a second; the last: \(refusalReason)")
        refused = 0
    }

    /// Out of descriptors (EMFILE, ENFILE) or kernel memory: the pending connection stays in the
    /// listen backlog and the socket stays readable, so retrying at once would spin. Accepting
    /// pauses and retries after `acceptBackoff`; the log says so once per episode.
    private func pauseAccepting(after error: any Error) {
        dispatchPrecondition(condition: .onQueue(acceptQueue))
        if starvedSince == nil {
            starvedSince = .now()
            starvedRetries = 0
            log.error(
                "accept on \(path) failed: \(error) with \(openCount) connections open; pausing accepts, retrying every \(Self.acceptBackoffMilliseconds) ms"
            )
        } else {
            starvedRetries += 1
        }
        acceptPaused = true
        acceptSource.suspend()
        acceptQueue.asyncAfter(deadline: .now() + .milliseconds(Self.acceptBackoffMilliseconds)) { [weak self] in
            guard let self, self.acceptPaused, !self.stopped else { return }
            self.acceptPaused = false
            self.acceptSource.resume()
            self.acceptAll()
        }
    }
}
