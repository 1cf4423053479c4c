import Dispatch
import Foundation
import Glibc
import LocationBridge
import SensorKitModel
import SensorSystem
import Synchronization
import UsageBridge

/// The running daemon: starts the parts in order, stops them in reverse with a deadline:
/// timeline → store → pipeline and sources → reader service → socket; on SIGTERM or
/// SIGINT the socket closes first, then sources stop, then the store flushes and closes, all
/// within `Parts.stopDeadline` (docs/reliability.md, "Shutdown").
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
        /// Runs the periodic work, the watchdog and the fetches' timers (tests drive it by hand).
        public var scheduler: any Scheduler = TickingScheduler()
        /// Where `NOTIFY_SOCKET` and `WATCHDOG_USEC` come from.
        public var environment: [String: String] = ProcessInfo.processInfo.environment
        /// Seconds a stop may take before what is left is cut short (well inside systemd's
        /// default `TimeoutStopSec` of 90 s, after which it would SIGKILL).
        public var stopDeadline: Double = 10

        public init(
            paths: DaemonPaths, configuration: DaemonConfiguration, clock: any SystemClock, journal: Journal,
            openStore: @escaping @Sendable (String, TimelineKeeper) throws -> any DaemonStore,
            startSources: @escaping @Sendable (RecordingPipeline) throws -> [any SourceDiscovery],
            drivers: DriverRegistry? = nil, listener: Int32? = nil
        ) {
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
    let notifier: ServiceManagerNotifier
    private let housekeeping: any ScheduledTimer
    private let housekeepingQueue = DispatchQueue(label: "sensorkitd.housekeeping")
    /// Pings systemd's watchdog from its own queue while the working queues answer.
    private let watchdog: ServiceWatchdog?

    /// Starts everything; throws (after undoing what started) when a part cannot start.
    public init(_ parts: Parts) throws {
        self.parts = parts
        notifier = ServiceManagerNotifier(environment: parts.environment)
        let journal = parts.journal
        // Before anything opens a file there: the socket's folder must not let others replace the
        // daemon's files, and the state directory must be the daemon's alone (docs/configuration.md).
        let socketFolder = (parts.paths.socket as NSString).deletingLastPathComponent
        try SharedFolder.prepare(socketFolder.isEmpty ? "." : socketFolder)
        let tightened = try StateDirectory.secure(parts.paths.stateDirectory)
        if !tightened.isEmpty {
            journal.warning(
                "state directory \(parts.paths.stateDirectory) was readable by others; made private: \(tightened.map(\.description).joined(separator: ", "))"
            )
        }
        timeline = try TimelineKeeper(stateDirectory: parts.paths.stateDirectory, clock: parts.clock, journal: journal)
        store = try parts.openStore(parts.paths.stateDirectory, timeline)
        let live = LiveFeed(encoding: store)
        pipeline = RecordingPipeline(sink: store, clock: parts.clock, journal: journal, observer: live)
        let (registry, problems) = AppRegistry.load(directory: parts.paths.appsDirectory)
        for problem in problems { journal.warning("\(problem), ignoring") }
        journal.info("\(registry.apps.count) app(s) installed from \(parts.paths.appsDirectory)")
        let keeper = timeline
        // Derived from the descriptors left now that the store is open and before recording
        // starts (its share is `ReaderLimits.reserve`).
        let limits = ReaderLimits(parts.configuration.reader, openFiles: OpenFileLimit.current, inUse: OpenFileLimit.inUse ?? 0)
        store.limitReads(to: limits.maxStoreReaders)
        journal.info(
            "reader limits: \(limits.maxConnections) connections, \(limits.maxConnectionsPerUser) per user; \(limits.maxFetches) fetches running, \(limits.maxFetchesPerUser) per user; idle fetches end after \(limits.fetchIdleTimeout / 1_000_000_000) s"
        )
        var dependencies = ReaderService.Dependencies(
            registry: registry, archive: store, recorder: pipeline, clock: parts.clock,
            timeline: { keeper.current }, storage: store, drivers: parts.drivers,
            preGranted: parts.configuration.grants, fetchIdleTimeout: limits.fetchIdleTimeout, log: journal)
        dependencies.scheduler = parts.scheduler
        dependencies.configuredGrantsFile = parts.paths.stateDirectory + "/" + ConfiguredGrants.fileName
        dependencies.maxFetches = limits.maxFetches
        dependencies.maxFetchesPerUser = limits.maxFetchesPerUser
        dependencies.live = live
        service = try ReaderService(dependencies)
        server = try ReaderServer(
            path: parts.paths.socket, service: service, limits: limits, inheritedListener: parts.listener,
            log: journal)
        try timeline.publish(besideSocket: parts.paths.socket)
        do {
            discoveries = try parts.startSources(pipeline)
            if let sink = discoveries.lazy.compactMap({ $0 as? any UsageAgentSink }).first {
                service.admitUsageAgents(to: sink)
            }
            if let sink = discoveries.lazy.compactMap({ $0 as? any VisitAgentSink }).first {
                service.admitVisits(to: sink)
            }
        } catch {
            server.stop()
            store.close()
            throw error
        }
        let store = self.store
        let clock = parts.clock
        let notifier = self.notifier
        let ticks = Mutex(0)
        // Every 10 s: the timeline's high-water mark matters only once saved (it floors the next
        // boot's anchor), so advancing it more often bought nothing but a wake-up a second
        // (docs/measurements/iio.md, "Whole daemon"). Saved every minute: each save is an atomic
        // write with its fsyncs, about eight disk waits, which every ten seconds were a sixth of
        // a recording daemon's wake-ups (docs/design-notes/0005-clock-steps.md).
        // A thread of its own (`scheduleTicks`): a libdispatch timer this slow started a new
        // worker thread at every tick (docs/measurements/iio.md, "2026-12-07, evening").
        housekeeping = parts.scheduler.scheduleTicks(on: housekeepingQueue, every: 10_000_000_000) {
            let tick = ticks.withLock {
                $0 += 1; return $0
            }
            keeper.advance(to: clock.now())
            store.timelineChanged(keeper.current)
            if tick % 6 == 0 {
                keeper.saveOrLog()
                store.maintain()  // returns at once, the purge waits elsewhere
            }
        }
        let (reader, recorder) = (service, pipeline)
        watchdog = ServiceManagerNotifier.watchdogInterval(environment: parts.environment).map { interval in
            ServiceWatchdog(
                interval: interval, scheduler: parts.scheduler,
                probes: [("reader", reader.probe), ("pipeline", recorder.probe)],
                ping: { notifier.notify("WATCHDOG=1") }, log: journal)
        }
        server.start()
        notifier.notify("READY=1\nSTATUS=recording for \(registry.apps.count) app(s)")
        journal.notice("sensorkitd ready on \(parts.paths.socket) (state \(parts.paths.stateDirectory))")
    }

    /// Stops in reverse start order: no new clients, sources stopped, store flushed and closed.
    /// What has not finished within `Parts.stopDeadline` (a source or the store that hangs) is
    /// cut short and named in the log; returns false then, and the process exits anyway (the
    /// store records what it had not committed at its next start, docs/store.md).
    @discardableResult
    public func stop() -> Bool {
        notifier.notify("STOPPING=1")
        let steps: [(String, @Sendable () -> Void)] = [
            ("closing the reader socket", { [server] in server.stop() }),
            (
                "stopping the sources",
                { [discoveries, pipeline] in
                    for discovery in discoveries.reversed() { discovery.stop() }
                    pipeline.stopAll()
                }
            ),
            (
                "stopping the timers",
                { [self] in
                    housekeeping.cancel()
                    watchdog?.stop()
                    housekeepingQueue.sync {}
                }
            ),
            (
                "saving the timeline",
                { [timeline, parts] in
                    timeline.advance(to: parts.clock.now())
                    timeline.saveOrLog()
                }
            ),
            ("flushing and closing the store", { [store] in store.close() }),
        ]
        let current = Mutex<String?>(nil)
        let finished = DispatchSemaphore(value: 0)
        let worker = Thread {
            for (name, step) in steps {
                current.withLock { $0 = name }
                step()
            }
            current.withLock { $0 = nil }
            finished.signal()
        }
        worker.name = "sensorkitd.stop"
        worker.start()
        let deadline = parts.stopDeadline
        guard finished.wait(timeout: .now() + deadline) == .success else {
            let step = current.withLock { $0 } ?? "?"
            let left = steps.drop(while: { $0.0 != step }).map(\.0)
            parts.journal.error(
                "shutdown cut short after \(deadline) s: \(left.joined(separator: ", ")) did not finish (\(step) hangs); exiting without them"
            )
            return false
        }
        parts.journal.notice("sensorkitd stopped; store flushed and closed")
        return true
    }

    /// Runs until `signals` asks for a stop (SIGTERM, SIGINT), then stops; SIGHUP reloads. False
    /// when the stop was cut short by its deadline. Blocks the calling thread (dispatchMain-free).
    @discardableResult
    public func run(until signals: StopSignals) -> Bool {
        signals.onReload { [self] in reload() }
        signals.waitForStop()
        let clean = stop()
        signals.cancel()
        return clean
    }
}

/// Finds sources and keeps the pipeline's set current (udev hotplug, BLE reconnects).
public protocol SourceDiscovery: Sendable {
    func stop()
}

/// The store as the daemon uses it: an ingest sink, a fetch archive, and housekeeping.
public protocol DaemonStore: RecordingSink, SampleArchive, ControlStorage, LiveEncoding {
    /// Retention purge and disk budget (runs on the store's own queue; never blocks the caller).
    func maintain()
    /// Flushes everything appended and closes; nothing appended before is lost.
    func close()
    /// The daemon's timeline moved (its high-water mark); the store converts with it.
    func timelineChanged(_ timeline: Timeline)
    /// At most `count` read connections open at once (`ReaderLimits.maxStoreReaders`).
    func limitReads(to count: Int)
}
