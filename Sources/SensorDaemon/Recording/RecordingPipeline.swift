import Dispatch
import SensorKitModel
import SensorSystem
import Synchronization

/// Connects sources to the store and turns recording on and off as stakes come and go
/// (docs/architecture.md). Each stream's start and stop run on that stream's own serial queue; a
/// stop → start gap becomes a `noInterestedClients` deletion record, a source's own gap a
/// `systemInitiated` one.
///
/// A source's events are taken on the thread that delivers them, straight into the sink (whose
/// appends only stage the batch and return), not handed to the stream's queue: a hop per batch
/// was a thread wake-up per stream and hand-over, as many as the IIO reading thread's own
/// (docs/iio.md §4, "Delivery"). `taking` (a lock, not a queue) orders them against the stop:
/// what the source hands over before `setRecording(false)` returns is in the sink before the
/// stop, and anything later is dropped.
public final class RecordingPipeline: RecordingControl, SourceRegistry, @unchecked Sendable {
    // @unchecked: `streams` and `wanted` are confined to `queue`; each StreamState's `recording`
    // and `stoppedAt` are confined to its stream queue, `taking` is a Mutex.
    private final class StreamState: @unchecked Sendable {
        let source: any SensorSource
        let streamID: Int64
        let queue: DispatchQueue
        var recording = false
        var stoppedAt: BootInstant?
        /// Whether the source's events go to the sink; held while one is taken, so a stop waits
        /// for the event being taken and drops the later ones.
        let taking = Mutex(false)
        /// Keeps a steady loss from logging a warning per gap (`GapLogThrottle`).
        let gapLog = Mutex(GapLogThrottle())
        init(source: any SensorSource, streamID: Int64, queue: DispatchQueue) {
            self.source = source
            self.streamID = streamID
            self.queue = queue
        }
    }

    private let queue = DispatchQueue(label: "sensorkitd.pipeline")
    private let sink: any RecordingSink
    private let clock: any SystemClock
    private let journal: Journal
    /// The live subscriptions' feed (nil: nobody can subscribe).
    private let observer: (any RecordingObserver)?
    private var streams: [String: StreamState] = [:]
    private var wanted: Set<SRSensor> = []
    /// Sources (by source|sensor key) that vanished while recording (unplugged): when the source
    /// comes back — with the same descriptor or a new one (renumbered device, new scale) — the
    /// time in between becomes a `systemInitiated` deletion record.
    private var vanished: [String: BootInstant] = [:]
    /// What `sources()` lists, changed as `add`, `remove` and `record` are called rather than when
    /// `queue` gets to them: the reader's control queue reads it without waiting for the pipeline,
    /// which may itself be waiting for the store's writer while a new source opens its stream.
    private let listing = Mutex(Listing())
    private struct Listing {
        var sources: [String: any SensorSource] = [:]
        var wanted: Set<SRSensor> = []
    }

    private static func key(_ source: any SensorSource) -> String {
        source.descriptor.source + "|" + source.descriptor.sensor.rawValue
    }

    public init(sink: any RecordingSink, clock: any SystemClock, journal: Journal, observer: (any RecordingObserver)? = nil) {
        self.sink = sink
        self.clock = clock
        self.journal = journal
        self.observer = observer
    }

    /// Adds a source (a driver found it); it records at once if its sensor is wanted.
    public func add(_ source: any SensorSource) {
        let key = Self.key(source)
        listing.withLock { $0.sources[key] = source }
        queue.async {
            do {
                let id = try self.sink.openStream(source.descriptor)
                let state = StreamState(
                    source: source, streamID: id,
                    queue: DispatchQueue(label: "sensorkitd.stream.\(id)"))
                self.streams[key] = state
                if let since = self.vanished.removeValue(forKey: key) {
                    let now = self.clock.now()
                    if since.boot == now.boot {
                        self.sink.recordGap(stream: id, from: since, to: now, reason: .systemInitiated)
                        self.journal.notice(
                            "source \(source.descriptor.source) is back after \(FetchPolicy.describe(now.nanoseconds.subtractingSaturating(since.nanoseconds))); the gap is recorded"
                        )
                    }
                }
                self.journal.info(
                    "source \(source.descriptor.source) (\(source.descriptor.sensor.rawValue)) added as stream \(id)")
                self.apply(state)
            } catch {
                self.listing.withLock { listing in
                    if let listed = listing.sources[key], listed === source { listing.sources[key] = nil }
                }
                self.journal.error("cannot open a store stream for \(source.descriptor.source): \(error); not recording it")
            }
        }
    }

    public func handingOver(_ body: () -> Void) { sink.handingOver(body) }

