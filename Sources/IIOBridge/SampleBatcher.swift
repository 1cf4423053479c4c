import SensorKitModel

/// Collects one stream's samples into `SourceBatch`es of at most one second of sensor time and
/// notices the intervals the stream lost (docs/iio.md §6).
///
/// A lost interval shows in the sensor times: the kernel's kfifo drops *new* scans when it is full
/// (docs/iio.md §12.5), a polled read that hung for seconds leaves a hole, so a step between two
/// consecutive samples of more than `gapThreshold` (eight periods, at least 25 ms — well above the
/// jitter of a threaded interrupt's timestamp) is reported as a `.gap` between them, with reason
/// `systemInitiated`. A read error reported with `interrupted(_:)` makes the next step a gap
/// whatever its size, with the error as the explanation.
///
/// Pure and confined to its owner's queue; the caller delivers the returned events in order.
public struct SampleBatcher: Sendable {
    /// The longest a batch spans. Samples wait here until the batch is handed over, and a SIGKILL
    /// loses what waits here and what the store has not committed yet (up to its commit interval,
    /// 0.5 s): with batches of a second that reached 1.08 s; half a second keeps it well inside
    /// the 1 s the crash contract promises, for one more hand-over a second (docs/reliability.md).
    public static let maximumSpan: Int64 = 500_000_000
    /// The longest a batch spans while its samples are staged (`staging`, `ScanFanOut`): a
    /// killed daemon loses none of them, so they may wait for the store's fold pace (its sync
    /// interval, 5 s) instead of half a second — one hand-over in five seconds instead of ten,
    /// about a fifth of the reading thread's CPU (docs/measurements/iio.md).
    public static let stagedSpan: Int64 = 5_000_000_000

    public let boot: BootID
    public let columnCount: Int
    /// Nanoseconds between samples from the sampling frequency or polling interval; nil when
    /// unknown (then only `interrupted` produces gaps).
    public let period: Int64?
    /// What a too-long step means for this stream, e.g. "kernel FIFO overflow".
    public let gapCause: String

    /// The pending samples, one row each: sensor time, receive time, then the columns. They live
    /// in the staging's slots when there is one — the staged copy is the batch itself, written
    /// once — and here otherwise; a flush turns them into a batch's columns.
    private var rows: [Int64] = []
    /// Samples collected and not yet returned in a batch.
    public private(set) var pendingCount = 0
    /// The first pending sample's sensor time; meaningless while nothing is pending.
    private var firstPendingSensorTime: Int64 = 0
    /// When the oldest sample not yet returned was received; nil when nothing is pending.
    public private(set) var oldestPendingReceiveTime: Int64?
    /// The last sample's sensor time, delivered or pending.
    public private(set) var lastSensorTime: Int64?
    private var interruption: String?
    /// Where the pending samples are kept as they are appended (nil: in the batcher); the owner
    /// publishes how many (`SampleStaging.publish`), and a flush publishes none.
    public let staging: (any SampleStaging)?
    /// `staging.slots`, read once: the mapping lives as long as the staging, and the batcher is
    /// confined to its owner's queue, as the staging's writes are.
    nonisolated(unsafe) private let stagingSlots: UnsafeMutablePointer<Int64>?
    private let stagingCapacity: Int
    /// The longest a batch spans now: `maximumSpan`, or longer while the owner stages it.
    public var spanLimit: Int64 = SampleBatcher.maximumSpan

    public init(
        boot: BootID, columnCount: Int, period: Int64?, gapCause: String = "kernel FIFO overflow",
        staging: (any SampleStaging)? = nil
    ) {
        precondition(columnCount > 0, "a stream has at least one column")
        precondition(period.map { $0 > 0 } ?? true, "a period is positive")
        self.boot = boot
        self.columnCount = columnCount
        self.period = period
        self.gapCause = gapCause
        self.staging = staging
        stagingSlots = staging?.slots
        stagingCapacity = staging?.capacity ?? .max
    }

    /// The smallest step between two samples that counts as lost data.
    public var gapThreshold: Int64? { period.map(Self.gapThreshold(period:)) }

    /// The smallest step that counts as lost data at `period`: eight periods, at least 25 ms.
    public static func gapThreshold(period: Int64) -> Int64 { max(period.multipliedSaturating(by: 8), 25_000_000) }

