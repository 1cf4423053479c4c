import Dispatch
import Foundation
import SensorChunks
import SensorKitModel
import SensorSystem
import Synchronization

/// The store's single writer: owns the read-write connection, the open chunks, the commit and
/// purge deadlines, purge and eviction. Everything here runs on `thread`, a thread of its own
/// (`WriterThread`), so appends never wait for SQLite or the codec on the caller's thread. It
/// wakes only for work (docs/store.md, "When the writer wakes"): a drain when appended samples
/// fall due (their commit deadline, or at once for samples already due), a tick only while
/// something is uncommitted, a sync when unsynced commits come due, a purge every
/// `purgeInterval`.
///
/// `@unchecked Sendable`: every stored `var` is touched only on `thread`, which each entry point
/// asserts (`assertCurrent`); `thread` itself may be given jobs and alarms from any thread.
final class StoreWriter: @unchecked Sendable {
    let thread: WriterThread
    // Internal, not private, where the disk budget's extension (DiskBudget.swift) uses them.
    let configuration: StoreConfiguration
    let registry: StreamRegistry
    // Internal, not private, where the recovery and purge extensions (CrashRecovery.swift,
    // Purge.swift) use them.
    let timeline: SharedTimeline
    let clock: any SystemClock
    private let onFailure: @Sendable (any Error) -> Void
    /// Told when new samples start being lost (dropped for the budget or by a failed write) and
    /// when they are written again (`StoreLossEvent`).
    private let onLoss: @Sendable (StoreLossEvent) -> Void
    /// Samples lost since the last `onLoss`; whether the last report was a loss not yet over.
    var samplesLostUnreported = 0
    private var losing = false
    /// Samples written as pieces since the store opened (a loss is over once some are again).
    private var samplesWritten = 0
    /// Appended batches on their way here (`SensorStore.append`).
    private let inbox: AppendInbox

    private(set) var db: SQLiteDatabase?
    var open: [StreamID: OpenChunk] = [:]
    private var bootRows: [BootID: Int64] = [:]
    /// The boot of the last batch with its anchor and row: batches come from one boot for hours,
    /// so most appends skip the timeline's lock and two hash lookups. Not used once the timeline
    /// has been replaced since (a boot's anchor never changes, but a new timeline may not know
    /// the boot): `timeline` is the `timelineReplacements` it was looked up under.
    private var lastBoot: (boot: BootID, anchor: Int64, row: Int64, timeline: Int)?
    /// Times the timeline was replaced (`timelineReplaced`, any thread). A counter the next
    /// append reads rather than a job: the daemon replaces the timeline every 10 s, and a job
    /// would wake the writer for it, idle or not.
    private let timelineReplacements = Atomic<Int>(0)
    var encoder = ChunkEncoder()
    /// When the commit alarm is set: only while something is uncommitted and the last tick was
    /// less than a commit interval ago.
    private var schedule: CommitSchedule
    /// Which commits wait for the disk (`Durability.powerLoss`): a transaction is begun synced
    /// when the oldest unsynced commit is due, and the sync alarm, set while a commit is
    /// unsynced, syncs an idle writer at that deadline.
    private var syncSchedule: SyncSchedule
    /// Whether the open transaction was begun under `synchronous = FULL`.
    private var transactionSyncs = false
    /// The value the idle sync writes into the header's `user_version` (a write is what makes a
    /// commit, and so its `fdatasync`, happen); the schema's version lives in `schema_version`.
    private var syncMarks: Int32 = 0
    /// Nanoseconds between purges (the purge alarm is set again after each, whether or not data
    /// arrives: the window holds on an idle store too); nil: no purge on schedule.
    private var purgeEvery: UInt64?
    /// Commit ticks run since the store opened (tests count them).
    private(set) var ticks = 0
    /// Drains that stored something since the store opened (tests count them).
    private(set) var drains = 0
    /// The first failure since the last `flush()`, which rethrows it.
    private var pendingFailure: (any Error)?
    private var statements: Statements?
    /// Streams recording in this run whose `live_streams` row is written or in the open
    /// transaction, with the SR time of the run's first sample.
    private var liveSince: [StreamID: Int64] = [:]
    /// Whether a transaction of ours is open. SQLite may roll one back by itself (a full disk),
    /// so `isAutocommit` alone cannot tell a failure whether it undid anything.
    private var inTransaction = false
    /// Records of losses inserted in the open transaction (not those explaining a deletion in it)…
    private var recordsInTransaction: [LossRecord] = []
    /// …and records a failed transaction took with it, written by the next one that can be.
    private var recordsOwed: [LossRecord] = []
    /// Bytes a piece took per sample, last measured: what samples not yet written will need.
    private(set) var pieceBytesPerSample: Double = 16
    /// The newest record per source and reason, widened by the next one that overlaps or touches it.
    var coalescing = RecordCoalescing()
    /// Records inserted since the sources' record counts were last checked (`boundRecords`).
    var recordsSinceCount = 0
    /// The records `start` wrote for runs a crash ended (read by the daemon for its log).
    private(set) var crashLosses: [StoredDeletionRecord] = []
    /// The hand-over journal (docs/store.md, "The hand-over journal"); nil when configured off.
    var journal: HandOverJournal?
    /// The generation of the records appended now; `journal_folds` holds the last one folded.
    var journalGeneration: UInt64 = 1
    /// A participant's erasure runs: whatever cuts the journal meanwhile wipes it.
    var erasing = false
    /// The journal holds records of `journalGeneration`: the next SQLite commit folds them.
    private var journalHolds = false
    /// When the first record of `journalGeneration` was appended (monotonic ns).
    private var journalSince: UInt64?
    /// The journal holds only folded records, to be cut once a commit after them is on the disk.
    private var journalFolded = false
    /// The earliest sensor time (SR ns) the journal holds unfolded, `.max` when none: a reader
    /// whose range reaches it asks for a fold first (`foldJournal`). Any thread reads it.
    let unfoldedSince = Atomic<Int64>(.max)
    /// A journal this long is folded at the next tick whatever the sync interval says; one
    /// tick's records never take it past twice this.
    static let journalFoldBytes = 8 << 20

