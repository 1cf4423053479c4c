import Dispatch
import Glibc
import SensorKitModel
import SensorSystem
import Synchronization

/// The embargo store (docs/store.md): where recorded samples wait out the hold and live for the
/// window. A SQLite catalog (WAL) and compressed, checksummed columnar chunks.
///
/// Threads: `append`, `recordGap` and `reportCorrupt…` only enqueue work for the store's own
/// writer thread and return at once (they never wait for SQLite or the codec). Queries run
/// on the caller's thread on a read connection of their own. Registration, `flush`, `purge`,
/// `close` and the study-registry calls wait for the writer thread (and may block on disk I/O):
/// call them from control paths, never from a sampling queue.
///
/// Crash contract: a sample is committed at most `commitInterval` (0.5 s by default) after it was
/// read (its receive time), or as it arrives when it was read longer ago (plus the commit itself,
/// and a tenth of the interval at most when commits crowd), so a SIGKILL loses at most the
/// samples read in the last interval and those still held by their source; with `.powerLoss`
/// durability a commit is on the disk within `syncInterval` (5 s by default), so a power cut
/// loses at most that much more; `close()` and `flush()` lose nothing. The writer wakes only for work: an
/// idle store commits nothing and wakes only to purge (docs/store.md). A chunk whose checksum fails is never returned; it
/// becomes a `systemInitiated` deletion record.
public final class SensorStore: Sendable {
    /// What the store was opened with.
    public let configuration: StoreConfiguration
    private let clock: any SystemClock
    let timeline: SharedTimeline
    let registry = StreamRegistry()
    /// Internal (not private) so tests can hold its thread to make it fall behind.
    let writer: StoreWriter
    let readers: ReaderPool
    private let inbox: AppendInbox
    private let isClosed = Mutex(false)
    /// The staged-samples files handed out (`staging(for:capacity:)`), one per stream.
    private let staged = Mutex<[StreamID: StagedSamplesFile]>([:])

    /// Opens (or creates) the store in `configuration.directory`: migrates the catalog, seals
    /// pieces left by a crash, sets up the purge alarm. `timeline` must have adopted `clock`'s
    /// current boot. Write failures that happen later, off the caller's thread, are passed to
    /// `onWriteFailure` (on the writer thread) and rethrown by the next `flush()`. `onLoss` (on the
    /// writer thread) hears when new samples start being lost — dropped to keep the disk budget
    /// or by a failed write, each loss inside a `lowDiskSpace` or `systemInitiated` record — and
    /// when samples are written again.
    public init(
        configuration: StoreConfiguration, clock: any SystemClock, timeline: Timeline,
        onWriteFailure: @escaping @Sendable (any Error) -> Void = { _ in },
        onLoss: @escaping @Sendable (StoreLossEvent) -> Void = { _ in }
    ) throws {
        guard timeline.srNanoseconds(of: clock.now()) != nil else { throw StoreError.currentBootNotAdopted }
        self.configuration = configuration
        self.clock = clock
        self.timeline = SharedTimeline(timeline)
        self.readers = ReaderPool(path: configuration.databasePath)
        self.inbox = AppendInbox(
            maxPendingSamples: configuration.maxPendingSamples,
            commitInterval: CommitSchedule(interval: configuration.commitInterval).interval
        ) {
            DispatchTime.now().uptimeNanoseconds
        }
        self.writer = try StoreWriter(
            configuration: configuration, registry: registry, timeline: self.timeline, clock: clock, inbox: inbox,
            onFailure: onWriteFailure, onLoss: onLoss)
        let writer = self.writer
        do {
            try writer.thread.sync { try writer.start() }
        } catch {
            // Closed already: `deinit` must not ask the ended thread to close.
            isClosed.withLock { $0 = true }
            writer.thread.stop()
            throw error
        }
    }

    deinit {
        if !isClosed.withLock({ $0 }) { try? close() }
    }

    /// Bounds the read connections open at once (each holds descriptors); the daemon derives the
    /// number from its reader limits (docs/reliability.md, "Descriptors").
    public func limitReadConnections(to count: Int) { readers.limit(to: count) }

    /// Replaces the timeline (the daemon adopted a boot or moved the high-water mark).
    public func updateTimeline(_ timeline: Timeline) {
        self.timeline.withLock { $0 = timeline }
        writer.timelineReplaced()
    }

    /// SR nanoseconds now, from the injected clock and the timeline.
    public func now() throws -> Int64 {
        guard let now = timeline.withLock({ $0.srNanoseconds(of: clock.now()) }) else {
            throw StoreError.currentBootNotAdopted
        }
        return now
    }

    // MARK: Streams

