import SensorKitModel
import SensorStore

/// Turns a stream's stored columns into its layout's columns in SensorKit units, by the layout's
/// sensor family (`SensorFamilies`; docs/sensorkit-mapping.md): the store keeps what the sensor
/// gave (counts with scale and offset), the family says how they become SensorKit's values.
/// One mapper per stream, built from the stream's descriptor once and reused for every block.
/// It writes straight into the frame being built (`BatchFrameSections`), so a sample is touched
/// once between the store's decoded chunk and the bytes sent.
struct SampleMapper {
    let layout: BatchLayout
    private let mapping: StreamMapping

    /// For linear families (motion, wrist, ECG, PPG): the mapping both this mapper and a client
    /// given a stored chunk apply.
    var linear: ColumnMapping? { mapping.linear }

    enum MappingError: Error, CustomStringConvertible {
        case missingColumn(String, stream: String)
        /// A column or detail is there but cannot be used (a stored mount matrix that does not parse).
        case unusable(String, problem: String, stream: String)
        case notRecorded(BatchLayout)
        var description: String {
            switch self {
            case .missingColumn(let name, let stream): return "stream \(stream) has no column '\(name)' for its sensor's layout"
            case .unusable(_, let problem, let stream):
                return "stream \(stream) cannot be mapped to its sensor's layout: \(problem)"
            case .notRecorded(let layout): return "layout \(layout) is not recorded from streams"
            }
        }
    }

    init(descriptor: StreamDescriptor, layout: BatchLayout) throws {
        self.layout = layout
        let sources = descriptor.schema.columns.map { column -> ColumnMapping.Source in
            switch column {
            case .integer(_, let scale, let offset, _): return ColumnMapping.Source(isFloat: false, scale: scale, offset: offset)
            case .float: return ColumnMapping.Source(isFloat: true)
            // Stored as SR ns already (the writer converted it with the boot's anchor).
            case .instant: return ColumnMapping.Source(isFloat: false)
            }
        }
        // Source details are kept as strings; a number is read as its decimal text.
        let details = descriptor.source.compactMapValues { value -> String? in
            switch value {
            case .string(let text): return text
            case .integer(let number): return String(number)
            default: return nil
            }
        }
        let mapping: StreamMapping?
        do throws(MissingStoredColumn) {
            mapping = try SensorFamilies.mapping(
                layout: layout, sensor: descriptor.sensor, names: descriptor.schema.columns.map(\.name),
                sources: sources, details: details)
        } catch {
            let stream = "\(descriptor.sensor.rawValue)@\(descriptor.device)"
            if let problem = error.problem { throw MappingError.unusable(error.column, problem: problem, stream: stream) }
            throw MappingError.missingColumn(error.column, stream: stream)
        }
        guard let mapping else { throw MappingError.notRecorded(layout) }
        self.mapping = mapping
    }

    /// Writes samples `range` of `block` (times and the layout's columns) into `sections`, which
    /// holds exactly `range.count` samples.
    func write(_ block: SampleBlock, _ range: Range<Int>, into sections: BatchFrameSections) {
        precondition(sections.count == range.count && sections.columnCount == layout.columns.count)
        let base = block.sensorTimes.startIndex
        sections.sensorTimes.copy(from: block.sensorTimes[(base + range.lowerBound)..<(base + range.upperBound)])
        let receiveBase = block.receiveTimes.startIndex
        sections.writeTimes.copy(from: block.receiveTimes[(receiveBase + range.lowerBound)..<(receiveBase + range.upperBound)])
        block.withRawColumns(range) { stored in
            mapping.write(stored: stored, count: range.count, bootAnchor: block.bootAnchor, into: sections)
        }
    }

    /// How many ragged values (heart rate's RR intervals) samples `range` of `block` carry: the
    /// frame is sized with it before `write` fills it.
    func raggedCount(_ block: SampleBlock, _ range: Range<Int>) -> Int {
        guard mapping.hasRaggedValues else { return 0 }
        return block.withRawColumns(range) { stored in
            mapping.raggedCount(stored: stored, count: range.count, bootAnchor: block.bootAnchor)
        }
    }
}
