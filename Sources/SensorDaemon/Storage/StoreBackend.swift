import Foundation
import SensorKitModel
import SensorStore
import SensorSystem
import Synchronization

/// The daemon's view of the `SensorStore`: an ingest sink for the pipeline, a fetch archive for
/// the reader service (mapping stored counts to SensorKit units), and the persistence of consent
/// and stakes. The only file in the daemon that talks to the store.
public final class StoreBackend: DaemonStore, ControlStorage, @unchecked Sendable {
    // @unchecked: `store` is Sendable; `hostDevice` and `configuration` are immutable.
    public let store: SensorStore
    private let configuration: DaemonConfiguration
    private let hostDevice: SRDevice
    private let journal: Journal
    /// Where consent and stake writes wait for the store's writer, in the order they were asked
    /// for, so the reader's control queue never does.
    private let persistQueue = DispatchQueue(label: "sensorkitd.control.persist")
    /// Where a purge waits for the writer, so the daemon's timers never do; one at a time.
    private let maintenanceQueue = DispatchQueue(label: "sensorkitd.store.maintenance")
    private let purging = Mutex(false)

    public init(store: SensorStore, configuration: DaemonConfiguration, hostDevice: SRDevice, journal: Journal) {
        self.store = store
        self.configuration = configuration
        self.hostDevice = hostDevice
        self.journal = journal
    }

    /// Opens the store in `stateDirectory` with the configuration's retention and budget.
    public static func open(
        stateDirectory: String, configuration: DaemonConfiguration, clock: any SystemClock,
        timeline: Timeline, hostDevice: SRDevice, journal: Journal
    ) throws -> StoreBackend {
        var storeConfiguration = StoreConfiguration(directory: stateDirectory)
        storeConfiguration.retention = RetentionPolicy(
            hold: configuration.defaultRetention.hold,
            window: configuration.defaultRetention.window)
        storeConfiguration.retentionOverrides = configuration.sensorRetention.mapValues {
            RetentionPolicy(hold: $0.hold, window: $0.window)
        }
        storeConfiguration.maxBytes = configuration.maxStoreBytes
        storeConfiguration.minFreeBytes = configuration.minFreeBytes
        // The daemon's housekeeping purges once a minute (`maintain`, on the injected scheduler,
        // so tests move it by hand); the writer's own purge alarm would make it twice, each a
        // SQLite transaction that folds the hand-over journal (docs/measurements/iio.md).
        storeConfiguration.purgeInterval = 0
        // A disk that stays full fails every commit: the first failure is logged, the rest summed
        // up; the samples they cost are logged by `StoreLossLog` (start, summaries, end).
        let failures = RecurringProblems(journal)
        let losses = StoreLossLog(journal)
        let store = try SensorStore(
            configuration: storeConfiguration, clock: clock, timeline: timeline,
            onWriteFailure: { error in failures.report("store write failed", "<3>store write failed: \(error)") },
            onLoss: { losses.on($0) })
        for loss in store.crashLosses {
            journal.warning(
                "the previous run ended without closing the store: \(loss.sensor.rawValue) on \(loss.device) lost \(FetchPolicy.describe(loss.end - loss.start)); recorded as systemInitiated"
            )
        }
        return StoreBackend(store: store, configuration: configuration, hostDevice: hostDevice, journal: journal)
    }

    // MARK: RecordingSink

    public func openStream(_ descriptor: SourceDescriptor) throws -> Int64 {
        var identity: SourceIdentity = descriptor.details.mapValues { .string($0) }
        identity["source"] = .string(descriptor.source)
        let schema = SampleSchema(descriptor.columns.map(Self.storedColumn))
        return try store.register(
            StreamDescriptor(
                sensor: descriptor.sensor, device: descriptor.device,
                source: identity, schema: schema)
        ).rawValue
    }