    /// Registers a stream (or finds it: an equal descriptor gives the same id). Waits for the
    /// writer thread.
    public func register(_ descriptor: StreamDescriptor) throws -> StreamID {
        if let id = registry.id(forKey: descriptor.canonicalJSON()) { return id }
        return try onWriter { try $0.register(descriptor) }
    }

    /// Every registered stream.
    public var streams: [RegisteredStream] { registry.all }

    /// The descriptor of a stream.
    public func descriptor(of stream: StreamID) -> StreamDescriptor? { registry.descriptor(stream) }

    /// Which of a stream's columns hold floats; nil when none does or the stream is unknown. Read
    /// in place, for a batch's conversion at every hand-over: copying the whole descriptor out
    /// retains and releases each of its strings and arrays, cold at every hand-over.
    public func floatColumns(of stream: StreamID) -> [Bool]? {
        registry.withDescriptor(stream) { descriptor -> [Bool]? in
            let columns = descriptor.schema.columns
            return columns.contains(where: \.isFloat) ? columns.map(\.isFloat) : nil
        } ?? nil
    }

    // MARK: Writing

    /// Hands samples to the store. Returns at once: the batch is converted, buffered and committed
    /// on the writer thread. The batch's columns must match the stream's schema (a mismatch is a
    /// bug and traps). If the writer has fallen more than `maxPendingSamples` behind, the batch
    /// is dropped and recorded as a `systemInitiated` gap.
    public func append(_ batch: SampleBatch, to stream: StreamID) {
        guard !batch.isEmpty else { return }
        // Checked against the registered schema in place (no copy of the descriptor per batch).
        let mismatch = registry.withDescriptor(stream) { descriptor -> String? in
            guard batch.columns.count == descriptor.schema.columns.count else { return "batch columns differ from the schema" }
            for (values, column) in zip(batch.columns, descriptor.schema.columns) {
                switch (values, column) {
                case (.integers, .integer), (.floats, .float), (.integers, .instant): continue
                default: return "batch column kind differs from \(column.name)"
                }
            }
            return nil
        }
        switch mismatch {
        case nil: preconditionFailure("append to unregistered \(stream)")
        case let message??: preconditionFailure(message)
        case .some(nil): break
        }
        // Samples read less than a commit interval ago wait for their deadline: the first such
        // batch arms the writer's timer (`AppendInbox.push`). Due ones start a drain if none is
        // scheduled: one drain takes the whole burst (appends meanwhile find it scheduled). After
        // a pause, a plain `async` (no alarm to set). In a flood, a millisecond's grace, so the
        // writer does not wake per batch (`AppendInbox.DrainStart`).
        startDrain(inbox.push(batch, to: stream, readAgo: readAgo(batch), arm: writer.armDrain(at:)))
    }

    /// Runs `body`, whose appends (from any thread) are one hand-over: the writer is started or
    /// its timer armed once, after `body`, for all of them — as for one batch. A source that
    /// hands several streams' batches over at once (an IIO chip) wraps them in it, so they go
    /// into one commit for one wake-up.
    ///
    /// A hand-over already due is drained and committed on the caller's thread while the
    /// writer's thread sleeps (`WriterThread.runHereOrQueue`): the caller (a reading thread) is
    /// awake anyway, so the writer need not wake for it (docs/store.md, "When the writer wakes").
    public func handingOver(_ body: () -> Void) {
        inbox.hold()
        defer { startDrain(inbox.release(arm: writer.armDrain(at:)), here: true) }
        body()
    }

    private func startDrain(_ start: AppendInbox.DrainStart?, here: Bool = false) {
        let writer = self.writer
        switch start {
        case .now? where here: writer.thread.runHereOrQueue { writer.drain() }
        case .now?: writer.thread.async { writer.drain() }
        case .afterGrace?: writer.drainAfterGrace()
        case nil: break
        }
    }

    /// Nanoseconds since the batch's oldest sample was received, on the store's clock; `.max`
    /// (due at once) for another boot's batch. A receive time in the future counts as now.
    private func readAgo(_ batch: SampleBatch) -> UInt64 {
        let now = clock.now()
        guard batch.boot == now.boot, let oldest = batch.receiveTimes.min() else { return .max }
        return UInt64(max(0, now.nanoseconds.subtractingSaturating(oldest)))
    }

    /// Samples appended but not yet stored by the writer (it falls behind only when appends come
    /// faster than it seals; beyond `maxPendingSamples` batches are dropped as gaps).
    public var pendingSampleCount: Int { inbox.pendingSamples }

    /// Records an interval without data that the pipeline knows of: a sensor unplugged or a FIFO
    /// overflow (`systemInitiated`), no stakes (`noInterestedClients`). Times are SR nanoseconds.
    /// Returns at once.
    public func recordGap(sensor: SRSensor, device: String, from start: Int64, to end: Int64, reason: SRDeletionReason) {
        let writer = self.writer
        writer.thread.async { writer.record(sensor: sensor, device: device, start: start, end: end, reason: reason) }
    }

