import SensorKitModel

/// The database side of exactly-once (docs/export.md): devices, one resume cursor per device and
/// stream, and the transaction that writes rows and moves their cursor together.
public struct ExportLedger {
    let connection: PostgresConnection

    /// The cursor a stream that was never exported starts from: before any SR time (the daemon
    /// raises it to its window).
    public static let origin: Int64 = -(1 << 62)

    public init(_ connection: PostgresConnection) { self.connection = connection }

    /// The device's key, adding it (or refreshing its `SRDevice` fields) as needed.
    public func device(host: String, _ device: SRDevice) throws -> Int32 {
        let rows = try connection.execute(
            """
            INSERT INTO sensorkit.devices (host_id, identifier, name, model, system_name, system_version, product_type)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (host_id, identifier) DO UPDATE SET name = EXCLUDED.name, model = EXCLUDED.model,
                system_name = EXCLUDED.system_name, system_version = EXCLUDED.system_version,
                product_type = EXCLUDED.product_type, last_seen = now()
            RETURNING device
            """,
            [host, device.identifier, device.name, device.model, device.systemName, device.systemVersion, device.productType])
        guard let text = rows.first?.first ?? nil, let key = Int32(text) else {
            throw PostgresError(message: "no device key returned for \(device.identifier)", sqlState: nil)
        }
        return key
    }

    /// The stream's cursor (SR ns of the last exported sensor time), creating it at `origin`.
    ///
    /// For a sample family the table itself also says where the stream stands: every commit
    /// takes all rows up to its cursor's sensor time, so the newest `sr_time` exported for the
    /// stream is a point to resume after as exact as the cursor. A cursor behind it (a cursors
    /// row restored from an older backup, deleted, or a commit whose rows landed without its
    /// cursor) is moved up to it before anything is fetched, so nothing is inserted twice.
    public func cursor(device: Int32, stream: String, rows family: ExportFamily, named name: String) throws -> Int64 {
        let key = [String(device), stream]
        try connection.execute(
            "INSERT INTO sensorkit.cursors (device, stream, sr_time) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            key + [String(Self.origin)])
        let rows = try connection.execute("SELECT sr_time FROM sensorkit.cursors WHERE device = $1 AND stream = $2", key)
        guard let text = rows.first?.first ?? nil, let value = Int64(text) else {
            throw PostgresError(message: "cursor of \(stream) unreadable", sqlState: nil)
        }
        // A family with a key takes replays without duplicates; its fetch overlap-matches, so its
        // newest row is no resume point (a later record may start before it).
        guard family.identity == nil else { return value }
        let newest = try connection.execute(
            "SELECT max(sr_time) FROM sensorkit.\(family.table) WHERE device = $1 AND stream = $2",
            [String(device), name])
        guard let text = newest.first?.first ?? nil, let exported = Int64(text), exported > value else { return value }
        try connection.execute(
            "UPDATE sensorkit.cursors SET sr_time = $3, updated_at = now() WHERE device = $1 AND stream = $2 AND sr_time < $3",
            key + [String(exported)])
        return exported
    }

    /// Another exporter moved the cursor since this one read it: the stream restarts from the
    /// database's cursor, nothing is written twice.
    public struct CursorMoved: Error, CustomStringConvertible {
        public let stream: String
        public var description: String { "the cursor of \(stream) was moved by another exporter; resuming from it" }
    }

    /// In one transaction: checks the cursor is still `from`, copies the rows, moves the cursor to
    /// `to`. The row lock on the cursor serializes exporters of the same device and stream only.
    /// A family with an identity takes the rows through a staging table and keeps only those not
    /// already there. Returns the rows inserted.
    @discardableResult
    public func commit(_ rows: StreamRows, cursor stream: String, part: ArraySlice<UInt8>, count: Int, from: Int64, to: Int64)
        throws -> Int
    {
        let key = [String(rows.device), stream]
        let family = rows.family
        try connection.execute("BEGIN")
        do throws(any Error) {
            let found = try connection.execute(
                "SELECT sr_time FROM sensorkit.cursors WHERE device = $1 AND stream = $2 FOR UPDATE", key)
            guard let text = found.first?.first ?? nil, Int64(text) == from else { throw CursorMoved(stream: stream) }
            let target = family.identity == nil ? "sensorkit.\(family.table)" : "pg_temp.incoming_\(family.table)"
            if family.identity != nil {
                try connection.execute(
                    "CREATE TEMP TABLE incoming_\(family.table) (LIKE sensorkit.\(family.table)) ON COMMIT DROP")
            }
            let copied = try connection.copyIn(
                family.copyStatement(into: target), [BinaryCopy.header[...], part, BinaryCopy.trailer[...]])
            guard copied == count else {
                throw PostgresError(message: "COPY took \(copied) rows of \(count)", sqlState: nil)
            }
            var inserted = copied
            if family.identity != nil {
                let columns = family.columnNames.joined(separator: ", ")
                let result = try connection.execute(
                    """
                    WITH added AS (INSERT INTO sensorkit.\(family.table) (\(columns)) SELECT \(columns) FROM \(target)
                                   ON CONFLICT DO NOTHING RETURNING 1)
                    SELECT count(*) FROM added
                    """)
                guard let text = result.first?.first ?? nil, let value = Int(text) else {
                    throw PostgresError(message: "no count of rows added to \(family.table)", sqlState: nil)
                }
                inserted = value
            }
            try connection.execute(
                """
                UPDATE sensorkit.cursors SET sr_time = $3, exported_rows = exported_rows + $4, updated_at = now()
                WHERE device = $1 AND stream = $2
                """, key + [String(to), String(inserted)])
            try connection.execute("COMMIT")
            return inserted
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }
}