    private struct Statements {
        let insertChunk: SQLiteStatement
        let deleteChunk: SQLiteStatement
        let widenSpan: SQLiteStatement
        let insertRecord: SQLiteStatement
        let widenRecord: SQLiteStatement
        let markLive: SQLiteStatement
        let pageCounts: SQLiteStatement
    }

    /// A deletion record on its way to the catalog.
    private struct LossRecord {
        var sensor: SRSensor
        var device: String
        var start: Int64
        var end: Int64
        var reason: SRDeletionReason
    }

    init(
        configuration: StoreConfiguration, registry: StreamRegistry, timeline: SharedTimeline,
        clock: any SystemClock, inbox: AppendInbox, onFailure: @escaping @Sendable (any Error) -> Void,
        onLoss: @escaping @Sendable (StoreLossEvent) -> Void = { _ in }
    ) throws(SystemError) {
        self.thread = try WriterThread()
        self.onLoss = onLoss
        self.inbox = inbox
        self.clock = clock
        self.configuration = configuration
        self.registry = registry
        self.timeline = timeline
        self.onFailure = onFailure
        self.schedule = CommitSchedule(interval: configuration.commitInterval)
        self.syncSchedule = SyncSchedule(
            interval: configuration.syncInterval, commitInterval: configuration.commitInterval)
        try thread.start(name: "store writer") { [weak self] alarm in self?.rang(alarm) }
    }

    /// Ends the thread (`SensorStore.close` does; this covers a store never closed).
    deinit { thread.stop() }

    /// An alarm's deadline has passed.
    private func rang(_ alarm: WriterThread.Alarm) {
        thread.assertCurrent()
        switch alarm {
        case .drain: if inbox.deadlineReached() { drain() }
        case .grace: drain()
        case .commit: commitAlarmRang()
        case .sync: syncAlarmRang()
        case .purge:
            purgeOnSchedule()
            if let every = purgeEvery { thread.set(.purge, at: now() &+ every, slack: Self.purgeSlack(every)) }
        }
    }

    /// Monotonic nanoseconds, the clock of the writer's deadlines and of `AppendInbox`'s.
    private func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// A purge a few seconds late changes nothing: it may share another wake-up.
    private static func purgeSlack(_ every: UInt64) -> UInt64 { min(every / 10, 5_000_000_000) }

    /// The slack of the drain and commit alarms: what a timer's leeway allowed before.
    private static let commitSlack: UInt64 = 20_000_000

    // MARK: Opening and closing

    /// Opens the database, migrates it, loads the streams, seals the pieces a crash left behind
    /// and sets up the commit and purge timers.
    func start() throws {
        thread.assertCurrent()
        try SystemFiles.makeDirectory(configuration.directory, mode: 0o700)
        // Consent, stakes and held samples: private to the store's user. SQLite gives the -wal and
        // -shm files the database file's mode, so creating it 0600 covers all three.
        try SystemFiles.createIfMissing(configuration.databasePath, mode: 0o600)
        let db = try SQLiteDatabase(path: configuration.databasePath)
        // auto_vacuum only takes effect before the first table exists; harmless afterwards.
        try db.execute("PRAGMA auto_vacuum = INCREMENTAL")
        try db.execute("PRAGMA journal_mode = WAL")
        // Commits reach the operating system at once; the disk is made to keep them by the
        // transactions `syncSchedule` begins under FULL (`Durability.powerLoss`).
        try db.execute("PRAGMA synchronous = NORMAL")
        try db.execute("PRAGMA journal_size_limit = 67108864")
        try db.execute("PRAGMA foreign_keys = ON")
        // Debian's SQLite zeroes every freed page (secure_delete on), so an eviction would need
        // as much free space in the WAL as it frees: on a full disk it could not run. FAST zeroes
        // what shares a page with live rows; freed pages go back to the file system or are
        // overwritten by the next chunks (docs/store.md, disk budget).
        try db.execute("PRAGMA secure_delete = FAST")
        try CatalogSchema.migrate(db)
        self.db = db
        statements = Statements(
            insertChunk: try db.prepare(
                "INSERT INTO chunks (stream, boot, tier, min_time, max_time, sample_count, byte_count, bytes, min_receive, max_receive) VALUES (?,?,?,?,?,?,?,?,?,?)",
                persistent: true),
            deleteChunk: try db.prepare("DELETE FROM chunks WHERE id = ?", persistent: true),
            widenSpan: try db.prepare(
                "UPDATE streams SET max_chunk_span = ?2 WHERE id = ?1 AND max_chunk_span < ?2", persistent: true),
            insertRecord: try db.prepare(
                "INSERT INTO deletion_records (sensor, device, start_time, end_time, reason) VALUES (?,?,?,?,?)",
                persistent: true),
            widenRecord: try db.prepare(
                "UPDATE deletion_records SET start_time = ?2, end_time = ?3 WHERE id = ?1", persistent: true),
            markLive: try db.prepare("INSERT OR IGNORE INTO live_streams (stream, since) VALUES (?, ?)", persistent: true),
            pageCounts: try db.prepare(DiskUsage.pageCountsSQL, persistent: true))

        let streams = try db.prepare("SELECT id, descriptor FROM streams")
        while try streams.step() {
            let key = streams.string(1)
            guard let descriptor = try? StreamDescriptor.fromJSON(key) else {
                throw StoreError.unreadableCatalog("stream \(streams.int64(0))")
            }
            registry.add(StreamID(rawValue: streams.int64(0)), descriptor, key: key)
        }
        if configuration.handOverJournal {
            let journal = try HandOverJournal(path: configuration.journalPath)
            self.journal = journal
            try replayJournal(journal)
        } else if (try? SystemCalls.stat(configuration.journalPath)) != nil {
            // Switched off after a crash: what the journal holds is still replayed, and the file
            // goes once the replay is in the database file on the disk.
            let journal = try HandOverJournal(path: configuration.journalPath)
            try replayJournal(journal)
            journal.close()
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            try SystemCalls.unlink(configuration.journalPath)
        }
        try replayStaged()
        try recoverPieces()
        crashLosses = try recordRunsEndedByCrash()

        // The commit and sync alarms are set when a tick or a sync is owed.
        if configuration.purgeInterval > 0, configuration.purgeInterval.isFinite {
            let every = UInt64(max(min(configuration.purgeInterval, 1e9), 0.001) * 1e9)
            purgeEvery = every
            thread.set(.purge, at: now() &+ every, slack: Self.purgeSlack(every))
        }
    }

