import Dispatch
import Foundation
import Glibc
import SensorKitModel
import SensorSystem
import Synchronization

/// The client's end of the reader socket (docs/protocol.md): one connection per process and app,
/// several requests in flight, replies routed by id, push events to every subscriber. Reads on
/// its own thread. `chunk` frames are decoded on worker threads in parallel; handlers still run
/// one at a time in arrival order (on the read thread or a worker), so they must hand off quickly.
public final class ReaderConnection: Sendable {
    /// What a request's handler receives: batches (fetch), then exactly one final reply.
    public enum Incoming: Sendable {
        case batch(SampleBatchFrame)
        case reply(WireReply)
    }

    private typealias Handler = @Sendable (Incoming) -> Void
    private struct State {
        /// Requests waiting for their final reply, and whether the connection stands.
        var session = ReaderSessionState<Handler>()
        var eventHandlers: [UUID: @Sendable (WireReply) -> Void] = [:]
        var chunkFrames = 0
    }

    public let app: String?
    private let fd: Int32
    private let state = Mutex(State())
    private let writeLock = Mutex(())
    private let delivery = OrderedDelivery(label: "sensorkit.connection.decode")

    /// Chunk format versions this client decodes: what a `fetch` sends as `chunkFormats`.
    public static var chunkFormats: [Int] { ChunkDecoding.acceptedFormats }
    /// The hello reply: protocol version and the daemon's timeline.
    public let welcome: WireReply

    /// Connects and says hello; throws the daemon's refusal (`SRError`) or the socket error.
    public init(socketPath: String, app: String?) throws {
        self.app = app
        // Fetches decode and drop megabyte batches, which glibc's defaults pay for in page faults;
        // but the allocator belongs to the app, so it is retuned only when the app opted in
        // (docs/configuration.md, "Memory allocator").
        AllocatorTuning.forLibraryClient()
        do {
            fd = try UnixSocket.connect(path: socketPath)
        } catch {
            throw SRError(.dataInaccessible, message: "cannot reach sensorkitd at \(socketPath): \(error)")
        }
        var hello = WireRequest(id: 0, op: .hello)
        hello.v = WireLimits.version
        hello.app = app
        do {
            try UnixSocket.writeAll(fd, WireJSON.frame(hello).encoded())
            welcome = try Self.readReply(fd)
        } catch {
            SystemCalls.close(fd)
            throw SRError(.dataInaccessible, message: "sensorkitd at \(socketPath) did not answer hello: \(error)")
        }
        if let error = welcome.error {
            SystemCalls.close(fd)
            throw error.srError
        }
        // A thread of its own: the loop blocks in read(2), which must not hold a Dispatch worker.
        let thread = Thread { [self] in readLoop() }
        thread.name = "sensorkit.connection.read"
        thread.start()
    }

    /// The fd lives exactly as long as this object (the read loop holds it until the socket
    /// ends), so no call here can ever reach another socket that reused the number.
    deinit { SystemCalls.close(fd) }

    /// `chunk` frames received so far (stored chunks this client decoded itself).
    public var chunkFramesReceived: Int { state.withLock { $0.chunkFrames } }

    /// Whether the daemon closed the connection (a new one must be opened).
    public var isClosed: Bool { state.withLock { $0.session.phase != .open } }

    /// Ends the connection; pending requests fail.
    public func close() { SystemCalls.shutdown(fd) }

    /// Sends a request; `handler` gets its batches and its final reply (in arrival order). The
    /// handler may run before `send` returns: acknowledge a batch with its own `requestID`, not
    /// with the id returned here.
    @discardableResult
    public func send(
        _ build: (inout WireRequest) -> Void, op: WireRequest.Operation,
        handler: @escaping @Sendable (Incoming) -> Void
    ) -> UInt32 {
        run(.request(handler)) { id in
            var request = WireRequest(id: id, op: op)
            build(&request)
            write(request)
        } ?? 0
    }

    /// Feeds `event` to the session state and carries out its actions, outside the lock: `batch`
    /// or `reply` go to the handler the state names, `writeRequest` writes a new request. Returns
    /// the id of a new request (written or failed at once).
    @discardableResult
    private func run(
        _ event: ReaderSessionState<Handler>.Event, batch: SampleBatchFrame? = nil, reply: WireReply? = nil,
        writeRequest: (UInt32) -> Void = { _ in }
    ) -> UInt32? {
        var newID: UInt32?
        for action in state.withLock({ $0.session.on(event) }) {
            switch action {
            case .write(let id):
                newID = id
                writeRequest(id)
            case .deliverBatch(let handler):
                if let batch { handler(.batch(batch)) }
            case .deliverReply(let handler):
                if let reply { handler(.reply(reply)) }
            case .fail(let id, let handler, let why):
                if case .request = event { newID = id }
                handler(.reply(.failure(id, WireError(.dataInaccessible, why))))
            case .cancel(let id):
                notify(.cancel, target: id)
            }
        }
        return newID
    }

