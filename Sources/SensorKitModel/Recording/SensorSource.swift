/// How a stored column's integers read.
public enum ColumnKind: Hashable, Sendable, Codable {
    /// Lossless integer counts in `unit` after `(raw + offset) × scale` (the IIO convention).
    case count(scale: Double, offset: Double, unit: String)
    /// A Float64 in `unit`, kept bit for bit (a batch carries its bit pattern).
    case float(unit: String)
    /// An instant on the `CLOCK_BOOTTIME` of the batch's boot, in ns. The store keeps it as SR ns,
    /// converted with the boot's anchor exactly as the sample times are, so a reader sees SR time.
    case bootInstant

    /// Counts in `unit` with scale 1 and offset 0.
    public static func count(_ unit: String) -> ColumnKind { .count(scale: 1, offset: 0, unit: unit) }

    /// The unit of the physical values (SR ns for a boot instant, as the store keeps it).
    public var unit: String {
        switch self {
        case .count(_, _, let unit), .float(let unit): unit
        case .bootInstant: "ns"
        }
    }
}

/// One column of values a source produces: its name (a case of its family's `Stored` enum) and
/// how its integers read.
public struct SourceColumn: Hashable, Sendable, Codable {
    public let name: String
    public let kind: ColumnKind

    /// A column of `Key`'s stored schema.
    public init<Key: FamilyColumn>(_ key: Key, _ kind: ColumnKind) {
        self.name = key.rawValue
        self.kind = kind
    }
}

/// The stored columns a source records, named only by its family's `Stored` cases, each with its
/// kind; in the cases' declaration order, which is the order of the descriptor's columns and of
/// every batch the source delivers.
public struct SourceSchema<Key: FamilyColumn>: Hashable, Sendable {
    public private(set) var kinds: [Key: ColumnKind]

    /// Every stored column of the family, each with its kind: `kind` is a switch the compiler
    /// checks for every case, so a column added to the family cannot be forgotten here.
    public init(every kind: (Key) -> ColumnKind) {
        kinds = Dictionary(uniqueKeysWithValues: Key.allCases.map { ($0, kind($0)) })
    }

    /// Only the columns in `kinds` (a chip without a temperature channel; PPG without `ppg3`).
    public init(_ kinds: [Key: ColumnKind]) {
        precondition(!kinds.isEmpty, "a stream has at least one column")
        self.kinds = kinds
    }

    /// The columns the source has, in declaration order.
    public var keys: [Key] { Key.allCases.filter { kinds[$0] != nil } }

    public var columns: [SourceColumn] { keys.map { SourceColumn($0, kinds[$0]!) } }
}

/// How a source's samples are timed: a stable fact kept in its stream's identity. The words that
/// explain it (`description`) are shown beside it and are not stored, so rewording them never
/// starts a new stream.
public enum SampleTiming: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// Stamped when the measurement arrived (the Heart Rate Service carries no device time).
    case receipt
    /// Stamped when the measurement that changed the state arrived.
    case stateChangeReceipt
    /// The device's clock mapped to the boot clock.
    case mappedDeviceClock

    /// The detail key the kind is kept under.
    public static let detail = "timing"

    public var description: String {
        switch self {
        case .receipt: "stamped on receipt: the Heart Rate Service carries no device time"
        case .stateChangeReceipt: "stamped on receipt of the heart-rate measurement whose sensor contact changed"
        case .mappedDeviceClock:
            "device clock mapped to the boot clock (offset + drift from the lower envelope of frame arrivals); uncertainty in status"
        }
    }
}

/// What a source records and who it is: the stream's identity in the store and in
/// `sensorkitd devices` (chip name, udev path, mount matrix, rate, buffered or polled…).
/// Equality and hashing leave `notes` out: they are words, not identity.
public struct SourceDescriptor: Hashable, Sendable {
    public var sensor: SRSensor
    /// The `SRDevice` identifier: "host" for IIO chips, the wearable's for BLE.
    public var device: String
    /// Stable identity of the source within the device (e.g. "iio:bmi160@/sys/devices/…/iio:device0").
    public var source: String
    /// The stored columns, from the family's `Stored` cases (`SourceSchema`).
    public let columns: [SourceColumn]
    /// Metadata kept with the stream as its identity: stable machine facts only (mount matrix,
    /// sampling frequency, device fields, `SampleTiming` raw values), never words meant for a
    /// person, which `shownDetails` derives.
    public var details: [String: String]
    /// Sentences for a person about the source (which channel gives lux and why, why the buffer
    /// was refused), shown beside the details and never stored: rewording one starts no stream.
    public var notes: [String: String]

