import Dispatch
import Glibc
import SensorSystem
import Synchronization

/// Watches the user's Wayland compositor: which app is in front (`wlr-foreign-toplevel-management`)
/// and whether each output is powered (`wlr-output-power-management`), as `CompositorEvent`s on
/// the caller's queue. docs/wayland.md.
///
/// The connection lives on a private queue that alone touches it, woken only when the
/// compositor's socket is readable: a watcher wakes for nothing while nothing changes.
public final class CompositorWatcher: Sendable {
    private let loop: WatchLoop
    private let wayland: DispatchQueue

    /// Connects to `displayName` (a socket name or absolute path; `nil`: `WAYLAND_DISPLAY`), binds
    /// both protocols and reports the current foreground app and output power at once. Throws a
    /// `CompositorError` saying why it cannot watch (no display, no compositor, a compositor
    /// without the wlr protocols, no answer within two seconds). Blocks for the initial round trips.
    public convenience init(
        displayName: String?, queue: DispatchQueue, onEvent: @escaping @Sendable (CompositorEvent) -> Void
    ) throws {
        try self.init(
            displayName: displayName, queue: queue,
            boottime: { UInt64(clamping: LinuxSystemClock.read(CLOCK_BOOTTIME)) }, onEvent: onEvent)
    }

    /// As above, with the clock injected (`CLOCK_BOOTTIME` nanoseconds).
    init(
        displayName: String?, queue: DispatchQueue, answerMilliseconds: Int32 = 2000,
        boottime: @escaping @Sendable () -> UInt64, onEvent: @escaping @Sendable (CompositorEvent) -> Void
    ) throws {
        let connection = try WaylandConnection(displayName: displayName)
        let delivery = Delivery(queue: queue, onEvent: onEvent)
        let loop = WatchLoop(connection: connection, delivery: delivery, boottime: boottime)
        try loop.start(answerMilliseconds: answerMilliseconds)
        self.loop = loop
        self.wayland = DispatchQueue(label: "sensorkit.wayland")
        loop.resume(on: wayland)
    }

    deinit { stop() }

    /// Stops watching and closes the connection; no event is delivered once it returns. Idempotent.
    public func stop() {
        loop.delivery.close()
        wayland.sync { loop.stop() }
    }
}

/// Hands events to the caller's queue in order, and drops those still queued once closed.
private final class Delivery: Sendable {
    private let queue: DispatchQueue
    private let onEvent: @Sendable (CompositorEvent) -> Void
    private let closed = Mutex(false)

    init(queue: DispatchQueue, onEvent: @escaping @Sendable (CompositorEvent) -> Void) {
        self.queue = queue
        self.onEvent = onEvent
    }

    func send(_ events: [CompositorEvent]) {
        guard !events.isEmpty else { return }
        queue.async { [self] in
            for event in events where !closed.withLock({ $0 }) { onEvent(event) }
        }
    }

    func close() { closed.withLock { $0 = true } }
}

/// The connection and the trackers. Touched by the initialising thread until `resume`, then only
/// on the watcher's queue (each method after `resume` checks it): hence `@unchecked Sendable`.
private final class WatchLoop: @unchecked Sendable {
    let delivery: Delivery
    private let connection: WaylandConnection
    private let boottime: @Sendable () -> UInt64
    private var toplevels = ToplevelTracker()
    private var power = OutputPowerTracker()
    private var outbox: [CompositorEvent] = []
    private var batchTime: UInt64 = 0
    private var finished = false
    private var source: (any DispatchSourceRead)?
    private var queue: DispatchQueue?

    init(connection: WaylandConnection, delivery: Delivery, boottime: @escaping @Sendable () -> UInt64) {
        self.connection = connection
        self.delivery = delivery
        self.boottime = boottime
        connection.sink = { [unowned self] message in self.on(message) }
    }

    /// The two initial round trips: the globals, then the windows, outputs and modes they lead to.
    func start(answerMilliseconds: Int32) throws(CompositorError) {
        batchTime = boottime()
        try connection.roundtrip(timeoutMilliseconds: answerMilliseconds)
        try connection.bindManagers()
        try connection.roundtrip(timeoutMilliseconds: answerMilliseconds)
        if finished { throw .noAnswer(display: connection.displayName) }
        settle()
    }

    func resume(on queue: DispatchQueue) {
        self.queue = queue
        let source = DispatchSource.makeReadSource(fileDescriptor: connection.fileDescriptor, queue: queue)
        source.setEventHandler { [self] in readable() }
        source.setCancelHandler { [connection] in connection.disconnect() }
        self.source = source
        source.resume()
    }

    func stop() {
        if let queue { dispatchPrecondition(condition: .onQueue(queue)) }
        source?.cancel()
        source = nil
    }

    private func readable() {
        if let queue { dispatchPrecondition(condition: .onQueue(queue)) }
        batchTime = boottime()
        let alive = connection.readAndDispatch()
        if !alive || finished {
            outbox.append(.gone(at: batchTime))
            delivery.send(outbox)
            outbox = []
            stop()
            return
        }
        settle()
    }

    /// A batch of the compositor's events has been fed in: the foreground app is judged now.
    private func settle() {
        outbox += toplevels.on(.settled(at: batchTime))
        delivery.send(outbox)
        outbox = []
    }

    private func on(_ message: WaylandConnection.Message) {
        switch message {
        case .toplevel(let event):
            outbox += toplevels.on(event)
        case .power(let output, let mode):
            outbox += power.on(.mode(output: output, mode, at: batchTime))
        case .outputGone(let output):
            outbox += power.on(.removed(output: output))
        case .finished:
            finished = true
        }
    }
}
