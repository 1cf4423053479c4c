import IIOBridge
import SensorKitModel
import SensorStore

/// Turns stored raw columns into SensorKit's units for a batch layout (docs/sensorkit-mapping.md): the store keeps
/// what the sensor gave (counts with scale and offset); this applies scale/offset, the mount
/// matrix, m/s² → g, milli-°C → °C, lux and chromaticity. Pure; one mapper per stream, built from
/// the stream's descriptor once and reused for every block. It writes straight into the frame
/// being built (`BatchFrameSections`), so a sample is touched once between the store's decoded
/// chunk and the bytes sent.
struct SampleMapper {
    let layout: BatchLayout
    private let schema: SampleSchema
    private let columnIndex: [String: Int]
    private let placement: Double
    /// For layouts whose columns are linear in the stored ones (motion and the BLE layouts but
    /// heart rate): the mapping both this mapper and a client given a stored chunk apply.
    let linear: ColumnMapping?

    /// Whether `layout`'s mapping is a `ColumnMapping` (then stored chunks may be handed to a
    /// client that decodes them, docs/protocol.md §5.3).
    static func isLinear(_ layout: BatchLayout) -> Bool {
        switch layout {
        case .motion, .wrist, .electrocardiogram, .photoplethysmogram: return true
        case .pressure, .ambientLight, .pedometer, .heartRate, .deletionRecords: return false
        }
    }

    enum MappingError: Error, CustomStringConvertible {
        case missingColumn(String, stream: String)
        var description: String {
            switch self {
            case .missingColumn(let name, let stream): return "stream \(stream) has no column '\(name)' for its sensor's layout"
            }
        }
    }

    init(descriptor: StreamDescriptor, layout: BatchLayout) throws {
        self.layout = layout
        schema = descriptor.schema
        // Accelerometers are m/s² in IIO and g in CoreMotion; gyroscopes are rad/s in both.
        let motionDivisor = descriptor.sensor == .accelerometer ? UnitConversion.standardGravity : 1
        columnIndex = Dictionary(descriptor.schema.columns.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { a, _ in a })
        var matrix = MountMatrix.identity
        if case .string(let text) = descriptor.source["mountMatrix"], let parsed = try? MountMatrix(parsing: text) {
            matrix = parsed
        }
        switch descriptor.source["placement"] {
        case .integer(let value)?: placement = Double(value)
        case .string(let text)?: placement = Int(text).map(Double.init) ?? 0   // source details are strings
        default: placement = 0
        }
        let required: [String]
        switch layout {
        case .motion: required = ["x", "y", "z"]
        case .pressure: required = ["pressure"]
        case .pedometer: required = ["steps", "end"]
        default: required = []
        }
        for name in required where columnIndex[name] == nil {
            throw MappingError.missingColumn(name, stream: "\(descriptor.sensor.rawValue)@\(descriptor.device)")
        }
        linear = Self.isLinear(layout)
            ? Self.linearMapping(schema: schema, columnIndex: columnIndex, layout: layout, matrix: matrix, motionDivisor: motionDivisor)
            : nil
    }

    /// Motion: x, y, z are the mount matrix's rows over the physical axes, ÷ g for the
    /// accelerometer — `(r.x·x + r.y·y) + r.z·z`, the same operations and order as
    /// `MountMatrix.apply`, so values are bit for bit what the per-sample path gave. The BLE
    /// layouts store their columns in SensorKit units under the layout's own names.
    private static func linearMapping(
        schema: SampleSchema, columnIndex: [String: Int], layout: BatchLayout, matrix: MountMatrix, motionDivisor: Double
    ) -> ColumnMapping {
        let sources = schema.columns.map { column -> ColumnMapping.Source in
            switch column {
            case .integer(_, let scale, let offset, _): return ColumnMapping.Source(isFloat: false, scale: scale, offset: offset)
            case .float: return ColumnMapping.Source(isFloat: true)
            }
        }
        let outputs: [ColumnMapping.Output]
        if layout == .motion {
            let axes = ["x", "y", "z"].map { columnIndex[$0]! }
            outputs = matrix.rows.map { row in
                ColumnMapping.Output(terms: [ColumnMapping.Term(source: axes[0], coefficient: row.x),
                                             ColumnMapping.Term(source: axes[1], coefficient: row.y),
                                             ColumnMapping.Term(source: axes[2], coefficient: row.z)],
                                     divisor: motionDivisor)
            }
        } else {
            outputs = layout.columns.map { name in columnIndex[name].map { .copy($0) } ?? .missing }
        }
        return ColumnMapping(sources: sources, outputs: outputs)
    }