    /// Sends a request that has no reply of its own (`ack`, `cancel`).
    public func notify(_ op: WireRequest.Operation, target: UInt32, batches: Int? = nil) {
        var request = WireRequest(id: 0, op: op)
        request.target = target
        request.batches = batches
        write(request)
    }

    /// One round trip, blocking the caller until the final reply.
    public func call(_ op: WireRequest.Operation, _ build: (inout WireRequest) -> Void = { _ in }) -> WireReply {
        let box = Mutex<WireReply?>(nil)
        let done = DispatchSemaphore(value: 0)
        send(build, op: op) { incoming in
            if case .reply(let reply) = incoming {
                box.withLock { $0 = reply }
                done.signal()
            }
        }
        done.wait()
        return box.withLock { $0! }
    }

    /// Subscribes to push events (authorization changes, recording started/stopped).
    @discardableResult
    public func onEvent(_ handler: @escaping @Sendable (WireReply) -> Void) -> UUID {
        let token = UUID()
        state.withLock { $0.eventHandlers[token] = handler }
        return token
    }

    /// Stops delivering push events to a handler `onEvent` returned `token` for.
    public func removeEventHandler(_ token: UUID) {
        _ = state.withLock { $0.eventHandlers.removeValue(forKey: token) }
    }

    private func write(_ request: WireRequest) {
        let bytes = WireJSON.frame(request).encoded()
        writeLock.withLock { _ in
            do { try UnixSocket.writeAll(fd, bytes) } catch { /* the read loop reports the closed socket */  }
        }
    }

    private func readLoop() {
        // Bytes land in the decoder's buffer and batches decode from there straight into their
        // arrays: one copy on this side of the socket.
        var decoder = FrameDecoder(limit: WireLimits.maxServerFrame)
        var reason = "sensorkitd closed the connection"
        reading: while true {
            var failure: SystemError?
            let n = decoder.fill { room in
                do throws(SystemError) { return try SystemCalls.read(fd, into: room, "sensorkitd socket") } catch {
                    failure = error
                    return 0
                }
            }
            if let failure { reason = "read failed: \(failure)" }
            if n <= 0 { break }
            do {
                while try decoder.nextFrame({ kind, payload in dispatch(kind, payload) }) != nil {}
            } catch {
                reason = "bad frame from sensorkitd: \(error)"
                break reading
            }
        }
        // After everything that arrived before the end (chunks may still be decoding).
        delivery.deliver { [self, reason] in _ = run(.ended(reason)) }
    }

    private func dispatch(_ kind: Frame.Kind, _ payload: UnsafeRawBufferPointer) {
        switch kind {
        case .batch:
            guard let batch = try? SampleBatchFrame.decode(payload) else { return skip(payload) }
            delivery.deliver { [self] in deliver(batch) }
        case .chunk:
            guard let frame = try? ChunkBatchFrame.decode(payload, chunkPadding: ChunkDecoding.chunkPadding) else {
                return skip(payload)
            }
            state.withLock { $0.chunkFrames += 1 }
            delivery.prepare { [self] in
                do throws(ChunkDecoding.Failure) {
                    let batch = try ChunkDecoding.batch(frame)
                    return { [self] in deliver(batch) }
                } catch {
                    // The daemon checked the chunk's checksum, so this is a bug on one side: the
                    // fetch fails rather than skip samples silently.
                    return { [self] in _ = run(.undecodable(frame.requestID, "\(error)")) }
                }
            }
        case .message:
            guard let reply = try? WireJSON.decode(WireReply.self, from: Array(payload)) else { return }
            delivery.deliver { [self] in
                if reply.event != nil {
                    for handler in state.withLock({ Array($0.eventHandlers.values) }) { handler(reply) }
                    return
                }
                guard let id = reply.id else { return }
                run(.reply(id), reply: reply)
            }
        }
    }

    private func deliver(_ batch: SampleBatchFrame) {
        run(.batch(batch.requestID), batch: batch)
    }

    /// A batch this build cannot read (a layout of a newer daemon): skipped, but its credit is
    /// returned so the fetch goes on (docs/protocol.md §8).
    private func skip(_ payload: UnsafeRawBufferPointer) {
        guard payload.count >= 4 else { return }
        notify(.ack, target: UInt32(littleEndian: payload.loadUnaligned(as: UInt32.self)), batches: 1)
    }

    private static func readReply(_ fd: Int32) throws -> WireReply {
        var decoder = FrameDecoder(limit: WireLimits.maxServerFrame)
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let frame = try decoder.next(), frame.kind == .message {
                return try WireJSON.decode(WireReply.self, from: frame.payload)
            }
            // Read one byte at a time until the hello reply is complete: nothing after it is consumed.
            let n = try chunk.withUnsafeMutableBytes { (raw) throws(SystemError) in
                try SystemCalls.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<1]), "sensorkitd socket")
            }
            guard n > 0 else { throw SRError(.dataInaccessible, message: "connection closed during hello") }
            decoder.feed(chunk[0..<n])
        }
    }
}