    /// How the store keeps a source's column.
    public static func storedColumn(_ column: SourceColumn) -> SampleColumn {
        switch column.kind {
        case .count(let scale, let offset, let unit):
            // IIO: value = (raw + offset) × scale; the store: value = raw × scale + offset'.
            .integer(name: column.name, scale: scale, offset: offset * scale, unit: unit)
        case .float(let unit): .float(name: column.name, unit: unit)
        case .bootInstant: .instant(name: column.name)
        }
    }

    public func handingOver(_ body: () -> Void) { store.handingOver(body) }

    public func staging(stream: Int64, capacity: Int) -> (any SampleStaging)? {
        do {
            return try store.staging(for: StreamID(rawValue: stream), capacity: capacity)
        } catch {
            journal.warning("stream \(stream): no staged samples (\(error)); its batches are handed over every half second")
            return nil
        }
    }

    public func append(stream: Int64, _ batch: SourceBatch) {
        let id = StreamID(rawValue: stream)
        store.append(sampleBatch(batch, of: id), to: id)
    }

    /// A source's batch as the store takes it: a float column's values arrive as bit patterns,
    /// the store takes them as floats.
    func sampleBatch(_ batch: SourceBatch, of id: StreamID) -> SampleBatch {
        let floats = store.floatColumns(of: id) ?? []
        return SampleBatch(
            boot: batch.boot, sensorTimes: batch.sensorTimes, receiveTimes: batch.receiveTimes,
            columns: batch.columns.indices.map { i in
                i < floats.count && floats[i]
                    ? .floats(batch.columns[i].map { Double(bitPattern: UInt64(bitPattern: $0)) })
                    : .integers(batch.columns[i])
            })
    }

    public func recordGap(stream: Int64, from: BootInstant, to: BootInstant, reason: SRDeletionReason) {
        guard let descriptor = store.descriptor(of: StreamID(rawValue: stream)) else { return }
        do {
            try store.recordGap(sensor: descriptor.sensor, device: descriptor.device, from: from, to: to, reason: reason)
        } catch {
            journal.warning("gap on \(descriptor.sensor.rawValue) not recorded: \(error), ignoring")
        }
    }

    public func recordingStopped(stream: Int64) {
        store.recordingStopped(StreamID(rawValue: stream))
    }

    // MARK: DaemonStore

    public func maintain() {
        // A purge still waiting for the writer (a slow disk) is not joined by another.
        guard
            purging.withLock({ busy in
                defer { busy = true }; return !busy
            })
        else { return }
        maintenanceQueue.async { [self] in
            defer { purging.withLock { $0 = false } }
            do {
                let report = try store.purge()
                journal.debug("purge: \(report)")
            } catch {
                journal.error("store purge failed: \(error)")
            }
        }
    }

    public func close() {
        persistQueue.sync {}  // consent and stakes asked for before the stop are kept
        do { try store.close() } catch { journal.error("store close failed: \(error)") }
    }

    public func timelineChanged(_ timeline: Timeline) { store.updateTimeline(timeline) }

    public func limitReads(to count: Int) { store.limitReadConnections(to: count) }

    // MARK: SampleArchive

    public func devices(for sensor: SRSensor) -> [SRDevice] {
        let streams = store.streams
        let identifiers = Set(streams.filter { $0.descriptor.sensor == sensor }.map(\.descriptor.device))
        return identifiers.sorted().map { identifier in
            identifier == SRDevice.hostIdentifier
                ? hostDevice
                : Self.device(identifier, identity: streams.last { $0.descriptor.device == identifier }?.descriptor.source ?? [:])
        }
    }

    /// A wearable as its streams describe it (`deviceModel`, `deviceSystemVersion`, … in the
    /// source details, from its Device Information Service); the newest stream wins.
    private static func device(_ identifier: String, identity: SourceIdentity) -> SRDevice {
        func text(_ key: String) -> String {
            if case .string(let value)? = identity[key] { return value }
            return ""
        }
        let name = text("deviceName")
        return SRDevice(
            identifier: identifier, name: name.isEmpty ? identifier : name, model: text("deviceModel"),
            systemName: text("deviceSystemName"), systemVersion: text("deviceSystemVersion"),
            productType: text("deviceProductType"))
    }

