import Dispatch
import SensorKitModel

/// One running fetch: pulls batches from a cursor and sends them while the client has credit
/// (docs/protocol.md §6.1). With no credit it simply stops producing until an `ack` comes, so a
/// slow client parks a cursor, never a thread. Confined to its own serial queue, which targets the
/// connection's queue. What to do next is `FetchFlow`'s decision; this class only carries it out
/// (reads the cursor, hands frames to the connection, runs the watchdog).
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
    // @unchecked: mutable state is touched only on `queue` (dispatchPrecondition in `handle`).
    let requestID: UInt32
    private let queue: DispatchQueue
    private let cursor: any FetchCursor
    private let connection: ClientConnection
    private let scheduler: any Scheduler
    private var flow: FetchFlow<EncodedBatch>
    /// Frame buffers back from the connection, reused so their pages stay mapped.
    private var spare: [[UInt8]] = []
    private let onFinish: @Sendable (UInt32) -> Void
    /// Samples per batch frame: fewer for a wide layout (`WireLimits.samplesPerBatch(columns:)`).
    private let maxSamples: Int
    private var watchdog: (any ScheduledTimer)?
    /// A fetch that waits this long lets go of its store snapshot: a fast client never waits so
    /// long between batches, and a parked cursor costs a new read transaction to resume.
    static let parkAfterNanoseconds: Int64 = 1_000_000_000

    init(
        requestID: UInt32, cursor: any FetchCursor, connection: ClientConnection, window: Int, notice: String?,
        idleTimeout: Int64, scheduler: any Scheduler = DispatchScheduler(), maxSamples: Int = WireLimits.samplesPerBatch,
        onFinish: @escaping @Sendable (UInt32) -> Void
    ) {
        self.requestID = requestID
        self.maxSamples = maxSamples
        self.cursor = cursor
        self.connection = connection
        self.scheduler = scheduler
        self.flow = FetchFlow(
            requestID: requestID, window: window, idleTimeout: idleTimeout,
            parkAfter: Self.parkAfterNanoseconds, notice: notice)
        self.onFinish = onFinish
        self.queue = DispatchQueue(label: "sensorkitd.reader.fetch.\(requestID)", target: connection.queue)
    }

    deinit { watchdog?.cancel() }

    func start() {
        queue.async { self.handle(.start(now: self.scheduler.uptimeNanoseconds())) }
    }

    /// The client acknowledged `batches` frames: it may receive that many more.
    func acknowledge(_ batches: Int) {
        queue.async { self.handle(.acknowledged(batches: batches, now: self.scheduler.uptimeNanoseconds())) }
    }

    /// Stops the fetch; the client gets a `cancelled` reply unless it is gone (`silently`).
    func cancel(silently: Bool) {
        queue.async { self.handle(.cancelled(silently: silently)) }
    }

    /// Stops the fetch because the app lost its right to the data; the client gets `error`.
    func revoke(_ error: WireError) {
        queue.async { self.handle(.revoked(error)) }
    }

    /// Feeds `event` to the flow and carries out its actions; results of actions that finish at
    /// once (a read, a park) are fed back before anything else happens.
    private func handle(_ event: FetchFlow<EncodedBatch>.Event) {
        dispatchPrecondition(condition: .onQueue(queue))
        var events = [event]
        while !events.isEmpty {
            for action in flow.on(events.removeFirst()) {
                switch action {
                case .startWatchdog(let period):
                    watchdog = scheduler.schedule(on: queue, after: period, repeating: period) { [weak self] in
                        guard let self else { return }
                        self.handle(.tick(now: self.scheduler.uptimeNanoseconds()))
                    }
                case .read:
                    do {
                        let batch = try cursor.nextBatch(
                            requestID: requestID, maxSamples: maxSamples,
                            reusing: spare.popLast() ?? [])
                        events.append(.read(batch, count: batch?.count ?? 0))
                    } catch {
                        events.append(.readFailed("\(error)"))
                    }
                case .send(let batch):
                    connection.send(batch.storage, count: batch.size, tail: batch.tail) { [self] storage in
                        queue.async {
                            if !self.flow.isFinished { self.spare.append(storage) }
                            self.handle(.written(now: self.scheduler.uptimeNanoseconds()))
                        }
                    }
                case .scheduleStep:
                    queue.async { self.handle(.step) }
                case .park:
                    do { try cursor.park() } catch { events.append(.parkFailed("\(error)")) }
                case .reply(let reply):
                    connection.send(WireJSON.boundedFrame(reply).encoded())
                case .finish:
                    watchdog?.cancel()
                    watchdog = nil
                    spare = []
                    onFinish(requestID)
                }
            }
        }
    }
}
