import SensorChunks
import SensorKitModel

/// Schema 4 → 5: an ECG stream's `sessionStart` becomes an `.instant` column. Builds before
/// kept it as an integer column of boot-clock ns (unit "ns"), while docs/protocol.md §5.2 and
/// the export say SR ns; this step adds each chunk's boot anchor to those values, the same
/// conversion the writer now applies to an instant column on its way in, and marks the column
/// `.instant` in the stream's descriptor, so the stream goes on under the daemon's new schema.
/// It runs once, inside the transaction that bumps the version: a crash leaves schema 4 and the
/// old values, and the next open converts them again from the start.
enum SessionStartMigration {
    static let column = "sessionStart"

    static func run(_ db: SQLiteDatabase) throws {
        let select = try db.prepare("SELECT id, descriptor FROM streams WHERE sensor = ?")
        try select.bind(1, SRSensor.electrocardiogram.rawValue)
        var streams: [(id: Int64, descriptor: StreamDescriptor, index: Int)] = []
        while try select.step() {
            let descriptor = try StreamDescriptor.fromJSON(select.string(1))
            guard
                let index = descriptor.schema.columns.firstIndex(where: {
                    if case .integer(column, 1, 0, "ns") = $0 { return true }
                    return false
                })
            else { continue }
            streams.append((select.int64(0), descriptor, index))
        }
        for stream in streams {
            try convertChunks(db, stream: stream.id, column: stream.index, roles: stream.descriptor.columnRoles)
            var descriptor = stream.descriptor
            descriptor.schema.columns[stream.index] = .instant(name: column)
            let update = try db.prepare("UPDATE streams SET descriptor = ? WHERE id = ?")
            try update.bind(1, descriptor.canonicalJSON())
            try update.bind(2, stream.id)
            try update.run()
        }
    }

    /// Adds each chunk's boot anchor to column `column` of every chunk of `stream`. A chunk that
    /// does not decode is left as it is: a read finds it corrupt and replaces it with a deletion
    /// record, as for any corrupt chunk.
    private static func convertChunks(_ db: SQLiteDatabase, stream: Int64, column: Int, roles: [ColumnRole]) throws {
        let chunks = try db.prepare(
            "SELECT chunks.id, chunks.tier, boots.anchor FROM chunks JOIN boots ON boots.id = chunks.boot WHERE chunks.stream = ?"
        )
        try chunks.bind(1, stream)
        var rows: [(id: Int64, tier: Int64, anchor: Int64)] = []
        while try chunks.step() { rows.append((chunks.int64(0), chunks.int64(1), chunks.int64(2))) }
        let read = try db.prepare("SELECT bytes FROM chunks WHERE id = ?")
        let update = try db.prepare("UPDATE chunks SET bytes = ?, byte_count = ? WHERE id = ?")
        for row in rows {
            read.reset()
            try read.bind(1, row.id)
            guard try read.step(), var samples = try? ChunkCodec.decode(read.blob(0)).samples,
                samples.columns.count == roles.count
            else { continue }
            samples.columns[column] = samples.columns[column].map { $0 &+ row.anchor }
            let bytes = ChunkCodec.encode(samples, roles: roles, effort: row.tier == 0 ? .fast : .best)
            update.reset()
            try update.bind(1, blob: bytes)
            try update.bind(2, Int64(bytes.count))
            try update.bind(3, row.id)
            try update.run()
        }
    }
}
