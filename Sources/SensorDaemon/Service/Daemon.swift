import Dispatch
import Foundation
import Glibc
import SensorKitModel
import SensorSystem

/// The running daemon: starts the parts in order, stops them in reverse with a deadline:
/// timeline → store → pipeline and sources → reader service → socket; on SIGTERM or
/// SIGINT the socket closes first, then sources stop, then the store flushes and closes.
public final class Daemon: @unchecked Sendable {
    // @unchecked: everything is set in init and only read afterwards; `stopped` is guarded by the
    // signal queue.
    public struct Parts: Sendable {
        public var paths: DaemonPaths
        public var configuration: DaemonConfiguration
        public var clock: any SystemClock
        public var journal: Journal
        /// Opens the store in the state directory.
        public var openStore: @Sendable (_ stateDirectory: String, _ timeline: TimelineKeeper) throws -> any DaemonStore
        /// Discovers sources and keeps adding/removing them (IIO via udev, BLE, test sources).
        public var startSources: @Sendable (RecordingPipeline) throws -> [any SourceDiscovery]
        /// Which sensors a driver can produce; nil: this build's drivers under `configuration`.
        public var drivers: DriverRegistry
        /// The reader socket handed over by systemd (`SocketActivation`), listening on `paths.socket`; nil: bind it.
        public var listener: Int32?

        public init(paths: DaemonPaths, configuration: DaemonConfiguration, clock: any SystemClock, journal: Journal,
                    openStore: @escaping @Sendable (String, TimelineKeeper) throws -> any DaemonStore,
                    startSources: @escaping @Sendable (RecordingPipeline) throws -> [any SourceDiscovery],
                    drivers: DriverRegistry? = nil, listener: Int32? = nil) {
            self.paths = paths
            self.configuration = configuration
            self.clock = clock
            self.journal = journal
            self.openStore = openStore
            self.startSources = startSources
            self.drivers = drivers ?? DaemonSources.drivers(configuration: configuration)
            self.listener = listener
        }
    }

    public let parts: Parts
    public let timeline: TimelineKeeper
    public let store: any DaemonStore
    public let pipeline: RecordingPipeline
    public let service: ReaderService
    public let server: ReaderServer
    private let discoveries: [any SourceDiscovery]
    let notifier = ServiceManagerNotifier(environment: ProcessInfo.processInfo.environment)
    private let housekeeping: any DispatchSourceTimer
    private let housekeepingQueue = DispatchQueue(label: "sensorkitd.housekeeping")
    private let watchdog: ServiceWatchdog?