    /// Seals every open chunk, commits, checkpoints the WAL into the database and closes it.
    /// Nothing appended before `close` is lost.
    func close() throws {
        thread.assertCurrent()
        purgeEvery = nil
        for alarm in WriterThread.Alarm.allCases { thread.cancel(alarm) }
        guard let db else { return }
        storeInbox()
        defer {
            statements = nil
            self.db = nil
        }
        for stream in open.keys.sorted() {
            guard var chunk = open.removeValue(forKey: stream), !chunk.isEmpty else { continue }
            try seal(&chunk, count: chunk.count)
        }
        // Everything is sealed: no run ends in a loss.
        try begin()
        try db.execute("DELETE FROM live_streams")
        liveSince.removeAll()
        try writeOwedRecords()
        try commit()
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        // Checkpointed: every record the journal held is in the database file, on the disk.
        cutFoldedJournal(synced: true)
        if let failure = pendingFailure {
            pendingFailure = nil
            throw failure
        }
    }

    // MARK: Streams

    func register(_ descriptor: StreamDescriptor) throws -> StreamID {
        thread.assertCurrent()
        let key = descriptor.canonicalJSON()
        if let id = registry.id(forKey: key) { return id }
        let db = try database()
        try begin()
        let device = try db.prepare("INSERT OR IGNORE INTO devices (identifier) VALUES (?)")
        try device.bind(1, descriptor.device)
        try device.run()
        let insert = try db.prepare(
            "INSERT INTO streams (descriptor, sensor, device, created) SELECT ?, ?, id, ? FROM devices WHERE identifier = ?")
        try insert.bind(1, key)
        try insert.bind(2, descriptor.sensor.rawValue)
        let now = clock.now()
        if let created = timeline.withLock({ $0.srNanoseconds(of: now) }) {
            try insert.bind(3, created)
        } else {
            try insert.bindNull(3)
        }
        try insert.bind(4, descriptor.device)
        try insert.run()
        let id = StreamID(rawValue: db.lastInsertRowID)
        try commit()
        registry.add(id, descriptor.normalized, key: key)
        return id
    }

    // MARK: Appending

    /// Stores (or records as dropped) what the inbox holds, then queues the next drain behind
    /// whatever else is waiting for the writer; the drain that finds the inbox empty ends. A tick
    /// due at once is queued behind the next drain, so batches appended meanwhile (the other
    /// streams of the same delivery) go into the same commit.
    func drain() {
        thread.assertCurrent()
        var (entries, due) = inbox.takeOrFinish()
        guard !entries.isEmpty else { return }
        drains += 1
        store(&entries)
        thread.async { [self] in drain() }
        commitWhenDue(queued: true, dueBy: due)
    }

    /// Sets the drain alarm for `deadline` (monotonic ns). Any thread: called by an append, under
    /// the inbox's lock; it wakes nobody before the deadline.
    func armDrain(at deadline: UInt64) {
        thread.set(.drain, at: deadline, slack: Self.commitSlack)
    }

    /// Drains after a flood's grace (`AppendInbox.DrainStart.afterGrace`). Any thread.
    func drainAfterGrace() {
        thread.set(.grace, at: now() &+ AppendInbox.floodWindow)
    }

    /// Stores what was appended before a flush or close began.
    func storeInbox() {
        var entries = inbox.take()
        if !entries.isEmpty { store(&entries) }
    }

    /// Stores the entries in order and hands the emptied array and buffers back to the inbox.
    private func store(_ taken: inout [AppendInbox.Entry?]) {
        var stored = 0
        var buffers: [ChunkSamples] = []
        buffers.reserveCapacity(taken.count)
        taken.withUnsafeMutableBufferPointer { entries in
            for index in entries.indices {
                let entry = entries.moveElement(from: index)
                entries.initializeElement(at: index, to: nil)
                switch consume entry {
                case .samples(let stream, let boot, let samples, let continued)?:
                    append(samples, boot: boot, to: stream, runEnds: !continued)
                    stored += samples.count
                    buffers.append(samples)
                case .dropped(let stream, let boot, let first, let last)?:
                    recordDropped(stream, boot: boot, first: first, last: last)
                case nil:
                    break
                }
            }
        }
        inbox.recycle(&taken, buffers: &buffers)
        inbox.finished(samples: stored)
    }

