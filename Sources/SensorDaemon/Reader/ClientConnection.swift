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
    private var pending: [UInt8] = []
    private var pendingOffset = 0
    private var closed = false
    private var onFrame: (@Sendable (Frame) -> Void)?
    private var onClose: (@Sendable (String) -> Void)?

    /// Bytes of replies a client may leave unread before it is dropped. Fetch batches are bounded
    /// by credit (≤ `WireLimits.maxFetchWindow` batches of ≤ `maxServerFrame` for each of at most
    /// `maxConcurrentFetches`), which stays below this, so it only trips for a client that sends
    /// requests and never reads the replies.
    static let maxPendingBytes = 96 * 1024 * 1024

    init(id: Int, fd: Int32, peer: UnixSocket.PeerCredentials) {
        self.id = id
        self.fd = fd
        self.peer = peer
        self.queue = DispatchQueue(label: "sensorkitd.reader.connection.\(id)")
    }

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
            cancelled.notify(queue: self.queue) { Glibc.close(fd) }
            self.readSource = read
            self.writeSource = write
            read.resume()
        }
    }

    /// Queues bytes for the client; callable from any queue.
    func send(_ bytes: [UInt8]) {
        queue.async { self.enqueue(bytes) }
    }

    /// Bytes queued and not yet written (on `queue`).
    var pendingCount: Int {
        dispatchPrecondition(condition: .onQueue(queue))
        return pending.count - pendingOffset
    }

    func enqueue(_ bytes: [UInt8]) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !closed else { return }
        if pendingOffset == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingOffset = 0
        }
        pending.append(contentsOf: bytes)
        if pendingCount > Self.maxPendingBytes {
            close(reason: "client left more than \(Self.maxPendingBytes) bytes of replies unread")
            return
        }
        flush()
    }

    private func readAvailable() {
        dispatchPrecondition(condition: .onQueue(queue))
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while !closed {
            let result: IOResult<Int>
            do {
                result = try chunk.withUnsafeMutableBytes { try UnixSocket.read(fd, into: $0) }
            } catch {
                close(reason: "read failed: \(error)")
                return
            }
            switch result {
            case .wouldBlock:
                return
            case .done(0):
                close(reason: "client closed the connection")
                return
            case .done(let n):
                decoder.feed(chunk[0..<n])
                do {
                    while !closed, let frame = try decoder.next() { onFrame?(frame) }
                } catch {
                    let reply = WireReply.failure(nil, WireError(.malformedRequest, "\(error); closing the connection"))
                    enqueue(WireJSON.frame(reply).encoded())
                    close(reason: "bad framing: \(error)", flushFirst: true)
                    return
                }
            }
        }
    }

    private func flush() {
        dispatchPrecondition(condition: .onQueue(queue))
        while pendingCount > 0 {
            let result: IOResult<Int>
            do {
                result = try pending.withUnsafeBytes { raw in
                    try UnixSocket.write(fd, UnsafeRawBufferPointer(rebasing: raw[pendingOffset...]))
                }
            } catch {
                close(reason: "write failed: \(error)")
                return
            }
            switch result {
            case .done(let n):
                pendingOffset += n
            case .wouldBlock:
                if writeSuspended, let writeSource {
                    writeSuspended = false
                    writeSource.resume()
                }
                return
            }
        }
        if !writeSuspended, let writeSource {
            writeSuspended = true
            writeSource.suspend()
        }
        if closingAfterFlush { finishClose() }
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
            readSource?.cancel()
            readSource = nil
            return
        }
        finishClose()
    }

    private func finishClose() {
        guard !closed else { return }
        closed = true
        readSource?.cancel()
        if let writeSource {
            if writeSuspended { writeSource.resume() }  // a suspended source cannot be released
            writeSource.cancel()
        }
        readSource = nil
        writeSource = nil
        shutdown(fd, Int32(SHUT_RDWR))  // the peer sees the end now; the fd closes after the cancel handlers
        pending = []
        let onClose = self.onClose
        self.onFrame = nil
        self.onClose = nil
        onClose?(closeReason)
    }
}