    /// What a deletion record says of a step of `step` ns at `period` ns.
    public static func gapReason(cause: String, step: Int64, period: Int64) -> String {
        let lost = max(0, step / period - 1)
        return "\(cause): no samples for \(milliseconds(step)) at a \(milliseconds(period)) period, about \(lost) lost"
    }

    /// A read failed or the device stopped for a while: the step to the next sample is a gap.
    public mutating func interrupted(_ why: String) {
        if interruption == nil { interruption = why }
    }

    /// The stream lost samples from `time` (boottime ns) on before its first one: the step from
    /// `time` to its first sample is a gap, with `why` as the explanation.
    public mutating func missed(since time: Int64, _ why: String) {
        guard lastSensorTime == nil else { return interrupted(why) }
        lastSensorTime = time
        interruption = why
    }

    /// Adds one sample whose column `i` is `value(i)`. Events that must go out before it — the
    /// batch it no longer fits in, the gap in front of it — are appended to `events`.
    @inline(__always)
    public mutating func append(
        sensorTime: Int64, receiveTime: Int64, into events: inout [SourceEvent],
        _ value: (Int) -> Int64
    ) {
        if let last = lastSensorTime {
            let step = sensorTime - last
            if let why = interruption {
                flush(into: &events)
                events.append(
                    .gap(
                        from: BootInstant(boot: boot, nanoseconds: last),
                        to: BootInstant(boot: boot, nanoseconds: sensorTime),
                        reason: .systemInitiated, why: why))
                interruption = nil
            } else if let threshold = gapThreshold, step > threshold, let period {
                flush(into: &events)
                events.append(
                    .gap(
                        from: BootInstant(boot: boot, nanoseconds: last),
                        to: BootInstant(boot: boot, nanoseconds: sensorTime), reason: .systemInitiated,
                        why: Self.gapReason(cause: gapCause, step: step, period: period)))
            }
        } else {
            interruption = nil  // nothing before the first sample to lose
        }
        if pendingCount > 0, sensorTime - firstPendingSensorTime >= spanLimit || pendingCount >= stagingCapacity {
            flush(into: &events)
        }
        let width = 2 + columnCount
        if let stagingSlots {
            let row = stagingSlots + pendingCount * width
            row[0] = sensorTime
            row[1] = receiveTime
            for column in 0..<columnCount { row[2 + column] = value(column) }
        } else {
            rows.append(sensorTime)
            rows.append(receiveTime)
            for column in 0..<columnCount { rows.append(value(column)) }
        }
        if pendingCount == 0 {
            firstPendingSensorTime = sensorTime
            oldestPendingReceiveTime = receiveTime
        }
        pendingCount += 1
        lastSensorTime = sensorTime
    }

    /// Returns what is pending as one batch (nothing when empty).
    public mutating func flush(into events: inout [SourceEvent]) {
        guard pendingCount > 0 else { return }
        let count = pendingCount, columnCount = self.columnCount, width = 2 + columnCount
        func batch(_ rows: UnsafePointer<Int64>) -> SourceBatch {
            func cell(_ offset: Int) -> [Int64] {
                [Int64](unsafeUninitializedCapacity: count) { cells, initialized in
                    for sample in 0..<count { cells.initializeElement(at: sample, to: rows[sample * width + offset]) }
                    initialized = count
                }
            }
            return SourceBatch(
                boot: boot, sensorTimes: cell(0), receiveTimes: cell(1), inDescriptorOrder: (0..<columnCount).map { cell(2 + $0) }
            )
        }
        if let stagingSlots {
            events.append(.samples(batch(stagingSlots)))
        } else {
            events.append(.samples(rows.withUnsafeBufferPointer { batch($0.baseAddress!) }))
            rows.removeAll(keepingCapacity: true)
        }
        pendingCount = 0
        oldestPendingReceiveTime = nil
        // Before the next batch's samples overwrite the slots.
        staging?.publish(count: 0, continuing: nil)
    }

    static func milliseconds(_ nanoseconds: Int64) -> String {
        let tenths = nanoseconds.addingSaturating(50_000) / 100_000
        return "\(tenths / 10).\(tenths % 10) ms"
    }
}
