import Dispatch
import Glibc
import SensorKitModel
import SensorSystem
import Synchronization

/// The Unix socket of the reader API (DESIGN §2, §6.3): accepts connections, takes each peer's
/// credentials from the kernel, and hands the connection to the `ReaderService`.
public final class ReaderServer: @unchecked Sendable {
    // @unchecked: `acceptSource` is immutable and DispatchSource is thread-safe; `nextID` is
    // touched only on `acceptQueue`.
    public let path: String
    private let service: ReaderService
    private let listener: Int32
    private let acceptQueue = DispatchQueue(label: "sensorkitd.reader.accept")
    private let acceptSource: any DispatchSourceRead
    private var nextID = 0
    private let log: @Sendable (String) -> Void
    private let partialFrameSeconds = Mutex(ClientConnection.defaultPartialFrameTimeout)

    /// Seconds a client frame may take to arrive whole once its first byte has (docs/protocol.md
    /// §2); applies to connections accepted after it is set. Tests shorten it.
    public var partialFrameTimeout: Double {
        get { partialFrameSeconds.withLock { $0 } }
        set { partialFrameSeconds.withLock { $0 = newValue } }
    }

    /// Binds the socket (replacing a stale one); the folder is created if missing.
    public init(path: String, service: ReaderService, log: @escaping @Sendable (String) -> Void) throws {
        let folder = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        if !folder.isEmpty { try SystemFiles.makeDirectory(folder) }
        self.path = path
        self.service = service
        self.log = log
        self.listener = try UnixSocket.listen(path: path)
        self.acceptSource = DispatchSource.makeReadSource(fileDescriptor: listener, queue: acceptQueue)
    }

    public func start() {
        acceptSource.setEventHandler { [weak self] in self?.acceptAll() }
        acceptSource.resume()
    }

    /// Stops accepting and removes the socket file. Open connections end with the process.
    public func stop() {
        acceptSource.cancel()
        acceptQueue.sync {}
        close(listener)
        unlink(path)
    }

    private func acceptAll() {
        dispatchPrecondition(condition: .onQueue(acceptQueue))
        while true {
            let fd: Int32
            do {
                guard case .done(let accepted) = try UnixSocket.accept(listener) else { return }
                fd = accepted
            } catch {
                // EMFILE and friends: log and try again at the next event rather than spin.
                log("<4>accept on \(path) failed: \(error), ignoring")
                return
            }
            let peer: UnixSocket.PeerCredentials
            do {
                peer = try UnixSocket.peerCredentials(fd)
            } catch {
                log("<4>no peer credentials for a connection: \(error); closing it")
                close(fd)
                continue
            }
            // A stored chunk goes out as one frame of up to 448 KiB; with the default send
            // buffer (≈ 208 KiB) each would take several writable wake-ups of the daemon.
            UnixSocket.requestSendBuffer(fd, bytes: 1 << 20)
            nextID += 1
            service.attach(ClientConnection(id: nextID, fd: fd, peer: peer, partialFrameTimeout: partialFrameTimeout))
        }
    }
}