    public func retention(for sensor: SRSensor) -> (hold: Int64, window: Int64) {
        let retention = configuration.retention(for: sensor)
        return (retention.hold, retention.window)
    }

    public func whenReadable(through to: Int64, _ ready: @escaping @Sendable () -> Void) {
        store.whenFolded(reaching: to, ready)
    }

    public func cursor(
        sensor: SRSensor, device: String, from: Int64, to: Int64, notBefore: Int64,
        chunkFormats: Set<UInt8>
    ) throws -> any FetchCursor {
        if let parent = sensor.parentOfDeletionRecords {
            let records = try store.deletionRecords(sensor: parent, device: device, from: from, to: to)
            return DeletionRecordCursor(records: records)
        }
        guard let layout = BatchLayout.of(sensor) else {
            throw SRError(.dataInaccessible, message: "\(sensor.rawValue) has no layout")
        }
        // The writer's fold was asked for before (`whenReadable`): waiting for it here would
        // hold the control queue while the writer stalls.
        let cursor = try store.samples(
            sensor: sensor, device: device, from: from, to: to, notBefore: notBefore, foldingFirst: false)
        // Chunks go out as stored only where the client applies the same mapping (linear layouts).
        let handover =
            chunkFormats.isEmpty || !SensorFamilies.isLinear(layout)
            ? nil : SampleCursor.Handover(formats: chunkFormats, maxBytes: WireLimits.maxChunkBytes)
        return StoreFetchCursor(cursor: cursor, layout: layout, store: store, handover: handover)
    }

    public func erase(sensor: SRSensor, after from: Int64, through to: Int64) throws -> (samples: Int, overwritten: Bool) {
        let erasure = try store.erase(sensor: sensor, after: from, through: to)
        return (erasure.samples, erasure.erased)
    }

    // MARK: ControlStorage

    public func loadLedger() throws -> ControlLedger {
        var ledger = ControlLedger()
        for consent in try store.consents() {
            let key = ControlLedger.Key(app: consent.bundleID, sensor: consent.sensor)
            if consent.status == .notDetermined {
                ledger.request(key)
            } else {
                ledger.decide(key, granted: consent.status == .authorized, at: consent.decidedAt, by: "stored")
            }
        }
        for stake in try store.stakes() {
            let key = ControlLedger.Key(app: stake.bundleID, sensor: stake.sensor)
            ledger.restoreStake(key, firstStart: stake.firstStart, active: stake.active)
        }
        return ledger
    }

    public func saveConsent(_ key: ControlLedger.Key, status: SRAuthorizationStatus, at time: Int64) throws {
        try store.setConsent(bundleID: key.app, sensor: key.sensor, status: status, decidedAt: time)
    }

    public func saveStake(_ key: ControlLedger.Key, active: Bool, at time: Int64) throws {
        try store.setStake(bundleID: key.app, sensor: key.sensor, active: active, at: time)
    }

    public func persist(_ writes: [ControlWrite], done: @escaping @Sendable (_ saved: Int, _ failure: (any Error)?) -> Void) {
        persistQueue.async { [self] in
            for (index, write) in writes.enumerated() {
                do {
                    switch write {
                    case .consent(let key, let status, let time): try saveConsent(key, status: status, at: time)
                    case .stake(let key, let active, let time): try saveStake(key, active: active, at: time)
                    }
                } catch {
                    return done(index, error)
                }
            }
            done(writes.count, nil)
        }
    }
}

/// Fetch batches from a store cursor, at most `maxSamples` at a time, mapped to SensorKit units
/// and written straight into the frame that is sent (`SampleMapper.write`).
final class StoreFetchCursor: FetchCursor {
    private let cursor: SampleCursor
    private let layout: BatchLayout
    private let store: SensorStore
    private let handover: SampleCursor.Handover?
    private var block: SampleBlock?
    private var position = 0
    private var mappers: [StreamID: SampleMapper] = [:]

