/// The registry of sensor families: one per batch layout, each owning its stored schema, its
/// conversion to SensorKit units, its wire columns and its sample objects (docs/architecture.md
/// "Sensor families"). The daemon's fetch path and the client library go through it; nothing
/// else knows a family's columns.
public enum SensorFamilies {
    /// Every family, in layout order.
    public static let all: [any BatchFamily.Type] = [
        MotionFamily.self, PressureFamily.self, LightFamily.self, PedometerFamily.self, HeartRateFamily.self,
        WristFamily.self, ElectrocardiogramFamily.self, PhotoplethysmogramFamily.self, DeletionRecordsFamily.self,
        KeyboardMetricsFamily.self, DeviceUsageFamily.self, PhoneUsageFamily.self, MessagesUsageFamily.self,
        VisitsFamily.self,
    ]

    private static let byLayout: [BatchLayout: any BatchFamily.Type] =
        Dictionary(uniqueKeysWithValues: all.map { ($0.layout, $0) })

    private static let bySensor: [SRSensor: BatchLayout] =
        Dictionary(uniqueKeysWithValues: all.flatMap { family in family.sensors.map { ($0, family.layout) } })

    static let wireColumns: [BatchLayout: [String]] = byLayout.mapValues { $0.wireColumnNames }

    /// The family of a layout.
    public static func family(of layout: BatchLayout) -> any BatchFamily.Type { byLayout[layout]! }

    /// The layout of a sensor's fetch results; nil for sensors with no Linux source.
    public static func layout(of sensor: SRSensor) -> BatchLayout? {
        sensor.parentOfDeletionRecords != nil ? .deletionRecords : bySensor[sensor]
    }

    /// Whether a layout's mapping is a `ColumnMapping` (then stored chunks may be handed to a
    /// client that decodes them, docs/protocol.md §5.3).
    public static func isLinear(_ layout: BatchLayout) -> Bool {
        (family(of: layout) as? any SensorFamily.Type)?.isLinear ?? false
    }

    /// The mapping of one stream of `layout` whose stored column i is named `names[i]` and read
    /// as `sources[i]`; nil for a layout that is not recorded from streams (deletion records).
    public static func mapping(
        layout: BatchLayout, sensor: SRSensor, names: [String], sources: [ColumnMapping.Source], details: [String: String]
    ) throws(MissingStoredColumn) -> StreamMapping? {
        guard let family = family(of: layout) as? any SensorFamily.Type else { return nil }
        return try family.streamMapping(sensor: sensor, names: names, sources: sources, details: details)
    }

    /// The results of a fetched batch of `sensor`, built by its layout's family.
    public static func results<Results: FetchResultBuilder>(
        _ frame: SampleBatchFrame, sensor: SRSensor, dates: SampleDates, into results: inout Results
    ) {
        guard frame.count > 0 else { return }
        family(of: frame.layout).buildResults(frame, sensor: sensor, dates: dates, into: &results)
    }
}

extension BatchFamily {
    static var wireColumnNames: [String] { Wire.names }

    static func buildResults<Results: FetchResultBuilder>(
        _ frame: SampleBatchFrame, sensor: SRSensor, dates: SampleDates, into builder: inout Results
    ) {
        results(FamilyBatch<Wire>(frame: frame, sensor: sensor, dates: dates), into: &builder)
    }
}

extension SensorFamily {
    static func streamMapping(
        sensor: SRSensor, names: [String], sources: [ColumnMapping.Source], details: [String: String]
    ) throws(MissingStoredColumn) -> StreamMapping {
        let stream = StoredStream<Stored>(sensor: sensor, names: names, sources: sources, details: details)
        switch try mapping(stream) {
        case .linear(let mapping):
            precondition(mapping.outputs.count == Wire.allCases.count, "\(self): one output per wire column")
            return StreamMapping(layout: layout, linear: mapping, perSample: nil, ragged: nil)
        case .perSample(let body):
            let count: @Sendable ([UnsafeBufferPointer<Int64>], Int, Int64) -> Int = { stored, count, bootAnchor in
                raggedCount(StoredValues(stream: stream, stored: stored, count: count, bootAnchor: bootAnchor))
            }
            let ragged = maxRaggedValuesPerSample == 0 ? nil : count
            return StreamMapping(
                layout: layout, linear: nil,
                perSample: { stored, count, bootAnchor, sections in
                    body(
                        StoredValues(stream: stream, stored: stored, count: count, bootAnchor: bootAnchor), WireColumns(sections))
                }, ragged: ragged)
        }
    }
}

/// One stream's mapping into its layout's columns, its family's column types erased: what the
/// daemon keeps per stream and applies to every block it fetches.
public struct StreamMapping: Sendable {
    public let layout: BatchLayout
    /// The mapping a client given a stored chunk applies too, for linear families.
    public let linear: ColumnMapping?
    private let perSample: (@Sendable ([UnsafeBufferPointer<Int64>], Int, Int64, BatchFrameSections) -> Void)?
    private let ragged: (@Sendable ([UnsafeBufferPointer<Int64>], Int, Int64) -> Int)?

    init(
        layout: BatchLayout, linear: ColumnMapping?,
        perSample: (@Sendable ([UnsafeBufferPointer<Int64>], Int, Int64, BatchFrameSections) -> Void)?,
        ragged: (@Sendable ([UnsafeBufferPointer<Int64>], Int, Int64) -> Int)?
    ) {
        self.layout = layout
        self.linear = linear
        self.perSample = perSample
        self.ragged = ragged
    }

    /// Whether the layout's batches carry ragged values (heart rate's RR intervals).
    public var hasRaggedValues: Bool { ragged != nil }

    /// How many ragged values `count` samples read from `stored` carry; `write` fills exactly
    /// that many.
    public func raggedCount(stored: [UnsafeBufferPointer<Int64>], count: Int, bootAnchor: Int64) -> Int {
        ragged?(stored, count, bootAnchor) ?? 0
    }

    /// Writes the layout's columns of `count` samples, read from `stored` (every stored column of
    /// the stream, `count` values each), into `sections`.
    public func write(stored: [UnsafeBufferPointer<Int64>], count: Int, bootAnchor: Int64, into sections: BatchFrameSections) {
        precondition(sections.count == count && sections.columnCount == layout.columns.count)
        if let linear {
            for output in 0..<sections.columnCount {
                linear.write(output: output, count: count, stored: stored, to: sections.column(output).baseAddress)
            }
        } else {
            perSample!(stored, count, bootAnchor, sections)
        }
    }
}