    /// Removes a source (unplugged): it is closed; the store keeps its data.
    public func remove(source: String) {
        listing.withLock { $0.sources = $0.sources.filter { $0.value.descriptor.source != source } }
        queue.async {
            for (key, state) in self.streams where state.source.descriptor.source == source {
                self.streams[key] = nil
                if self.wanted.contains(state.source.descriptor.sensor) { self.vanished[key] = self.clock.now() }
                state.queue.async {
                    // What the source still held is handed over by close(), into the sink, before this stop.
                    state.source.close()
                    state.taking.withLock { $0 = false }
                    if state.recording {
                        self.observer?.stopped(
                            stream: state.streamID, descriptor: state.source.descriptor, why: "the source was removed (unplugged)"
                        )
                    }
                    state.recording = false
                }
                self.journal.warning(
                    "source \(source) removed while \(self.wanted.contains(state.source.descriptor.sensor) ? "recording" : "idle")"
                )
            }
        }
    }

    public func record(_ sensors: Set<SRSensor>) {
        listing.withLock { $0.wanted = sensors }
        queue.async {
            self.wanted = sensors
            for state in self.streams.values { self.apply(state) }
        }
    }

    /// Every source, with its live status; never waits for the pipeline's queue.
    public func sources() -> [WireSource] {
        let (sources, wanted) = listing.withLock { (Array($0.sources.values), $0.wanted) }
        return sources.map { source in
            let d = source.descriptor
            let status = wanted.contains(d.sensor) ? source.captureStatus ?? .recording : .idle
            return WireSource(
                sensor: d.sensor.rawValue, device: d.device, source: d.source,
                details: d.shownDetails.merging(source.status) { _, live in live },
                recording: status.isRecording, state: status.description)
        }.sorted { ($0.source, $0.sensor) < ($1.source, $1.sensor) }
    }

    /// Runs `answer` on the pipeline's queue once the work queued before it is done (the watchdog's probe).
    public func probe(_ answer: @escaping @Sendable () -> Void) { queue.async(execute: answer) }

    /// Stops every source and waits until they are stopped and what they handed over is in the
    /// sink (shutdown).
    public func stopAll() {
        let states = queue.sync { Array(streams.values) }
        for state in states {
            state.queue.sync {
                state.source.setRecording(false) { _ in }
                state.source.close()
                if state.recording {
                    observer?.stopped(stream: state.streamID, descriptor: state.source.descriptor, why: "the daemon is stopping")
                }
            }
        }
        // What the sources handed over as they stopped was queued behind those blocks; the store
        // is closed next, so it must have reached the sink first.
        for state in states { state.queue.sync {} }
    }

    private func apply(_ state: StreamState) {
        dispatchPrecondition(condition: .onQueue(queue))
        let on = wanted.contains(state.source.descriptor.sensor)
        let sink = self.sink
        let clock = self.clock
        let observer = self.observer
        state.queue.async {
            guard state.recording != on else { return }
            let now = clock.now()
            if on {
                state.recording = true
                if let stoppedAt = state.stoppedAt, stoppedAt.boot == now.boot {
                    sink.recordGap(stream: state.streamID, from: stoppedAt, to: now, reason: .noInterestedClients)
                }
                state.taking.withLock { $0 = true }
                let journal = self.journal
                // A source that can keep what it holds crash-safe may then hold it for seconds.
                if let staged = state.source as? any StagingSource {
                    staged.useStaging(sink.staging(stream: state.streamID, capacity: staged.stagingCapacity))
                }
                state.source.setRecording(true) { event in
                    Self.take(event, state: state, sink: sink, observer: observer, journal: journal)
                }
            } else {
                // A source hands over what it still holds before `setRecording(false)` returns (a
                // BLE stream's frames held for its clock fit, an IIO stream's batch): taken on its
                // thread, so in the sink before the stop below.
                state.source.setRecording(false) { _ in }
                state.taking.withLock { $0 = false }
                state.recording = false
                state.stoppedAt = now
                sink.recordingStopped(stream: state.streamID)
                observer?.stopped(
                    stream: state.streamID, descriptor: state.source.descriptor, why: "no app records the sensor any more")
            }
        }
    }

    /// Takes one event on the source's thread (any thread; one at a time per source, in order).
    private static func take(
        _ event: SourceEvent, state: StreamState, sink: any RecordingSink, observer: (any RecordingObserver)?, journal: Journal
    ) {
        let taken = state.taking.withLock { taking -> Bool in
            guard taking else { return false }  // late events after a stop are dropped with the stop
            switch event {
            case .samples(let batch):
                if batch.count > 0 {
                    sink.append(stream: state.streamID, batch)
                    observer?.recorded(stream: state.streamID, descriptor: state.source.descriptor, batch)
                }
            case .gap(let from, let to, let reason, _):
                sink.recordGap(stream: state.streamID, from: from, to: to, reason: reason)
                observer?.gap(stream: state.streamID, descriptor: state.source.descriptor, from: from, to: to, reason: reason)
            }
            return true
        }
        if taken, case .gap(let from, let to, let reason, let why) = event,
            let held = state.gapLog.withLock({ $0.admit(why, endingAt: to.nanoseconds) })
        {
            let heldBack = held > 0 ? " (\(held) earlier gap(s) of this stream recorded without a line)" : ""
            journal.warning(
                "\(state.source.descriptor.source): lost \(FetchPolicy.describe(to.nanoseconds.subtractingSaturating(from.nanoseconds))) of data (\(why)); recorded as \(reason)\(heldBack)"
            )
        }
    }
}