    /// `recordGap` with boot-clock instants (converted with the timeline; an unknown boot throws).
    public func recordGap(
        sensor: SRSensor, device: String, from start: BootInstant, to end: BootInstant, reason: SRDeletionReason
    ) throws {
        guard let from = timeline.withLock({ $0.srNanoseconds(of: start) }) else { throw StoreError.unknownBoot(start.boot) }
        guard let to = timeline.withLock({ $0.srNanoseconds(of: end) }) else { throw StoreError.unknownBoot(end.boot) }
        recordGap(sensor: sensor, device: device, from: from, to: to, reason: reason)
    }

    /// The stream's recording run ended on purpose (nobody wants its sensor). Until this is
    /// called, a stream that was appended to counts as recording: if the process dies or the
    /// power goes before `close()`, the next open records the span from its last committed
    /// sample to the restart as `systemInitiated` (docs/store.md, crash contract). Returns at once.
    public func recordingStopped(_ stream: StreamID) {
        let writer = self.writer
        writer.thread.async { writer.endRun(stream) }
    }

    /// The deletion records this open wrote for recording runs that a crash or power cut ended.
    public var crashLosses: [StoredDeletionRecord] {
        let writer = self.writer
        return writer.thread.sync { writer.crashLosses }
    }

    /// Commits everything appended so far (waits for the writer thread and an fsync); rethrows the
    /// first write failure since the previous flush.
    public func flush() throws {
        try onWriter { try $0.flush() }
    }

    /// Purges by window (`ageLimit`) and disk budget (`lowDiskSpace`) now. The writer also does
    /// this every `purgeInterval` on its own.
    @discardableResult
    public func purge() throws -> PurgeReport {
        try onWriter { try $0.purge() }
    }

    /// A participant's deletion: the samples of `sensor` on every device with sensor time in
    /// `(from, to]` are removed and their bytes overwritten, with a `userInitiated` record per
    /// device (docs/store.md, "Deletion by the participant"). Waits for the writer.
    public func erase(sensor: SRSensor, after from: Int64, through to: Int64) throws -> RangeErasure {
        try onWriter { try $0.erase(sensor: sensor, after: from, through: to) }
    }

    /// The store's size and the free space beside it.
    public func diskUsage() throws -> DiskUsage {
        try onWriter { try $0.diskUsage() }
    }

    /// Seals every open chunk, commits and checkpoints. Nothing appended before is lost. Further
    /// calls do nothing; appends after it are dropped and reported to `onWriteFailure`.
    public func close() throws {
        guard
            !isClosed.withLock({ closed in
                defer { closed = true }; return closed
            })
        else { return }
        let writer = self.writer
        defer { writer.thread.stop() }
        try writer.thread.sync { try writer.close() }
        readers.closeAll()
        // Staged samples not handed over before the close (a source that did not stop) stay
        // for the next open's replay; empty files go.
        for file in staged.withLock({ all in
            defer { all.removeAll() }
            return Array(all.values)
        }) where file.publishedCount == 0 {
            try? SystemCalls.unlink(file.mapping.path)
        }
    }

    /// A file mapping in the store's directory where a source mirrors the samples of `stream` it
    /// holds and has not handed over (docs/store.md, "Staged samples"), with room for `capacity`
    /// samples (at least 1, at most 2^20) of the current boot. One per stream: asking again gives
    /// the same one. Throws when the stream is unknown or the file cannot be made.
    public func staging(for stream: StreamID, capacity: Int) throws -> any SampleStaging {
        guard let columns = registry.withDescriptor(stream, { $0.schema.columns.count }) else {
            throw StoreError.unknownStream(stream)
        }
        guard columns <= StagedSamplesFile.maxColumns else {
            throw SystemError("staging \(stream): \(columns) columns, more than a staging file holds", errno: E2BIG)
        }
        let boot = clock.now().boot
        guard let anchor = timeline.withLock({ $0.anchors[boot] }) else { throw StoreError.unknownBoot(boot) }
        return try staged.withLock { all -> any SampleStaging in
            if let file = all[stream] { return file }
            let file = try StagedSamplesFile(
                directory: configuration.directory, stream: stream, boot: boot, anchor: anchor,
                capacity: min(max(capacity, 1), StagedSamplesFile.maxCapacity), columns: columns)
            all[stream] = file
            return file
        }
    }

    // MARK: Reading

