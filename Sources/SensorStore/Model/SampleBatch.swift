import SensorKitModel

/// The values of one column across a batch (or a block of query results).
public enum ColumnValues: Sendable, Equatable {
    case integers([Int64])
    /// Compared bit for bit, so NaNs with equal payloads are equal.
    case floats([Double])

    /// Values in the column.
    public var count: Int {
        switch self {
        case .integers(let values): values.count
        case .floats(let values): values.count
        }
    }

    /// Integers as they are, floats as their bit patterns: what the codec stores.
    var storage: [Int64] {
        switch self {
        case .integers(let values): values
        case .floats(let values): values.map { Int64(bitPattern: $0.bitPattern) }
        }
    }

    public static func == (lhs: ColumnValues, rhs: ColumnValues) -> Bool {
        switch (lhs, rhs) {
        case (.integers(let a), .integers(let b)): a == b
        case (.floats, .floats): lhs.storage == rhs.storage
        default: false
        }
    }
}

/// One value of a sample, for row-wise appends and reads.
public enum SampleValue: Sendable, Equatable {
    case integer(Int64)
    case float(Double)

    /// Compared bit for bit, so NaNs with equal payloads are equal.
    public static func == (lhs: SampleValue, rhs: SampleValue) -> Bool {
        switch (lhs, rhs) {
        case (.integer(let a), .integer(let b)): a == b
        case (.float(let a), .float(let b)): a.bitPattern == b.bitPattern
        default: false
        }
    }
}

/// Samples of one stream from one boot, as the pipeline hands them to the store: per sample the
/// sensor's time and the receive time (both `CLOCK_BOOTTIME` nanoseconds of `boot`) and one value
/// per schema column. Column-major, so a batch costs a handful of allocations.
public struct SampleBatch: Sendable {
    /// The boot whose `CLOCK_BOOTTIME` the times are in.
    public var boot: BootID
    /// When the sensor took each sample (`CLOCK_BOOTTIME` ns; may repeat or go backwards).
    public var sensorTimes: [Int64]
    /// When the pipeline received each sample (`CLOCK_BOOTTIME` ns).
    public var receiveTimes: [Int64]
    /// One entry per schema column, each with one value per sample.
    public var columns: [ColumnValues]

    /// A batch from whole columns; every column must have one value per sensor time.
    public init(boot: BootID, sensorTimes: [Int64], receiveTimes: [Int64], columns: [ColumnValues]) {
        precondition(receiveTimes.count == sensorTimes.count, "one receive time per sample")
        precondition(columns.allSatisfy { $0.count == sensorTimes.count }, "one value per sample in every column")
        self.boot = boot
        self.sensorTimes = sensorTimes
        self.receiveTimes = receiveTimes
        self.columns = columns
    }

    /// An empty batch shaped for `schema`, to fill with `append`.
    public init(boot: BootID, schema: SampleSchema) {
        self.boot = boot
        sensorTimes = []
        receiveTimes = []
        columns = schema.columns.map { $0.isFloat ? .floats([]) : .integers([]) }
    }

    /// Samples in the batch.
    public var count: Int { sensorTimes.count }
    /// True when the batch holds no samples (appending it does nothing).
    public var isEmpty: Bool { sensorTimes.isEmpty }

    /// Appends one sample; `values` must match the columns' kinds in order.
    public mutating func append(sensorTime: Int64, receiveTime: Int64, values: [SampleValue]) {
        precondition(values.count == columns.count, "one value per column")
        sensorTimes.append(sensorTime)
        receiveTimes.append(receiveTime)
        for index in columns.indices {
            switch (columns[index], values[index]) {
            case (.integers(var column), .integer(let value)):
                columns[index] = .integers([])
                column.append(value)
                columns[index] = .integers(column)
            case (.floats(var column), .float(let value)):
                columns[index] = .floats([])
                column.append(value)
                columns[index] = .floats(column)
            default:
                preconditionFailure("value kind differs from column \(index)")
            }
        }
    }
}