    /// Writes samples `range` of `block` (times and the layout's columns) into `sections`, which
    /// holds exactly `range.count` samples.
    func write(_ block: SampleBlock, _ range: Range<Int>, into sections: BatchFrameSections) {
        precondition(sections.count == range.count && sections.columnCount == layout.columns.count)
        let base = block.sensorTimes.startIndex
        sections.sensorTimes.copy(from: block.sensorTimes[(base + range.lowerBound)..<(base + range.upperBound)])
        let receiveBase = block.receiveTimes.startIndex
        sections.writeTimes.copy(from: block.receiveTimes[(receiveBase + range.lowerBound)..<(receiveBase + range.upperBound)])
        if let linear {
            block.withRawColumns(range) { stored in
                for output in 0..<layout.columns.count {
                    linear.write(output: output, count: range.count, stored: stored, to: sections.column(output).baseAddress)
                }
            }
            return
        }
        switch layout {
        case .pressure:
            write(physical("pressure", block, range)!, into: sections.column(0))
            let temperature = sections.column(1)
            if let celsius = physical("temperature", block, range) {
                for i in 0..<temperature.count { temperature[i] = UnitConversion.celsius(fromMilliCelsius: celsius[i]) }
            } else {
                temperature.fill(.nan)
            }
        case .ambientLight:
            let lux = physical("illuminance", block, range)
            let red = physical("red", block, range), green = physical("green", block, range), blue = physical("blue", block, range)
            let luxColumn = sections.column(0), x = sections.column(1), y = sections.column(2)
            for i in 0..<range.count {
                let reading = LightReading(illuminance: lux?[i], red: red?[i], green: green?[i], blue: blue?[i])
                luxColumn[i] = reading.lux ?? .nan
                x[i] = reading.chromaticity.x
                y[i] = reading.chromaticity.y
            }
            sections.column(3).fill(placement)
        case .pedometer:
            // "end" holds the interval's end as boot-clock ns of the same boot: SR ns = anchor + it.
            let end = block.rawColumn(columnIndex["end"]!)
            let ends = sections.column(0)
            for i in 0..<range.count { ends[i] = Double(end[end.startIndex + range.lowerBound + i] &+ block.bootAnchor) }
            write(physical("steps", block, range)!, into: sections.column(1))
        default:
            // Heart rate: columns stored in SensorKit units under the layout's own names.
            for (index, name) in layout.columns.enumerated() {
                if let values = physical(name, block, range) {
                    write(values, into: sections.column(index))
                } else {
                    sections.column(index).fill(.nan)
                }
            }
            if layout == .heartRate { writeRRIntervals(block, range, into: sections.ragged) }
        }
    }

    /// The RR intervals of heart-rate samples `range`: stored as columns `rr0`, `rr1`, … beside
    /// `rrCount` (docs/ble.md, "RR intervals"); sent as the frame's ragged values in seconds.
    static let rrColumnLimit = 16

    /// How many ragged values samples `range` of `block` carry.
    func raggedCount(_ block: SampleBlock, _ range: Range<Int>) -> Int {
        guard layout == .heartRate, let counts = physical("rrCount", block, range) else { return 0 }
        let available = rrColumns.count
        return (0..<range.count).reduce(0) { $0 + Self.rrCount(counts[$1], available: available) }
    }

    private var rrColumns: [Int] {
        var indices: [Int] = []
        while indices.count < Self.rrColumnLimit, let index = columnIndex["rr\(indices.count)"] { indices.append(index) }
        return indices
    }

    private static func rrCount(_ value: Double, available: Int) -> Int {
        value.isFinite ? Int(max(0, min(Double(available), value))) : 0
    }

    private func writeRRIntervals(_ block: SampleBlock, _ range: Range<Int>, into ragged: WireColumn<Double>) {
        guard ragged.count > 0, let counts = physical("rrCount", block, range) else { return }
        let columns = rrColumns.map { PhysicalColumn(block, index: $0, schema: schema, range: range) }
        var next = 0
        for i in 0..<range.count {
            for column in columns.prefix(Self.rrCount(counts[i], available: columns.count)) where next < ragged.count {
                ragged[next] = column[i]
                next += 1
            }
        }
    }

    private func write(_ values: PhysicalColumn, into column: WireColumn<Double>) {
        values.raw.withUnsafeBufferPointer { raw in
            for i in 0..<column.count { column[i] = values.value(raw[i]) }
        }
    }

    /// A column's physical values (SI as the source defines them), or nil if the stream lacks it.
    private func physical(_ name: String, _ block: SampleBlock, _ range: Range<Int>) -> PhysicalColumn? {
        columnIndex[name].map { PhysicalColumn(block, index: $0, schema: schema, range: range) }
    }
}

/// One stored column over a range, read as physical values: integer counts × scale + offset, or
/// float columns bit for bit.
private struct PhysicalColumn {
    let raw: ArraySlice<Int64>
    let isFloat: Bool
    let scale: Double
    let offset: Double

    init(_ block: SampleBlock, index: Int, schema: SampleSchema, range: Range<Int>) {
        let column = block.rawColumn(index)
        raw = column[(column.startIndex + range.lowerBound)..<(column.startIndex + range.upperBound)]
        switch schema.columns[index] {
        case .integer(_, let scale, let offset, _):
            isFloat = false
            self.scale = scale
            self.offset = offset
        case .float:
            isFloat = true
            scale = 1
            offset = 0
        }
    }

    @inline(__always) func value(_ stored: Int64) -> Double {
        isFloat ? Double(bitPattern: UInt64(bitPattern: stored)) : Double(stored) * scale + offset
    }

    /// Value `i` of the range (0-based).
    subscript(i: Int) -> Double { value(raw[raw.startIndex + i]) }
}
