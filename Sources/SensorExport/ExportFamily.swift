import SensorKitModel

/// One table of the export schema: a sensor family (a fetch layout, docs/protocol.md §5.2) and how
/// each value column is typed in PostgreSQL (docs/export.md).
public struct ExportFamily: Sendable {
    /// Where a value column's data comes from in a fetched batch.
    public enum Value: Sendable {
        /// `double precision` from batch column `i`.
        case real(Int)
        /// `smallint` from batch column `i` (NULL when not an exact 16-bit integer).
        case small(Int)
        /// `integer` from batch column `i` (NULL when not an exact 32-bit integer).
        case integer(Int)
        /// `bigint` from batch column `i` (SR ns or counts carried as f64; NULL when not exact).
        case big(Int)
        /// `boolean` from a 0/1 batch column `i` (NULL otherwise).
        case flag(Int)
        /// `double precision[]`: each sample's share of the ragged values, its length in column `i`.
        case ragged(Int)
        /// `text`: the desktop id coded in `DesktopIDCode.words` columns from column `i` (NULL when unnamed).
        case desktopID(Int)

        var sqlType: String {
            switch self {
            case .real: return "double precision"
            case .small: return "smallint"
            case .integer: return "integer"
            case .big: return "bigint"
            case .flag: return "boolean"
            case .ragged: return "double precision[]"
            case .desktopID: return "text"
            }
        }
    }

    public let layout: BatchLayout
    public let table: String
    public let values: [(name: String, value: Value)]
    /// The columns that identify a row, for a family whose fetch returns rows again: deletion
    /// records overlap-match `(from, to]`, so the newest one exported comes back on every pass.
    /// Such a table has a unique key on these columns and takes rows through a staging table with
    /// `ON CONFLICT DO NOTHING` (docs/export.md, "Exactly once"). Nil for the sample families:
    /// two samples may share every column, and their fetch never returns a row twice.
    public let identity: [String]?

    init(layout: BatchLayout, table: String, values: [(name: String, value: Value)], identity: [String]? = nil) {
        self.layout = layout
        self.table = table
        self.values = values
        self.identity = identity
    }

    /// The columns every family table starts with.
    public static let leadingColumns: [(name: String, type: String)] = [
        ("device", "integer NOT NULL"), ("stream", "text NOT NULL"), ("sr_time", "bigint NOT NULL"),
        ("receive_sr_time", "bigint NOT NULL"), ("wall_time", "timestamptz NOT NULL"),
    ]

    public var columnNames: [String] { Self.leadingColumns.map(\.name) + values.map(\.name) }
    public var fieldCount: Int16 { Int16(Self.leadingColumns.count + values.count) }

    public var copyStatement: String { copyStatement(into: "sensorkit.\(table)") }

    public func copyStatement(into relation: String) -> String {
        "COPY \(relation) (\(columnNames.joined(separator: ", "))) FROM STDIN (FORMAT binary)"
    }

    public static let all: [ExportFamily] = [
        ExportFamily(layout: .motion, table: "motion", values: [("x", .real(0)), ("y", .real(1)), ("z", .real(2))]),
        ExportFamily(layout: .pressure, table: "pressure", values: [("pressure_kpa", .real(0)), ("temperature_c", .real(1))]),
        ExportFamily(
            layout: .ambientLight, table: "ambient_light",
            values: [("lux", .real(0)), ("chromaticity_x", .real(1)), ("chromaticity_y", .real(2)), ("placement", .small(3))]),
        ExportFamily(layout: .pedometer, table: "pedometer", values: [("end_sr_time", .big(0)), ("steps", .big(1))]),
        ExportFamily(
            layout: .heartRate, table: "heart_rate",
            values: [("bpm", .real(0)), ("confidence", .small(1)), ("rr_intervals_s", .ragged(2))]),
        ExportFamily(
            layout: .wrist, table: "wrist",
            values: [("on_wrist", .flag(0)), ("wrist_location", .small(1)), ("crown_orientation", .small(2))]),
        ExportFamily(
            layout: .electrocardiogram, table: "electrocardiogram",
            values: [
                ("microvolts", .real(0)), ("lead", .small(1)), ("flags", .integer(2)), ("frequency_hz", .real(3)),
                ("session_start_sr_time", .big(4)),
            ]),
        ExportFamily(
            layout: .photoplethysmogram, table: "photoplethysmogram",
            values: PhotoplethysmogramFamily.Column.allCases.map { column in
                (column.rawValue, column == .status ? .integer(column.ordinal) : .real(column.ordinal))
            }),
        ExportFamily(
            layout: .keyboardMetrics, table: "keyboard_metrics",
            values: [
                ("duration_s", .real(0)), ("taps", .big(1)), ("deletes", .big(2)), ("words", .big(3)),
                ("typing_episodes", .big(4)), ("pauses", .big(5)), ("typing_duration_s", .real(6)),
                ("typing_speed_cps", .real(7)),
            ]),
        ExportFamily(
            layout: .deviceUsage, table: "device_usage",
            values: [
                ("entry", .small(0)), ("duration_s", .real(1)), ("screen_wakes", .big(2)), ("unlocks", .big(3)),
                ("unlock_duration_s", .real(4)), ("wake_source", .small(5)), ("unlock_source", .small(6)),
                ("category", .small(7)), ("app", .desktopID(8)), ("usage_time_s", .real(17)),
                ("text_input_sessions", .big(18)), ("relative_start_s", .real(19)), ("notification_event", .small(20)),
                ("notification_events", .big(21)),
            ]),
        ExportFamily(
            layout: .phoneUsage, table: "phone_usage",
            values: [
                ("duration_s", .real(0)), ("incoming_calls", .big(1)), ("outgoing_calls", .big(2)),
                ("call_duration_s", .real(3)), ("unique_contacts", .big(4)),
            ]),
        ExportFamily(
            layout: .messagesUsage, table: "messages_usage",
            values: [
                ("duration_s", .real(0)), ("incoming_messages", .big(1)), ("outgoing_messages", .big(2)),
                ("unique_contacts", .big(3)),
            ]),
        ExportFamily(
            layout: .visits, table: "visits",
            values: [
                ("distance_from_home_m", .real(0)), ("arrival_start_age_s", .real(1)), ("arrival_end_age_s", .real(2)),
                ("departure_start_age_s", .real(3)), ("departure_end_age_s", .real(4)), ("category", .small(5)),
                ("identifier0", .big(6)), ("identifier1", .big(7)), ("identifier2", .big(8)), ("identifier3", .big(9)),
            ]),
        ExportFamily(
            layout: .deletionRecords, table: "deletions", values: [("end_sr_time", .big(0)), ("reason", .small(1))],
            identity: ["device", "stream", "sr_time", "end_sr_time", "reason"]),
    ]

    public static func of(_ layout: BatchLayout) -> ExportFamily? { all.first { $0.layout == layout } }
}
