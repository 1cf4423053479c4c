/// The export schema in PostgreSQL (docs/export.md): versioned, created idempotently. Every
/// exporter runs `prepare` at start; the steps run under a transaction-scoped advisory lock so
/// exporters starting together do not race on `CREATE`, and a database whose schema is newer than
/// this exporter is refused rather than written in a shape it does not know.
public enum ExportSchema {
    public static let version = 3
    /// The photoplethysmogram table's value columns in versions 1 and 2.
    static let firstPhotoplethysmogramColumns: Set<String> = ["ppg0", "ppg1", "ppg2", "ppg3", "ambient"]
    /// `pg_advisory_xact_lock` key for schema changes (ASCII "skexport").
    static let lockKey = "8317141090425835124"

    /// The statements that bring an empty database to `version`, by version.
    static var steps: [Int: [String]] {
        var first = [
            "CREATE SCHEMA IF NOT EXISTS sensorkit",
            """
            CREATE TABLE IF NOT EXISTS sensorkit.schema_version (
                version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())
            """,
            """
            CREATE TABLE IF NOT EXISTS sensorkit.devices (
                device integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                host_id text NOT NULL, identifier text NOT NULL,
                name text NOT NULL, model text NOT NULL, system_name text NOT NULL,
                system_version text NOT NULL, product_type text NOT NULL,
                first_seen timestamptz NOT NULL DEFAULT now(), last_seen timestamptz NOT NULL DEFAULT now(),
                UNIQUE (host_id, identifier))
            """,
            """
            CREATE TABLE IF NOT EXISTS sensorkit.cursors (
                device integer NOT NULL REFERENCES sensorkit.devices, stream text NOT NULL,
                sr_time bigint NOT NULL, exported_rows bigint NOT NULL DEFAULT 0,
                updated_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (device, stream))
            """,
        ]
        for family in ExportFamily.all {
            let columns =
                ExportFamily.leadingColumns.map { "\($0.name) \($0.type)" }
                + family.values.map { "\($0.name) \($0.value.sqlType)" }
            first.append("CREATE TABLE IF NOT EXISTS sensorkit.\(family.table) (\(columns.joined(separator: ", ")))")
            first.append(
                "CREATE INDEX IF NOT EXISTS \(family.table)_device_stream_time ON sensorkit.\(family.table) (device, stream, sr_time)"
            )
            first.append(
                "CREATE INDEX IF NOT EXISTS \(family.table)_wall_time ON sensorkit.\(family.table) USING brin (wall_time)")
        }
        // Version 2: a unique key on the tables whose fetch returns rows again (the deletion
        // records), so a replay inserts nothing. Version 1 inserted the newest deletion record of
        // each stream again on every pass: those copies go first, or the key cannot be made.
        var second: [String] = []
        for family in ExportFamily.all {
            guard let identity = family.identity else { continue }
            let same = identity.map { "a.\($0) IS NOT DISTINCT FROM b.\($0)" }.joined(separator: " AND ")
            second.append(
                "DELETE FROM sensorkit.\(family.table) a USING sensorkit.\(family.table) b WHERE a.ctid > b.ctid AND \(same)")
            second.append(
                "CREATE UNIQUE INDEX IF NOT EXISTS \(family.table)_identity ON sensorkit.\(family.table) (\(identity.joined(separator: ", ")))"
            )
        }
        // Version 3: the wide PMD PPG frame types (docs/ble.md §2) give the photoplethysmogram
        // table the channels beyond ppg0…ppg3 and ambient, and the status word; a table made by
        // version 1 gains them, empty (NULL) in its older rows.
        let ppg = ExportFamily.of(.photoplethysmogram)!
        let third = ppg.values.filter { !ExportSchema.firstPhotoplethysmogramColumns.contains($0.name) }.map {
            "ALTER TABLE sensorkit.\(ppg.table) ADD COLUMN IF NOT EXISTS \($0.name) \($0.value.sqlType)"
        }
        return [1: first, 2: second, 3: third]
    }

    public struct TooNew: Error, CustomStringConvertible {
        public let found: Int
        public var description: String {
            "the database's sensorkit schema is version \(found), newer than this exporter's \(ExportSchema.version); upgrade sensorkit-export"
        }
    }

    /// Brings the schema to `version`; returns the version found before (0 for none).
    @discardableResult
    public static func prepare(_ connection: PostgresConnection) throws -> Int {
        try connection.execute("BEGIN")
        do throws(any Error) {
            try connection.execute("SELECT pg_advisory_xact_lock($1::bigint)", [lockKey])
            let exists = try connection.execute("SELECT to_regclass('sensorkit.schema_version') IS NOT NULL")
            var found = 0
            if exists.first?.first == "t" {
                let rows = try connection.execute("SELECT coalesce(max(version), 0) FROM sensorkit.schema_version")
                found = (rows.first?.first ?? nil).flatMap { Int($0) } ?? 0
            }
            if found > version { throw TooNew(found: found) }
            for step in stride(from: found + 1, through: version, by: 1) {
                for statement in steps[step] ?? [] { try connection.execute(statement) }
                try connection.execute(
                    "INSERT INTO sensorkit.schema_version (version) VALUES ($1) ON CONFLICT DO NOTHING", [String(step)])
            }
            try connection.execute("COMMIT")
            return found
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }
}
