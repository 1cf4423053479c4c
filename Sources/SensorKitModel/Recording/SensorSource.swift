/// One column of raw values a source produces: lossless integers with the scale and offset that
/// turn them into `unit` (`(raw + offset) × scale`, the IIO convention).
public struct SourceColumn: Hashable, Sendable, Codable {
    public var name: String
    public var scale: Double
    public var offset: Double
    public var unit: String
    public init(name: String, scale: Double = 1, offset: Double = 0, unit: String) {
        self.name = name
        self.scale = scale
        self.offset = offset
        self.unit = unit
    }
}

/// What a source records and who it is: the stream's identity in the store and in
/// `sensorkitd devices` (chip name, udev path, mount matrix, rate, buffered or polled…).
public struct SourceDescriptor: Hashable, Sendable {
    public var sensor: SRSensor
    /// The `SRDevice` identifier: "host" for IIO chips, the wearable's for BLE.
    public var device: String
    /// Stable identity of the source within the device (e.g. "iio:bmi160@/sys/devices/…/iio:device0").
    public var source: String
    public var columns: [SourceColumn]
    /// Free-form metadata kept with the stream (mount matrix, sampling frequency, clock mapping).
    public var details: [String: String]

    public init(sensor: SRSensor, device: String, source: String, columns: [SourceColumn], details: [String: String]) {
        self.sensor = sensor
        self.device = device
        self.source = source
        self.columns = columns
        self.details = details
    }
}

/// Samples as a source delivers them: kernel/sensor times on the boot clock, receive times, and
/// raw integer columns (one array per `SourceDescriptor.columns` entry, all the same length).
public struct SourceBatch: Hashable, Sendable {
    public var boot: BootID
    public var sensorTimes: [Int64]
    public var receiveTimes: [Int64]
    public var columns: [[Int64]]

    public init(boot: BootID, sensorTimes: [Int64], receiveTimes: [Int64], columns: [[Int64]]) {
        self.boot = boot
        self.sensorTimes = sensorTimes
        self.receiveTimes = receiveTimes
        self.columns = columns
    }

    public var count: Int { sensorTimes.count }
}

/// What a source reports to the pipeline, on the source's own queue.
public enum SourceEvent: Sendable {
    case samples(SourceBatch)
    /// An interval the source knows it lost (FIFO overflow, device removed, link dropped).
    case gap(from: BootInstant, to: BootInstant, reason: SRDeletionReason, why: String)
}

/// A driver instance: opened by its driver's discovery, then `setRecording` turns
/// capture on and off (idempotent), `close` stops first and releases everything.
public protocol SensorSource: AnyObject, Sendable {
    var descriptor: SourceDescriptor { get }
    /// What capture is doing right now (`sensorkitctl devices`); nil when the source cannot tell,
    /// and then the listing says what the pipeline asked of it.
    var captureStatus: CaptureStatus? { get }
    /// Starts delivering events to `deliver` (or stops). Starting never blocks the caller; stopping
    /// may wait for the source's own queue, so that what the source still holds is delivered
    /// before it returns (the pipeline stops taking events right after). `deliver` takes the event
    /// on the calling thread and returns without waiting for disk (the store only stages it): call
    /// it from one thread at a time, in order, and hand a chip's streams over together.
    func setRecording(_ recording: Bool, deliver: @escaping @Sendable (SourceEvent) -> Void)
    func close()
    /// What the source is doing now, for `sensorkitctl devices` (a wearable's link state, battery,
    /// clock-mapping uncertainty); not part of the stream's stored identity. Any thread.
    var status: [String: String] { get }
}

extension SensorSource {
    public var status: [String: String] { [:] }
}

/// Where sources are added and removed as hardware comes and goes (the recording pipeline).
public protocol SourceRegistry: Sendable {
    func add(_ source: any SensorSource)
    /// Removes (and closes) every source whose `descriptor.source` is `source`.
    func remove(source: String)
}

extension SensorSource {
    public var captureStatus: CaptureStatus? { nil }
}

/// What a source's capture is doing, as `sensorkitctl devices` reports it: only `recording`
/// and `degraded` produce samples.
public enum CaptureStatus: Hashable, Sendable, CustomStringConvertible {
    /// Nobody asked it to record.
    case idle
    /// Asked to record, but the hardware has not delivered yet (enabling, no data yet, unplugged).
    case waiting(String)
    case recording
    /// Recording in a lesser way than planned (sysfs polling instead of the buffer).
    case degraded(String)
    /// Asked to record and not recording, for this reason.
    case failed(String)

    public var isRecording: Bool {
        switch self {
        case .recording, .degraded: true
        case .idle, .waiting, .failed: false
        }
    }

    public var description: String {
        switch self {
        case .idle: "idle"
        case let .waiting(why): "waiting for hardware: \(why)"
        case .recording: "recording"
        case let .degraded(why): "recording, degraded: \(why)"
        case let .failed(why): "failed: \(why)"
        }
    }
}
