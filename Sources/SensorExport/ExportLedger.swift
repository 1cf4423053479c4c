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
        let rows = try connection.execute("""
            INSERT INTO sensorkit.devices (host_id, identifier, name, model, system_name, system_version, product_type)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (host_id, identifier) DO UPDATE SET name = EXCLUDED.name, model = EXCLUDED.model,
                system_name = EXCLUDED.system_name, system_version = EXCLUDED.system_version,
                product_type = EXCLUDED.product_type, last_seen = now()
            RETURNING device
            """, [host, device.identifier, device.name, device.model, device.systemName, device.systemVersion, device.productType])
        guard let text = rows.first?.first ?? nil, let key = Int32(text) else {
            throw PostgresError(message: "no device key returned for \(device.identifier)", sqlState: nil)
        }
        return key
    }

    /// The stream's cursor (SR ns of the last exported sensor time), creating it at `origin`.
    public func cursor(device: Int32, stream: String) throws -> Int64 {
        try connection.execute("INSERT INTO sensorkit.cursors (device, stream, sr_time) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                               [String(device), stream, String(Self.origin)])
        let rows = try connection.execute("SELECT sr_time FROM sensorkit.cursors WHERE device = $1 AND stream = $2",
                                          [String(device), stream])
        guard let text = rows.first?.first ?? nil, let value = Int64(text) else {
            throw PostgresError(message: "cursor of \(stream) unreadable", sqlState: nil)
        }
        return value
    }

    /// Another exporter moved the cursor since this one read it: the stream restarts from the
    /// database's cursor, nothing is written twice.
    public struct CursorMoved: Error, CustomStringConvertible {
        public let stream: String
        public var description: String { "the cursor of \(stream) was moved by another exporter; resuming from it" }
    }

    /// In one transaction: checks the cursor is still `from`, copies the rows, moves the cursor to
    /// `to`. The row lock on the cursor serializes exporters of the same device and stream only.
    public func commit(_ rows: StreamRows, cursor stream: String, part: ArraySlice<UInt8>, count: Int, from: Int64, to: Int64) throws {
        let key = [String(rows.device), stream]
        try connection.execute("BEGIN")
        do throws(any Error) {
            let found = try connection.execute("SELECT sr_time FROM sensorkit.cursors WHERE device = $1 AND stream = $2 FOR UPDATE", key)
            guard let text = found.first?.first ?? nil, Int64(text) == from else { throw CursorMoved(stream: stream) }
            let copied = try connection.copyIn(rows.family.copyStatement, [BinaryCopy.header[...], part, BinaryCopy.trailer[...]])
            guard copied == count else {
                throw PostgresError(message: "COPY took \(copied) rows of \(count)", sqlState: nil)
            }
            try connection.execute("""
                UPDATE sensorkit.cursors SET sr_time = $3, exported_rows = exported_rows + $4, updated_at = now()
                WHERE device = $1 AND stream = $2
                """, key + [String(to), String(count)])
            try connection.execute("COMMIT")
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }
}
