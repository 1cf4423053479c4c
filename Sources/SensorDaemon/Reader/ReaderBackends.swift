import SensorKitModel

/// What the reader API needs from the recorded data (implemented over the store by
/// `StoreArchive`). Called on fetch queues, never on the control queue.
public protocol SampleArchive: Sendable {
    /// Devices with stored data for a sensor (`fetchDevices`).
    func devices(for sensor: SRSensor) -> [SRDevice]

    /// Hold and window for a sensor, in nanoseconds (config; defaults 24 h and 7 d).
    func retention(for sensor: SRSensor) -> (hold: Int64, window: Int64)

    /// A cursor over the samples of `sensor` on `device` with sensor time in `(from, to]` and
    /// recorded at or after `notBefore`, oldest first, in SensorKit units for the sensor's
    /// `BatchLayout`. Deletion-record streams (`sensor.parentOfDeletionRecords != nil`) yield
    /// deletion records. Hold and window are the caller's business (it passes a clamped range).
    func cursor(sensor: SRSensor, device: String, from: Int64, to: Int64, notBefore: Int64) throws -> any FetchCursor
}

/// Pulls fetched samples a batch at a time, so a slow client only ever parks a cursor, never a
/// thread. Used from one queue at a time.
public protocol FetchCursor: AnyObject {
    /// The next at most `maxSamples` samples; nil when the range is exhausted. A corrupt chunk is
    /// skipped (the archive records a deletion record for it), never returned.
    func next(maxSamples: Int) throws -> FetchedColumns?
}

/// Columns of fetched samples, the body of one `SampleBatchFrame`.
public struct FetchedColumns: Sendable {
    public var sensorTimes: [Int64]
    public var writeTimes: [Int64]
    public var columns: [[Double]]
    public var ragged: [Double]

    public init(sensorTimes: [Int64], writeTimes: [Int64], columns: [[Double]], ragged: [Double] = []) {
        self.sensorTimes = sensorTimes
        self.writeTimes = writeTimes
        self.columns = columns
        self.ragged = ragged
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