    /// The samples of `sensor` on `device` with `from < time ≤ to` (SR ns), in time order,
    /// as a streaming cursor, with SensorKit's rules applied at the moment of the call:
    /// - a range that reaches into the hold (`to > now − hold`, hold > 0) yields nothing;
    /// - samples at or before `now − window` are not returned;
    /// - samples before `notBefore` are not returned (an app sees only data recorded after its
    ///   own first `startRecording`);
    /// - both rules apply to the receive time too: the hold to the later of sensor and receive
    ///   time, `notBefore` to the earlier (`SampleAdmission`).
    /// Samples still buffered (appended less than one commit interval ago) are not yet visible;
    /// those in the hand-over journal are: the call waits for the writer to fold them first
    /// (`foldJournal(reaching:)`), unless `foldingFirst` is false — for a caller that asked
    /// `whenFolded(reaching:_:)` before and must not wait for the writer.
    public func samples(
        sensor: SRSensor, device: String, from: Int64, to: Int64, notBefore: Int64 = .min, foldingFirst: Bool = true
    ) throws -> SampleCursor {
        let now = try now()
        let policy = configuration.retention(for: sensor)
        let streams = registry.streams(sensor: sensor, device: device)
        guard !streams.isEmpty,
            let visible = policy.visibleRange(from: from, to: to, notBefore: notBefore, now: now)
        else { return SampleCursor(empty: readers) }
        if foldingFirst { try foldJournal(reaching: visible.through) }
        let writer = self.writer
        let admission = policy.admission(notBefore: notBefore, now: now)
        return SampleCursor(
            pool: readers, streams: streams, after: visible.after, through: visible.through,
            admission: admission
        ) { id, stream, min, max in
            writer.thread.async { writer.dropCorruptChunk(id: id, stream: stream, minTime: min, maxTime: max) }
        }
    }

    /// Samples the hand-over journal holds are not in SQLite until the next fold (at most a sync
    /// interval away): a query whose range reaches them asks the writer to fold first. A study
    /// app's queries end a hold before now and never do.
    func foldJournal(reaching through: Int64) throws {
        guard journalHolds(reaching: through) else { return }
        let writer = self.writer
        try writer.thread.sync { try writer.foldJournal() }
    }

    /// Runs `ready` once the samples the store has taken in up to `through` (SR ns) can be read
    /// without waiting for its writer: at once when the hand-over journal holds none of them,
    /// else on the writer's thread once it has folded the journal (a fold that fails leaves them
    /// out of that read; the writer's next tick tries again). For readers on queues that must not
    /// block — a fetch, `health` — which then read with `foldingFirst: false`: a stalled writer
    /// stalls them no more than it stalls a study app's fetch (docs/reliability.md).
    public func whenFolded(reaching through: Int64, _ ready: @escaping @Sendable () -> Void) {
        guard journalHolds(reaching: through) else { return ready() }
        let writer = self.writer
        let queued = writer.thread.async {
            try? writer.foldJournal()
            ready()
        }
        if !queued { ready() }  // closed: nothing will be folded
    }

    /// Whether the hand-over journal holds samples at or before `through` not yet in SQLite.
    private func journalHolds(reaching through: Int64) -> Bool {
        let since = writer.unfoldedSince.load(ordering: .acquiring)
        return since != .max && through >= since
    }

    /// Deletion records of `sensor` on `device` that overlap `(from, to]` (SR ns), oldest first.
    /// The hold applies as for samples (a range reaching into it yields nothing); the window does
    /// not (records explain data that is gone, and are kept for one window longer than it).
    public func deletionRecords(sensor: SRSensor, device: String, from: Int64, to: Int64) throws -> [StoredDeletionRecord] {
        let now = try now()
        let policy = configuration.retention(for: sensor)
        if policy.hold > 0, to > now.subtractingSaturating(policy.hold) { return [] }
        let db = try readers.checkOut()
        defer { readers.checkIn(db) }
        let query = try db.prepare(
            """
            SELECT start_time, end_time, reason FROM deletion_records
            WHERE sensor = ? AND device = ? AND end_time > ? AND start_time <= ? ORDER BY start_time, id
            """)
        try query.bind(1, sensor.rawValue)
        try query.bind(2, device)
        try query.bind(3, from)
        try query.bind(4, to)
        var records: [StoredDeletionRecord] = []
        while try query.step() {
            records.append(
                StoredDeletionRecord(
                    sensor: sensor, device: device, start: query.int64(0), end: query.int64(1),
                    reason: SRDeletionReason(rawValue: query.int(2)) ?? .systemInitiated))
        }
        return records
    }

    // MARK: Internals

    /// Runs `body` on the writer thread and waits for it.
    @discardableResult
    func onWriter<T: Sendable>(_ body: @Sendable (StoreWriter) throws -> T) throws -> T {
        guard !isClosed.withLock({ $0 }) else { throw StoreError.closed }
        let writer = self.writer
        return try writer.thread.sync { () throws -> T in
            // Whatever `body` left uncommitted (a failure's owed records) is scheduled like an append.
            defer { writer.commitWhenDue() }
            return try body(writer)
        }
    }
}