    /// Takes staged samples (boot-clock times of `boot`) into the stream's open chunk; seals the
    /// chunk when it is full. The chunk's time span is checked only where a run of staged
    /// segments ends (`runEnds`), so a run is cut into chunks exactly as one batch of it would be.
    func append(_ samples: ChunkSamples, boot: BootID, to stream: StreamID, runEnds: Bool = true) {
        thread.assertCurrent()
        guard db != nil else { return fail(StoreError.closed) }
        do {
            let anchor: Int64, bootRow: Int64
            let replacements = timelineReplacements.load(ordering: .acquiring)
            if let last = lastBoot, last.boot == boot, last.timeline == replacements {
                (anchor, bootRow) = (last.anchor, last.row)
            } else {
                guard let known = timeline.withLock({ $0.anchors[boot] }) else {
                    return fail(StoreError.unknownBoot(boot))
                }
                (anchor, bootRow) = (known, try self.bootRow(boot, anchor: known))
                lastBoot = (boot, anchor, bootRow, replacements)
            }
            // Taken out of the dictionary while mutated, so appending does not copy its arrays.
            guard var chunk = try open.removeValue(forKey: stream) ?? newChunk(stream, bootRow: bootRow) else {
                return fail(StoreError.unknownStream(stream))
            }
            if chunk.bootRow != bootRow {
                if !chunk.isEmpty { try seal(&chunk, count: chunk.count) }
                chunk.bootRow = bootRow
            }
            // The same chunk boundaries as appending the whole batch and then sealing full
            // chunks off its front, but each full chunk is sealed as soon as it is complete and
            // then holds nothing: a burst of a million samples is not shifted down the open
            // chunk's arrays once per sealed chunk (quadratic in the burst).
            let maxSamples = configuration.chunkMaxSamples
            var next = 0
            while chunk.count < maxSamples, chunk.count + (samples.count - next) >= maxSamples {
                let end = next + (maxSamples - chunk.count)
                chunk.append(samples, range: next..<end, shift: anchor)
                next = end
                try seal(&chunk, count: chunk.count)
            }
            chunk.append(samples, range: next..<samples.count, shift: anchor)
            if liveSince[stream] == nil, let first = samples.times.first { try markLive(stream, since: anchor &+ first) }
            while chunk.count >= maxSamples {
                try seal(&chunk, count: maxSamples)
            }
            if runEnds, !chunk.isEmpty, chunk.maxTime.subtractingSaturating(chunk.minTime) >= configuration.chunkMaxDuration {
                try seal(&chunk, count: chunk.count)
            }
            open[stream] = chunk
        } catch {
            fail(error)
        }
    }

    /// An empty open chunk for a registered stream; nil for an unknown one.
    private func newChunk(_ stream: StreamID, bootRow: Int64) throws -> OpenChunk? {
        guard let descriptor = registry.descriptor(stream) else { return nil }
        return OpenChunk(stream: stream, roles: descriptor.columnRoles, instants: descriptor.instantColumns, bootRow: bootRow)
    }

    /// The timeline was replaced: the next append looks its boot up in it again. Any thread,
    /// after the replacement.
    func timelineReplaced() {
        timelineReplacements.add(1, ordering: .releasing)
    }

    /// Records a batch the store refused to buffer (the writer fell too far behind): its first
    /// and last sensor times, boot clock of `boot`.
    func recordDropped(_ stream: StreamID, boot: BootID, first: Int64, last: Int64) {
        thread.assertCurrent()
        guard let descriptor = registry.descriptor(stream), let anchor = timeline.withLock({ $0.anchors[boot] }) else { return }
        // Committed with the drain's samples (the drain consults the schedule).
        do {
            try insertRecord(
                sensor: descriptor.sensor, device: descriptor.device, start: anchor &+ first,
                end: anchor &+ last, reason: .systemInitiated)
        } catch {
            fail(error)
        }
    }

    // MARK: Commit schedule

    /// Whether a tick would have anything to do: an open transaction, samples not yet in a
    /// piece, or records a failed write owes.
    private var hasUncommittedWork: Bool {
        guard let db else { return false }
        return !db.isAutocommit || !recordsOwed.isEmpty || open.values.contains { $0.hasUncommittedSamples }
    }

    /// Ticks, or arms the commit timer, when something is uncommitted and no tick is owed yet
    /// (`CommitSchedule`). Every entry point that can leave something uncommitted ends with it
    /// (those the store waits for, through `SensorStore.onWriter`). `queued`: a tick due at once
    /// goes behind what is already queued instead of running here. `dueBy`: the commit deadline of
    /// the samples just stored (monotonic ns), which may call for a tick sooner than one owed.
    func commitWhenDue(queued: Bool = false, dueBy: UInt64? = nil) {
        thread.assertCurrent()
        guard schedule.owed == nil || dueBy != nil, hasUncommittedWork else { return }
        switch schedule.uncommitted(at: now(), dueBy: dueBy ?? .max) {
        case .tickNow:
            if queued {
                thread.async { [self] in tick() }
            } else {
                tick()
            }
        case .arm(let deadline):
            thread.set(.commit, at: deadline, slack: Self.commitSlack)
        case .wait:
            break
        }
    }

    private func commitAlarmRang() {
        thread.assertCurrent()
        schedule.fired()
        if hasUncommittedWork { tick() }
    }

    /// Writes owed records, keeps the budget, commits pieces of every open chunk. If something is
    /// still uncommitted afterwards (a failed write owes records), the next tick is armed a
    /// commit interval later: the writer keeps trying while the disk is full.
    private func tick() {
        thread.assertCurrent()
        guard db != nil else { return }
        // The next tick is due an interval after this one starts, not after its commit ends:
        // what is stored from now on waits at most an interval plus a commit, as the contract says.
        let started = now()
        let written = samplesWritten
        let committed = appendToJournal() || writeAndCommit()
        reportLoss(wroteSamples: committed && samplesWritten > written)
        ticks += 1
        schedule.ticked(at: started)
        // A tick run before the alarm set for it (samples due at once) leaves it nothing to do.
        thread.cancel(.commit)
        commitWhenDue(queued: true)
    }