    /// Starts everything; throws (after undoing what started) when a part cannot start.
    public init(_ parts: Parts) throws {
        self.parts = parts
        let journal = parts.journal
        // Before anything opens a file there: the socket's folder must not let others replace the
        // daemon's files, and the state directory must be the daemon's alone (docs/configuration.md).
        let socketFolder = (parts.paths.socket as NSString).deletingLastPathComponent
        try SharedFolder.prepare(socketFolder.isEmpty ? "." : socketFolder)
        let tightened = try StateDirectory.secure(parts.paths.stateDirectory)
        if !tightened.isEmpty {
            journal.warning("state directory \(parts.paths.stateDirectory) was readable by others; made private: "
                            + tightened.map(\.description).joined(separator: ", "))
        }
        timeline = try TimelineKeeper(stateDirectory: parts.paths.stateDirectory, clock: parts.clock, journal: journal)
        store = try parts.openStore(parts.paths.stateDirectory, timeline)
        pipeline = RecordingPipeline(sink: store, clock: parts.clock, journal: journal)
        let (registry, problems) = AppRegistry.load(directory: parts.paths.appsDirectory)
        for problem in problems { journal.warning(problem + ", ignoring") }
        journal.info("\(registry.apps.count) app(s) installed from \(parts.paths.appsDirectory)")
        let keeper = timeline
        let limits = ReaderLimits(parts.configuration.reader, openFiles: OpenFileLimit.current)
        journal.info("reader limits: \(limits.maxConnections) connections, \(limits.maxConnectionsPerUser) per user, idle fetches end after \(limits.fetchIdleTimeout / 1_000_000_000) s")
        service = try ReaderService(.init(
            registry: registry, archive: store, recorder: pipeline, clock: parts.clock,
            timeline: { keeper.current }, storage: store, drivers: parts.drivers,
            preGranted: parts.configuration.grants, fetchIdleTimeout: limits.fetchIdleTimeout, log: { journal($0) }))
        server = try ReaderServer(path: parts.paths.socket, service: service, limits: limits, inheritedListener: parts.listener,
                                  log: { journal($0) })
        try timeline.publish(besideSocket: parts.paths.socket)
        do {
            discoveries = try parts.startSources(pipeline)
        } catch {
            server.stop()
            store.close()
            throw error
        }
        housekeeping = DispatchSource.makeTimerSource(queue: housekeepingQueue)
        housekeeping.schedule(deadline: .now() + 1, repeating: 1, leeway: .milliseconds(200))
        let store = self.store
        let clock = parts.clock
        let notifier = self.notifier
        var ticks = 0
        housekeeping.setEventHandler {
            ticks += 1
            keeper.advance(to: clock.now())
            store.timelineChanged(keeper.current)
            if ticks % 10 == 0 { keeper.saveOrLog() }
            if ticks % 60 == 0 { store.maintain() }
        }
        housekeeping.resume()
        let (reader, recorder) = (service, pipeline)
        watchdog = ServiceManagerNotifier.watchdogInterval(environment: ProcessInfo.processInfo.environment).map { interval in
            ServiceWatchdog(interval: interval, probes: [("reader", reader.probe), ("pipeline", recorder.probe)],
                            ping: { notifier.notify("WATCHDOG=1") }, log: { journal($0) })
        }
        server.start()
        notifier.notify("READY=1\nSTATUS=recording for \(registry.apps.count) app(s)")
        journal.notice("sensorkitd ready on \(parts.paths.socket) (state \(parts.paths.stateDirectory))")
    }

    /// Stops in reverse start order: no new clients, sources stopped, store flushed and closed.
    public func stop() {
        notifier.notify("STOPPING=1")
        server.stop()
        for discovery in discoveries.reversed() { discovery.stop() }
        pipeline.stopAll()
        housekeeping.cancel()
        watchdog?.stop()
        housekeepingQueue.sync {}
        timeline.advance(to: parts.clock.now())
        timeline.saveOrLog()
        store.close()
        parts.journal.notice("sensorkitd stopped; store flushed and closed")
    }

    /// Runs until SIGTERM or SIGINT, then stops. Blocks the calling thread (dispatchMain-free).
    public func runUntilSignalled() {
        let done = DispatchSemaphore(value: 0)
        let queue = DispatchQueue(label: "sensorkitd.signals")
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGTERM, SIGINT, SIGHUP] {
            // The Dispatch source takes over; a failure here would only leave the default action.
            _ = try? SystemCalls.ignoreSignal(number)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                guard number != SIGHUP else { return self.reload() }
                self.parts.journal.notice("received signal \(number), stopping")
                done.signal()
            }
            source.resume()
            sources.append(source)
        }
        _ = try? SystemCalls.ignoreSignal(SIGPIPE)
        done.wait()
        stop()
        for source in sources { source.cancel() }
    }
}

/// Finds sources and keeps the pipeline's set current (udev hotplug, BLE reconnects).
public protocol SourceDiscovery: Sendable {
    func stop()
}

/// The store as the daemon uses it: an ingest sink, a fetch archive, and housekeeping.
public protocol DaemonStore: RecordingSink, SampleArchive, ControlStorage {
    /// Retention purge and disk budget (runs on the store's own queue; never blocks the caller).
    func maintain()
    /// Flushes everything appended and closes; nothing appended before is lost.
    func close()
    /// The daemon's timeline moved (its high-water mark); the store converts with it.
    func timelineChanged(_ timeline: Timeline)
}