    init(cursor: SampleCursor, layout: BatchLayout, store: SensorStore, handover: SampleCursor.Handover?) {
        self.cursor = cursor
        self.layout = layout
        self.store = store
        self.handover = handover
    }

    func park() throws { try cursor.park() }

    func nextBatch(requestID: UInt32, maxSamples: Int, reusing storage: consuming [UInt8]) throws -> EncodedBatch? {
        while block == nil || position >= block!.count {
            switch try cursor.next(handingOver: handover) {
            case nil:
                block = nil
                return nil
            case .block(let next)?:
                block = next
                position = 0
            case .chunk(let chunk)?:
                return try chunkFrame(chunk, requestID: requestID, reusing: storage)
            }
        }
        let block = self.block!
        // A family with ragged values (heart rate's RR intervals) needs room for them too.
        let perSample = layout.columns.count + SensorFamilies.family(of: layout).maxRaggedValuesPerSample
        let range = position..<min(block.count, position + min(maxSamples, BatchFrameWriter.maxSamples(columns: perSample)))
        position = range.upperBound
        let mapper = try mapper(for: block.stream)
        let size = BatchFrameWriter.write(
            into: &storage, requestID: requestID, layout: layout, count: range.count,
            raggedCount: mapper.raggedCount(block, range)
        ) { sections in
            mapper.write(block, range, into: sections)
        }
        return EncodedBatch(storage: storage, size: size, count: range.count)
    }

    /// A stored chunk as a `chunk` frame with its stream's mapping (only asked for when the
    /// layout is linear, so the mapper has one).
    private func chunkFrame(_ chunk: EncodedChunk, requestID: UInt32, reusing storage: consuming [UInt8]) throws -> EncodedBatch {
        guard let mapping = try mapper(for: chunk.stream).linear else {
            throw SRError(.dataInaccessible, message: "a stored chunk of \(layout) was handed over without a linear mapping")
        }
        storage.removeAll(keepingCapacity: true)
        // The chunk goes out from the array the store read it into, right after this header.
        ChunkBatchFrame.appendFrameUpToChunk(
            requestID: requestID, layout: layout, formatVersion: chunk.formatVersion,
            count: chunk.count, mapping: mapping, chunkBytes: chunk.bytes.count, to: &storage)
        return EncodedBatch(storage: storage, size: storage.count, count: chunk.count, tail: chunk.bytes)
    }

    private func mapper(for stream: StreamID) throws -> SampleMapper {
        if let mapper = mappers[stream] { return mapper }
        guard let descriptor = store.descriptor(of: stream) else {
            throw SRError(.dataInaccessible, message: "stream \(stream) vanished")
        }
        let mapper = try SampleMapper(descriptor: descriptor, layout: layout)
        mappers[stream] = mapper
        return mapper
    }
}

/// Deletion records as fetch batches (layout `.deletionRecords`: start, end, reason).
final class DeletionRecordCursor: FetchCursor {
    private var records: ArraySlice<StoredDeletionRecord>

    init(records: [StoredDeletionRecord]) { self.records = records[...] }

    func nextBatch(requestID: UInt32, maxSamples: Int, reusing storage: consuming [UInt8]) throws -> EncodedBatch? {
        guard !records.isEmpty else { return nil }
        let page = records.prefix(
            min(maxSamples, BatchFrameWriter.maxSamples(columns: DeletionRecordsFamily.Wire.allCases.count)))
        records = records.dropFirst(page.count)
        let size = BatchFrameWriter.write(into: &storage, requestID: requestID, layout: .deletionRecords, count: page.count) {
            sections in
            let wire = WireColumns<DeletionRecordsFamily.Wire>(sections)
            let (ends, reasons) = (wire[.endTime], wire[.reason])
            for (i, record) in page.enumerated() {
                sections.sensorTimes[i] = record.start
                sections.writeTimes[i] = record.start
                ends[i] = Double(record.end)
                reasons[i] = Double(record.reason.rawValue)
            }
        }
        return EncodedBatch(storage: storage, size: size, count: page.count)
    }
}