    /// Tells the owner that samples were lost since the last report, or that samples are written
    /// again after a loss (once, not at every tick).
    private func reportLoss(wroteSamples: Bool) {
        if samplesLostUnreported > 0 {
            onLoss(.losing(samples: samplesLostUnreported))
            samplesLostUnreported = 0
            losing = true
        } else if losing, wroteSamples {
            losing = false
            onLoss(.recovered)
        }
    }

    /// Makes everything appended so far durable; rethrows the first failure since the last flush.
    func flush() throws {
        thread.assertCurrent()
        guard db != nil else { throw StoreError.closed }
        storeInbox()
        let written = samplesWritten
        let committed = writeAndCommit()
        // Durable means on the disk, not only handed to the operating system.
        if committed, configuration.durability == .powerLoss, syncSchedule.deadline != nil { syncIdle() }
        reportLoss(wroteSamples: committed && samplesWritten > written)
        if let failure = pendingFailure {
            pendingFailure = nil
            throw failure
        }
    }

    /// Writes what waits — owed deletion records, the budget's evictions, pieces — and commits;
    /// false when that failed (`fail` has it).
    private func writeAndCommit() -> Bool {
        do {
            try writeOwedRecords()
            try keepBudget()
            try writePieces()
            try commit()
            return true
        } catch {
            fail(error)
            return false
        }
    }

    private func writePieces() throws {
        for stream in open.keys.sorted() where open[stream]?.hasUnwrittenSamples == true {
            guard var chunk = open.removeValue(forKey: stream) else { continue }
            defer { open[stream] = chunk }
            try writePiece(&chunk, through: chunk.count)
        }
    }

    /// Commits samples `durableCount..<end` as a tier-0 piece.
    private func writePiece(_ chunk: inout OpenChunk, through end: Int) throws {
        let range = chunk.durableCount..<end
        let bytes = encoder.encode(chunk.samples, range: range, roles: chunk.roles, effort: .fast)
        let id = try insertChunk(
            stream: chunk.stream, bootRow: chunk.bootRow, tier: 0, samples: chunk.samples,
            range: range, bytes: bytes)
        chunk.pieceIDs.append(id)
        chunk.durableCount = end
        chunk.journaledCount = max(chunk.journaledCount, end)
        samplesWritten += range.count
        if !range.isEmpty { pieceBytesPerSample = Double(bytes.count) / Double(range.count) }
    }

    /// Seals the first `count` samples into a tier-1 chunk, replacing the pieces; samples that
    /// were durable beyond `count` are written again as a piece of the remainder.
    func seal(_ chunk: inout OpenChunk, count: Int) throws {
        let bytes = encoder.encode(chunk.samples, range: 0..<count, roles: chunk.roles, effort: .best)
        // The open chunk keeps its time bounds: a whole-chunk seal (the usual one) needs no scan.
        try insertChunk(
            stream: chunk.stream, bootRow: chunk.bootRow, tier: 1, samples: chunk.samples, range: 0..<count,
            bytes: bytes, bounds: count == chunk.count ? (chunk.minTime, chunk.maxTime) : nil)
        for id in chunk.pieceIDs { try deleteChunk(id) }
        let durableRemainder = chunk.durableCount - count
        chunk.removeSealedPrefix(count)
        if durableRemainder > 0 { try writePiece(&chunk, through: durableRemainder) }
    }

    // MARK: Gaps and corruption

    /// Records an interval without data (sensor unplugged, FIFO overflow, no stakes).
    func record(sensor: SRSensor, device: String, start: Int64, end: Int64, reason: SRDeletionReason) {
        thread.assertCurrent()
        do {
            try insertRecord(sensor: sensor, device: device, start: start, end: end, reason: reason)
        } catch {
            fail(error)
        }
        commitWhenDue()
    }

    /// A query found a chunk whose checksum or structure is wrong: it is deleted and its interval
    /// becomes a `systemInitiated` deletion record.
    func dropCorruptChunk(id: Int64, stream: StreamID, minTime: Int64, maxTime: Int64) {
        thread.assertCurrent()
        guard let descriptor = registry.descriptor(stream), db != nil else { return }
        defer { commitWhenDue() }
        do {
            try deleteChunk(id)
            guard try database().changes > 0 else { return }  // already dropped by another query
            try insertRecord(
                sensor: descriptor.sensor, device: descriptor.device, start: minTime, end: maxTime,
                reason: .systemInitiated, explainsDeletion: true)
            for key in open.keys { open[key]?.pieceIDs.removeAll { $0 == id } }
            try commit()
        } catch {
            fail(error)
        }
    }

    /// A stream's run ended on purpose (nobody wants its sensor): what was appended is written
    /// and its `live_streams` row goes in the same commit, so a crash later does not count the
    /// time since as lost.
    func endRun(_ stream: StreamID) {
        thread.assertCurrent()
        guard let db else { return }
        defer { commitWhenDue() }
        // Batches appended before the stop may still wait in the inbox: they are part of the run.
        storeInbox()
        guard liveSince[stream] != nil else { return }
        do {
            try writeOwedRecords()
            try keepBudget()
            try writePieces()
            try begin()
            try db.execute("DELETE FROM live_streams WHERE stream = \(stream.rawValue)")
            liveSince[stream] = nil
            try commit()
        } catch {
            fail(error)
        }
    }

    // MARK: Catalog access for the study registry

    /// Runs `body` with the writer's connection in a transaction of its own (pending sample
    /// writes are committed first, so a failing body rolls back only its own statements).
    func withTransaction<T>(_ body: (SQLiteDatabase) throws -> T) throws -> T {
        thread.assertCurrent()
        let db = try database()
        do {
            try commit()
        } catch {
            fail(error)
            throw error
        }
        return try db.transaction { try body(db) }
    }

    // MARK: SQL

