import SensorKitModel

/// The client's side of one connection to sensorkitd, without the socket: which requests wait for
/// their final reply, and whether the connection still stands (docs/protocol.md §3, §4). Each
/// event returns what `ReaderConnection` must do; `Handler` is a request's callback.
///
/// A request gets exactly one final reply: the daemon's, or — when the connection ends first, or
/// had ended before the request was made — a `dataInaccessible` failure naming why. Batches go to
/// their request until its final reply; anything for an id that is not waiting is dropped.
struct ReaderSessionState<Handler> {
    enum Phase: Equatable {
        case open
        /// The connection ended; every request made from now on fails at once.
        case closed(reason: String)
    }

    enum Event {
        /// A new request with its handler.
        case request(Handler)
        /// A batch for request `id` arrived (or a chunk was decoded into one).
        case batch(UInt32)
        /// The final reply to request `id` arrived.
        case reply(UInt32)
        /// A chunk of request `id` could not be decoded: the fetch fails rather than skip samples.
        case undecodable(UInt32, String)
        /// The socket ended (the daemon closed it, or reading failed).
        case ended(String)
    }

    enum Action {
        /// Write the request with this id.
        case write(UInt32)
        /// Hand the batch to this handler (the request stays open).
        case deliverBatch(Handler)
        /// Hand the daemon's final reply to this handler.
        case deliverReply(Handler)
        /// Give this handler a failure reply for request `id` (its final reply).
        case fail(UInt32, Handler, String)
        /// Tell the daemon to stop request `id` (`cancel`, no reply).
        case cancel(UInt32)
    }

    private(set) var phase: Phase = .open
    private var nextID: UInt32 = 1
    private var waiting: [UInt32: Handler] = [:]

    /// Requests still waiting for their final reply.
    var waitingCount: Int { waiting.count }

    mutating func on(_ event: Event) -> [Action] {
        switch (phase, event) {
        case (.open, .request(let handler)):
            let id = takeID()
            waiting[id] = handler
            return [.write(id)]
        case (.closed(let reason), .request(let handler)):
            return [.fail(takeID(), handler, "connection to sensorkitd closed: \(reason)")]
        case (.open, .batch(let id)):
            return waiting[id].map { [.deliverBatch($0)] } ?? []
        case (.open, .reply(let id)):
            return waiting.removeValue(forKey: id).map { [.deliverReply($0)] } ?? []
        case (.open, .undecodable(let id, let why)):
            guard let handler = waiting.removeValue(forKey: id) else { return [] }
            return [.cancel(id), .fail(id, handler, why)]
        case (.open, .ended(let reason)):
            phase = .closed(reason: reason)
            let failed = waiting.sorted { $0.key < $1.key }
            waiting = [:]
            return failed.map { .fail($0.key, $0.value, reason) }
        case (.closed, .batch), (.closed, .reply), (.closed, .undecodable), (.closed, .ended):
            // Everything waiting was failed when the connection ended; nothing is left to tell.
            return []
        }
    }

    /// Ids go up by one and wrap; the daemon takes any 32-bit id.
    private mutating func takeID() -> UInt32 {
        defer { nextID &+= 1 }
        return nextID
    }
}

extension ReaderSessionState: Sendable where Handler: Sendable {}
extension ReaderSessionState.Event: Sendable where Handler: Sendable {}
extension ReaderSessionState.Action: Sendable where Handler: Sendable {}
