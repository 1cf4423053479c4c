import SensorKitModel

/// What the reader API needs from the recorded data (implemented over the store by
/// `StoreBackend`). Nothing here waits for the store's writer, so it may be called on the
/// control queue and on connections' queues: what would wait is asked for with `whenReadable`.
public protocol SampleArchive: Sendable {
    /// Runs `ready` (on any thread) once what was recorded up to `to` (SR ns) can be read
    /// without waiting for the store's writer — at once, or after the writer moved samples it
    /// held aside into the database. A fetch and `health` read only after it.
    func whenReadable(through to: Int64, _ ready: @escaping @Sendable () -> Void)

    /// Devices with stored data for a sensor (`fetchDevices`).
    func devices(for sensor: SRSensor) -> [SRDevice]

    /// Hold and window for a sensor, in nanoseconds (config; defaults 24 h and 7 d).
    func retention(for sensor: SRSensor) -> (hold: Int64, window: Int64)

    /// A cursor over the samples of `sensor` on `device` with sensor time in `(from, to]` and
    /// recorded at or after `notBefore`, oldest first, in SensorKit units for the sensor's
    /// `BatchLayout`. Deletion-record streams (`sensor.parentOfDeletionRecords != nil`) yield
    /// deletion records. Hold and window are the caller's business (it passes a clamped range).
    /// `chunkFormats`: stored-chunk versions the client decodes itself (docs/protocol.md §5.3);
    /// chunks wholly inside the range may then go out as `chunk` frames. Empty: batches only.
    func cursor(
        sensor: SRSensor, device: String, from: Int64, to: Int64, notBefore: Int64,
        chunkFormats: Set<UInt8>
    ) throws -> any FetchCursor

    /// What each stream of `sensors` (nil: all) stored over the last minute and day before `now`
    /// and in `(from, to]`, its deletion records, and the store's budget (`health`,
    /// docs/protocol.md §3.5), from the catalog alone. `expectedRate` and `recording` are the
    /// caller's to fill in.
    func health(now: Int64, from: Int64, to: Int64, sensors: Set<SRSensor>?) throws -> WireHealth

    /// A participant's deletion (`deleteData`, docs/protocol.md §3.8): the samples of `sensor`
    /// on every device with sensor time in `(from, to]` leave the store with a `userInitiated`
    /// record per device. Returns the samples removed and whether their bytes are overwritten in
    /// the store's files already. Blocks until the store has done it.
    func erase(sensor: SRSensor, after from: Int64, through to: Int64) throws -> (samples: Int, overwritten: Bool)
}

/// Pulls fetched samples a batch at a time, so a slow client only ever parks a cursor, never a
/// thread. Used from one queue at a time.
public protocol FetchCursor: AnyObject {
    /// The next at most `maxSamples` samples as a whole `batch` frame for `requestID` (or a
    /// whole stored chunk as a `chunk` frame, when the client accepts those), built in
    /// place (`BatchFrameWriter`) in `storage` (a buffer handed back from an earlier batch, or
    /// empty; consumed, so it stays uniquely referenced and is written without a copy); nil
    /// when the range is exhausted. A corrupt chunk is skipped (the archive records
    /// a deletion record for it), never returned.
    func nextBatch(requestID: UInt32, maxSamples: Int, reusing storage: consuming [UInt8]) throws -> EncodedBatch?

    /// The fetch waits for its client: let go of what a wait must not hold (the store's read
    /// snapshot, which would keep the write-ahead log from being checkpointed). The next
    /// `nextBatch` goes on where the last one stopped.
    func park() throws
}

extension FetchCursor {
    public func park() throws {}
}

/// One batch frame ready to send: bytes `0..<size` of `storage` (frame header included; the
/// storage may be longer, it is reused from batch to batch) and how many samples it holds.
public struct EncodedBatch: Sendable {
    public var storage: [UInt8]
    public var size: Int
    public var count: Int
    /// Bytes of the frame sent after `storage[0..<size]`, from their own array (a stored chunk).
    public var tail: [UInt8]

    public init(storage: [UInt8], size: Int, count: Int, tail: [UInt8] = []) {
        precondition(size <= storage.count)
        self.storage = storage
        self.size = size
        self.count = count
        self.tail = tail
    }
}

/// Starts and stops recording as stakes come and go (the pipeline). Called on the control queue;
/// must not block (it hands work to the sources' own queues).
public protocol RecordingControl: Sendable {
    /// Makes exactly these sensors record (idempotent).
    func record(_ sensors: Set<SRSensor>)
    /// What is recording now, for `sensorkitctl devices`/`status`.
    func sources() -> [WireSource]
}