    /// What the store occupies and the file system has left (`DiskUsage`), with the kept statement.
    func measureDisk() throws -> DiskUsage {
        guard let statements else { throw StoreError.closed }
        return try DiskUsage.measure(try database(), pageCounts: statements.pageCounts, directory: configuration.directory)
    }

    func database() throws -> SQLiteDatabase {
        guard let db else { throw StoreError.closed }
        return db
    }

    func begin() throws {
        let db = try database()
        if db.isAutocommit {
            let syncs =
                configuration.durability == .powerLoss
                && syncSchedule.syncs(beginningAt: now())
            // SQLite refuses to change the level inside a transaction: it is set before.
            if syncs != transactionSyncs {
                try db.execute(syncs ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
                transactionSyncs = syncs
            }
            try db.execute("BEGIN IMMEDIATE")
            inTransaction = true
        }
    }

    /// Commits the open transaction. While the journal holds records, every commit is a fold —
    /// one is begun if none is open: the samples they hold go into it as pieces, with the
    /// generation marked folded.
    func commit() throws {
        guard let db else { return }
        let folds = journalHolds
        if folds {
            try begin()
            try writePieces()
            try db.execute("DELETE FROM journal_folds")
            try db.execute("INSERT INTO journal_folds (generation) VALUES (\(Int64(bitPattern: journalGeneration)))")
        }
        guard !db.isAutocommit else { return }
        try db.execute("COMMIT")
        inTransaction = false
        recordsInTransaction.removeAll()
        if folds {
            journalGeneration &+= 1
            journalHolds = false
            journalSince = nil
            journalFolded = true
            unfoldedSince.store(.max, ordering: .releasing)
        }
        committed(synced: transactionSyncs)
        cutFoldedJournal(synced: transactionSyncs)
    }

    // MARK: Syncing

    /// Books a commit; an unsynced one sets the sync alarm for its deadline, or — when the
    /// deadline has already come (a transaction that stayed open past it) — syncs at once.
    private func committed(synced: Bool) {
        guard configuration.durability == .powerLoss else { return }
        let instant = now()
        syncSchedule.committed(at: instant, synced: synced)
        guard let deadline = syncSchedule.deadline else {
            // Everything is synced: an alarm set for an earlier commit would wake the writer for nothing.
            return thread.cancel(.sync)
        }
        if syncSchedule.idleSyncDue(at: instant) {
            syncIdle()
        } else if !synced {
            // The slack lets the alarm share another wake-up; the power-cut bound grows by at
            // most that much.
            thread.set(.sync, at: deadline, slack: min(syncSchedule.interval / 20, 250_000_000))
        }
    }

    private func syncAlarmRang() {
        thread.assertCurrent()
        guard let db, db.isAutocommit else { return }  // the open transaction's commit books it
        if syncSchedule.idleSyncDue(at: now()) { syncIdle() }
    }

    /// Makes every commit so far durable with a transaction of its own: FULL syncs the WAL,
    /// which holds the unsynced commits before it too.
    private func syncIdle() {
        guard let db, db.isAutocommit else { return }
        do {
            if !transactionSyncs {
                try db.execute("PRAGMA synchronous = FULL")
                transactionSyncs = true
            }
            syncMarks = syncMarks == .max ? 1 : syncMarks + 1
            if journalHolds {
                // The fold is the synced commit, and the budget is kept as at a tick's commit.
                try keepBudget()
                try commit()
                return
            }
            try db.execute("BEGIN IMMEDIATE")
            try db.execute("PRAGMA user_version = \(syncMarks)")
            try db.execute("COMMIT")
            syncSchedule.committed(at: now(), synced: true)
            cutFoldedJournal(synced: true)
        } catch {
            if !db.isAutocommit { try? db.execute("ROLLBACK") }
            fail(error)
        }
    }

    // MARK: The hand-over journal

    /// Makes the uncommitted samples crash-safe with one append to the journal instead of a
    /// SQLite transaction (docs/store.md, "The hand-over journal"). False when the tick must
    /// commit to SQLite instead — a fold: something besides samples is uncommitted, a sync is
    /// due (the fold is then the synced commit), the journal is long or old, or it cannot be
    /// written.
    private func appendToJournal() -> Bool {
        guard let journal, let db, db.isAutocommit, recordsOwed.isEmpty, journal.size < Self.journalFoldBytes else {
            return false
        }
        let now = now()
        switch configuration.durability {
        case .powerLoss:
            if syncSchedule.syncs(beginningAt: now) { return false }
        case .processCrash:
            if let since = journalSince, now &- since >= syncSchedule.interval { return false }
        }
        var bytes: [UInt8] = []
        var ends: [(stream: StreamID, end: Int)] = []
        var earliest = Int64.max
        for stream in open.keys.sorted() {
            guard let chunk = open[stream], chunk.hasUncommittedSamples else { continue }
            let range = max(chunk.journaledCount, chunk.durableCount)..<chunk.count
            HandOverJournal.encode(
                .init(
                    generation: journalGeneration, stream: stream.rawValue, bootRow: chunk.bootRow,
                    count: Int64(range.count), bytes: HandOverJournal.payload(chunk.samples, range: range)),
                into: &bytes)
            ends.append((stream, chunk.count))
            earliest = min(earliest, chunk.samples.timeBounds(range).min)
        }
        guard !ends.isEmpty else { return true }
        // A backlog's worth (a writer that fell behind) goes to SQLite: the journal stays short.
        guard journal.size + bytes.count <= 2 * Self.journalFoldBytes else { return false }
        do {
            try journal.append(bytes)
        } catch {
            // SQLite's path reports a full disk or a failing device, and keeps the budget.
            return false
        }
        for (stream, end) in ends { open[stream]?.journaledCount = end }
        journalHolds = true
        if journalSince == nil { journalSince = now }
        if earliest < unfoldedSince.load(ordering: .relaxed) { unfoldedSince.store(earliest, ordering: .releasing) }
        // Crash-safe like a commit, and like an unsynced commit owed to the disk within the sync
        // interval: the sync schedule sets the alarm whose sync is the fold.
        committed(synced: false)
        return true
    }

    /// Folds what the journal holds into SQLite now (a reader wants samples it holds).
    func foldJournal() throws {
        thread.assertCurrent()
        try commit()
    }

    /// Empties a journal whose records are all folded, once the fold is on the disk (or the
    /// store promises only to survive a killed process): a power cut could otherwise take the
    /// fold and leave no journal to replay.
    func cutFoldedJournal(synced: Bool, wiping: Bool = false) {
        guard let journal, journalFolded, !journalHolds, synced || configuration.durability == .processCrash else { return }
        do {
            try journal.removeAll(wiping: wiping || erasing)
            journalFolded = false
        } catch {
            // Folded records are skipped at replay; the next synced commit tries again.
        }
    }

    /// Inserts the journal's records of generations later than the last fold as pieces, before
    /// crash recovery seals the pieces and records what the crash took (docs/store.md,
    /// crash contract). A record of a stream the catalog does not know, or whose samples do not
    /// decode to its schema, is left out: the span it covered is in the crash's deletion record.
    func replayJournal(_ journal: HandOverJournal) throws {
        let db = try database()
        let records = try journal.recover()
        let folded = UInt64(bitPattern: try db.scalar("SELECT max(generation) FROM journal_folds") ?? 0)
        let unfolded = records.filter { $0.generation > folded }
        journalGeneration = max(folded, records.map(\.generation).max() ?? 0) &+ 1
        guard !unfolded.isEmpty else {
            if !records.isEmpty { try journal.removeAll() }
            return
        }
        for record in unfolded {
            guard let descriptor = registry.descriptor(StreamID(rawValue: record.stream)),
                let samples = HandOverJournal.samples(
                    record.bytes, count: Int(clamping: record.count), columnCount: descriptor.schema.columns.count)
            else { continue }
            guard try db.scalar("SELECT count(*) FROM boots WHERE id = \(record.bootRow)") == 1 else { continue }
            let all = 0..<samples.count
            try insertPiece(
                stream: StreamID(rawValue: record.stream), bootRow: record.bootRow, count: samples.count,
                bounds: samples.timeBounds(all), receives: samples.receiveBounds(all),
                bytes: encoder.encode(samples, range: all, roles: descriptor.columnRoles, effort: .fast))
        }
        try db.execute("DELETE FROM journal_folds")
        try db.execute("INSERT INTO journal_folds (generation) VALUES (\(Int64(bitPattern: journalGeneration &- 1)))")
        try commit()
        journalFolded = true
    }

    @discardableResult
    func insertChunk(
        stream: StreamID, bootRow: Int64, tier: Int64, samples: ChunkSamples, range: Range<Int>, bytes: [UInt8],
        bounds known: (min: Int64, max: Int64)? = nil
    ) throws -> Int64 {
        try insertChunk(
            stream: stream, bootRow: bootRow, tier: tier, count: range.count, bounds: known ?? samples.timeBounds(range),
            receives: samples.receiveBounds(range), bytes: bytes)
    }

    /// Inserts a tier-0 piece whose bounds are known (a journal record's).
    @discardableResult
    func insertPiece(
        stream: StreamID, bootRow: Int64, count: Int, bounds: (min: Int64, max: Int64), receives: (min: Int64, max: Int64),
        bytes: [UInt8]
    ) throws -> Int64 {
        try insertChunk(stream: stream, bootRow: bootRow, tier: 0, count: count, bounds: bounds, receives: receives, bytes: bytes)
    }

    private func insertChunk(
        stream: StreamID, bootRow: Int64, tier: Int64, count: Int, bounds: (min: Int64, max: Int64),
        receives: (min: Int64, max: Int64), bytes: [UInt8]
    ) throws -> Int64 {
        guard let statements else { throw StoreError.closed }
        try begin()
        let insert = statements.insertChunk
        insert.reset()
        try insert.bind([stream.rawValue, bootRow, tier, bounds.min, bounds.max, Int64(count), Int64(bytes.count)])
        try insert.bind(8, blob: bytes)
        try insert.bind(9, receives.min)
        try insert.bind(10, receives.max)
        try insert.run()
        let id = try database().lastInsertRowID
        let widen = statements.widenSpan
        widen.reset()
        try widen.bind([stream.rawValue, bounds.max.subtractingSaturating(bounds.min)])
        try widen.run()
        return id
    }

    func deleteChunk(_ id: Int64) throws {
        guard let statements else { throw StoreError.closed }
        try begin()
        statements.deleteChunk.reset()
        try statements.deleteChunk.bind(1, id)
        try statements.deleteChunk.run()
    }

    /// Writes a deletion record, or widens the source's newest record of the same reason when the
    /// two overlap or touch (`RecordCoalescing`). `explainsDeletion`: the record explains chunks
    /// deleted in the same transaction (eviction, purge, a corrupt chunk), so a rollback undoes
    /// the deletion with it and the record is not owed — owing it would claim the deletion of
    /// samples the rollback kept. Other records explain samples lost whatever happens to the
    /// transaction, and a rollback leaves them owed.
    func insertRecord(
        sensor: SRSensor, device: String, start: Int64, end: Int64, reason: SRDeletionReason,
        explainsDeletion: Bool = false
    ) throws {
        guard let statements else { throw StoreError.closed }
        try begin()
        if !explainsDeletion {
            recordsInTransaction.append(LossRecord(sensor: sensor, device: device, start: start, end: end, reason: reason))
        }
        let key = RecordCoalescing.Key(sensor: sensor, device: device, reason: reason)
        if let row = coalescing.widening(key, start: start, end: end) {
            let widen = statements.widenRecord
            widen.reset()
            try widen.bind([row.id, row.start, row.end])
            try widen.run()
            // Gone meanwhile (purged past the window): written anew below.
            if try database().changes > 0 {
                coalescing.remember(key, row)
                return
            }
        }
        recordsSinceCount += 1
        let insert = statements.insertRecord
        insert.reset()
        try insert.bind(1, sensor.rawValue)
        try insert.bind(2, device)
        try insert.bind(3, start)
        try insert.bind(4, end)
        try insert.bind(5, Int64(reason.rawValue))
        try insert.run()
        coalescing.remember(key, RecordCoalescing.Row(id: try database().lastInsertRowID, start: start, end: end))
    }

    /// Inserts the records a failed transaction took with it.
    func writeOwedRecords() throws {
        while let record = recordsOwed.first {
            try insertRecord(
                sensor: record.sensor, device: record.device, start: record.start, end: record.end,
                reason: record.reason)
            recordsOwed.removeFirst()
        }
    }

    /// Keeps a record for the next transaction. While the disk stays full every failure reports
    /// the same loss growing (it starts at the same last committed sample), so a record that
    /// overlaps or touches one already owed for the same sensor, device and reason widens it:
    /// the list stays as short as the number of distinct gaps.
    private func owe(_ record: LossRecord) {
        if let index = recordsOwed.firstIndex(where: {
            $0.sensor == record.sensor && $0.device == record.device && $0.reason == record.reason
                && $0.start <= record.end && record.start <= $0.end
        }) {
            recordsOwed[index].start = min(recordsOwed[index].start, record.start)
            recordsOwed[index].end = max(recordsOwed[index].end, record.end)
        } else {
            recordsOwed.append(record)
        }
    }

    /// The newest sample time of a stream that the database holds; nil when it holds none.
    func lastCommittedTime(_ stream: StreamID) throws -> Int64? {
        let query = try database().prepare("SELECT max(max_time) FROM chunks WHERE stream = ?")
        try query.bind(1, stream.rawValue)
        guard try query.step(), !query.isNull(0) else { return nil }
        return query.int64(0)
    }

    /// Writes a stream's `live_streams` row with its run's first sample.
    private func markLive(_ stream: StreamID, since: Int64) throws {
        guard let statements else { throw StoreError.closed }
        try begin()
        statements.markLive.reset()
        try statements.markLive.bind([stream.rawValue, since])
        try statements.markLive.run()
        liveSince[stream] = since
    }

    func bootRow(_ boot: BootID, anchor: Int64) throws -> Int64 {
        if let row = bootRows[boot] { return row }
        let db = try database()
        try begin()
        let insert = try db.prepare("INSERT OR IGNORE INTO boots (boot_id, anchor) VALUES (?, ?)")
        try insert.bind(1, boot.rawValue)
        try insert.bind(2, anchor)
        try insert.run()
        let select = try db.prepare("SELECT id FROM boots WHERE boot_id = ?")
        try select.bind(1, boot.rawValue)
        guard try select.step() else { throw StoreError.unknownBoot(boot) }
        let row = select.int64(0)
        bootRows[boot] = row
        return row
    }

    /// A write failed: roll back the open transaction and forget the open chunks (their pieces
    /// committed earlier stay and are sealed at the next start; a seal in the transaction may
    /// have taken samples out of memory whose chunk was rolled back). Per stream, everything
    /// appended after its last committed sample is lost and owed a deletion record —
    /// `lowDiskSpace` when the disk was full, `systemInitiated` otherwise — together with the
    /// records the transaction held. Then the budget is enforced (eviction makes room) and the
    /// records are written; if that fails too they wait for the next transaction that can be
    /// written (docs/store.md, disk budget). Reported once to the owner.
    func fail(_ error: any Error) {
        if pendingFailure == nil { pendingFailure = error }
        onFailure(error)
        guard inTransaction else { return }  // nothing written was undone
        if let db, !db.isAutocommit { try? db.execute("ROLLBACK") }
        inTransaction = false
        coalescing.forgetAll()
        for record in recordsInTransaction { owe(record) }
        recordsInTransaction.removeAll()
        let reason: SRDeletionReason = (error as? SQLiteError)?.isDiskFull == true ? .lowDiskSpace : .systemInitiated
        let lost = open
        let since = liveSince
        open.removeAll()
        bootRows.removeAll()
        lastBoot = nil
        liveSince.removeAll()
        samplesLostUnreported += lost.values.reduce(0) { $0 + ($1.count - $1.durableCount) }
        for (stream, chunk) in lost where chunk.newest != .min {
            guard let descriptor = registry.descriptor(stream) else { continue }
            let committed = (try? lastCommittedTime(stream)) ?? nil
            if let committed, committed >= chunk.newest { continue }
            let first = since[stream] ?? chunk.minTime
            // From just after the last sample the database keeps: that one is not lost.
            let start = min(max(committed.map { $0 &+ 1 } ?? first, first), chunk.newest)
            owe(
                LossRecord(
                    sensor: descriptor.sensor, device: descriptor.device, start: start, end: chunk.newest,
                    reason: reason))
        }
        do {
            try keepBudget()
            try commit()
        } catch {
            abandonTransaction()
        }
        do {
            try writeOwedRecords()
            try commit()
        } catch {
            abandonTransaction()
        }
    }

    /// Rolls back after a failure while handling a failure; its records stay owed.
    private func abandonTransaction() {
        if let db, !db.isAutocommit { try? db.execute("ROLLBACK") }
        inTransaction = false
        coalescing.forgetAll()
        for record in recordsInTransaction { owe(record) }
        recordsInTransaction.removeAll()
    }
}