    public init<Key: FamilyColumn>(
        sensor: SRSensor, device: String, source: String, schema: SourceSchema<Key>, details: [String: String],
        notes: [String: String] = [:]
    ) {
        self.sensor = sensor
        self.device = device
        self.source = source
        self.columns = schema.columns
        self.details = details
        self.notes = notes
    }

    /// A source whose columns come as a list in the order its batches carry them (IIO: the
    /// chip's channels by role, `IIOChip.columns`); each is named by a family key (`SourceColumn`),
    /// and a name may appear once.
    public init(
        sensor: SRSensor, device: String, source: String, orderedColumns: [SourceColumn], details: [String: String],
        notes: [String: String] = [:]
    ) {
        precondition(Set(orderedColumns.map(\.name)).count == orderedColumns.count, "a column appears once")
        self.sensor = sensor
        self.device = device
        self.source = source
        self.columns = orderedColumns
        self.details = details
        self.notes = notes
    }

    public static func == (a: SourceDescriptor, b: SourceDescriptor) -> Bool {
        (a.sensor, a.device, a.source, a.columns, a.details) == (b.sensor, b.device, b.source, b.columns, b.details)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(sensor)
        hasher.combine(device)
        hasher.combine(source)
        hasher.combine(columns)
        hasher.combine(details)
    }

    /// The details as `sensorkitctl devices` shows them: with the notes, and a timing kind with
    /// its explanation.
    public var shownDetails: [String: String] {
        var shown = details.merging(notes) { detail, _ in detail }
        if let kind = details[SampleTiming.detail].flatMap(SampleTiming.init(rawValue:)) {
            shown[SampleTiming.detail] = kind.description
        }
        return shown
    }
}

/// Samples as a source delivers them: kernel/sensor times on the boot clock, receive times, and
/// one integer array per `SourceDescriptor.columns` entry, all the same length (bit patterns for
/// float columns, boot ns for boot-instant columns).
public struct SourceBatch: Hashable, Sendable {
    public var boot: BootID
    public var sensorTimes: [Int64]
    public var receiveTimes: [Int64]
    public private(set) var columns: [[Int64]]

    /// A batch filled by the family's keys for a source described by `descriptor`. A key the
    /// descriptor lacks or a column of the descriptor left unfilled is a bug in the driver and
    /// traps here, where it happened, instead of storing values under the wrong names.
    public init<Key: FamilyColumn>(
        boot: BootID, sensorTimes: [Int64], receiveTimes: [Int64], values: BatchValues<Key>, for descriptor: SourceDescriptor
    ) {
        let filled = Key.allCases.filter { values.values[$0] != nil }
        precondition(
            filled.map(\.rawValue) == descriptor.columns.map(\.name),
            "batch of \(descriptor.source) fills \(filled.map(\.rawValue)), its descriptor has \(descriptor.columns.map(\.name))")
        let columns = filled.map { values.values[$0]! }
        precondition(columns.allSatisfy { $0.count == sensorTimes.count }, "one value per sample in every column")
        self.init(boot: boot, sensorTimes: sensorTimes, receiveTimes: receiveTimes, inDescriptorOrder: columns)
    }

    /// A batch whose columns are already in the order of the descriptor's columns, for a capture
    /// that reads them in the order it built the descriptor from (IIO's `IIOChip.columns`).
    public init(boot: BootID, sensorTimes: [Int64], receiveTimes: [Int64], inDescriptorOrder columns: [[Int64]]) {
        self.boot = boot
        self.sensorTimes = sensorTimes
        self.receiveTimes = receiveTimes
        self.columns = columns
    }

    public var count: Int { sensorTimes.count }
}

/// A batch's values by its family's stored keys (`values[.microvolts] = …`), before they become
/// a `SourceBatch` for one descriptor.
public struct BatchValues<Key: FamilyColumn>: Sendable {
    fileprivate var values: [Key: [Int64]] = [:]

    public init() {}

    /// Counts, or boot ns of a boot-instant column.
    public subscript(key: Key) -> [Int64]? {
        get { values[key] }
        set { values[key] = newValue }
    }

    /// A float column's values.
    public mutating func set(_ key: Key, floats: [Double]) {
        values[key] = floats.map { Int64(bitPattern: $0.bitPattern) }
    }
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
    /// Runs `body`, in which a discovery's sources deliver the batches of one hand-over (an IIO
    /// chip's streams, cut at the same scan): the store then wakes its writer once for all of
    /// them, not once per batch.
    func handingOver(_ body: () -> Void)
}

extension SourceRegistry {
    public func handingOver(_ body: () -> Void) { body() }
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
