import SensorKitModel

/// The PMD PPG frame types a stream can store, each with the photoplethysmogram family's columns
/// its values go to, in frame order (docs/ble.md §2 "PPG frame types"). A stream is registered for
/// one kind and stores exactly its columns: a wearable that sends another frame type has its
/// samples stored in that kind's stream, never in columns meant for different channels.
public enum PPGFrameKind: UInt8, CaseIterable, Hashable, Sendable {
    /// Three optical channels and ambient.
    case type0 = 0
    /// Sixteen optical channels and a status word.
    case type7 = 7
    /// Eight green, six red and six infrared channels (in that order) and a status word.
    case type10 = 10

    public typealias Column = PhotoplethysmogramFamily.Column

    /// The kind of a decoded PPG frame; nil for a frame type without one.
    public init?(frame: PMDFrame) {
        guard frame.measurementType == PMDMeasurementType.ppg.rawValue else { return nil }
        self.init(rawValue: frame.frameType)
    }

    /// The column each value of a sample goes to, in the order the frame carries them.
    public var columns: [Column] {
        switch self {
        case .type0: [.ppg0, .ppg1, .ppg2, .ambient]
        case .type7: Array(Column.allCases[0..<16]) + [.status]
        case .type10: Array(Column.allCases[0..<20]) + [.status]
        }
    }

    /// The stored schema of a stream of this kind: every value a raw count, the status word a
    /// plain number.
    var schema: SourceSchema<Column> {
        SourceSchema(
            Dictionary(uniqueKeysWithValues: columns.map { ($0, $0 == .status ? ColumnKind.count("") : .count("count")) }))
    }

    /// What a stream of this kind adds to its wearable's PPG stream identity: nothing for type 0
    /// (its streams keep the identity they had before the wide types were stored), the frame type
    /// otherwise.
    var sourceSuffix: String { self == .type0 ? "" : "#frame\(rawValue)" }

    /// The status word keeps its 24 bits unsigned: a delta-coded frame sign-extends its 24-bit
    /// reference value, and the word is bits, not a signed count.
    static let statusMask: Int64 = 0xFF_FFFF
}
