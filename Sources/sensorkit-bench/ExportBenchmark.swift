import Foundation
import Glibc
import SensorExport
import SensorSimulation
import SensorSystem

/// Section "export": rows per second into PostgreSQL the way sensorkit-export writes them
/// (fetched batches of 8 192 accelerometer samples → binary COPY tuples → transactions of 100 000
/// rows with their cursor), beside `psql \copy` of the same rows from a binary COPY file into the
/// same table of the same server, and the exporter's CPU per million rows. One million rows (about
/// 2.8 h of 100 Hz data); a day (8.64 M) scales linearly (docs/export.md).
enum ExportBenchmark {
    static let rows = 1_000_000
    static let batch = 8_192

    static func run() throws {
        print("== export: \(rows) accelerometer rows into PostgreSQL 15 (scratch server, Unix socket, fsync off)")
        let postgres = try ScratchPostgres()
        defer { postgres.close() }
        try postgres.psql("CREATE DATABASE bench")
        let connection = try PostgresConnection(postgres.conninfo("bench"))
        try ExportSchema.prepare(connection)
        let ledger = ExportLedger(connection)
        let device = try ledger.device(host: "bench", HostIdentity.read().device)

        // The batches a fetch delivers: 100 Hz, slowly varying values in g.
        let times = (0..<rows).map { Int64($0) * 10_000_000 }
        let columns = (0..<3).map { axis in (0..<rows).map { sin(Double($0) / 100 + Double(axis)) * 0.5 } }

        // Exporter path, timed with its own CPU (the server's is apart).
        let stream = "com.apple.SensorKit.motion.accelerometer"
        let cpuBefore = cpuSeconds()
        let started = Date()
        var pending = StreamRows(family: ExportFamily.of(.motion)!, device: device, stream: "accelerometer", origin: 0)
        var cursor = try ledger.cursor(device: device, stream: stream, rows: ExportFamily.of(.motion)!, named: "accelerometer")
        func commit(final: Bool) throws {
            guard let part = pending.committable(final: final) else { return }
            try ledger.commit(pending, cursor: stream, part: part.bytes, count: part.rows, from: cursor, to: part.cursor)
            pending.committed(rows: part.rows)
            cursor = part.cursor
        }
        for start in stride(from: 0, to: rows, by: batch) {
            let range = start..<min(start + batch, rows)
            try pending.append(
                sensorTimes: Array(times[range]), receiveTimes: Array(times[range]),
                columns: columns.map { Array($0[range]) }, ragged: [])
            if pending.rows >= 100_000 { try commit(final: false) }
        }
        try commit(final: true)
        let exportSeconds = Date().timeIntervalSince(started)
        let exportCPU = cpuSeconds() - cpuBefore
        let counted = try postgres.psql("SELECT count(*) FROM sensorkit.motion", database: "bench")

        // Anchor: the same rows as one binary COPY file, loaded by psql's \copy into the emptied table.
        var file = StreamRows(family: ExportFamily.of(.motion)!, device: device, stream: "accelerometer", origin: 0)
        try file.append(sensorTimes: times, receiveTimes: times, columns: columns, ragged: [])
        let path = postgres.folder + "/motion.copy"
        let bytes = BinaryCopy.header + file.copy.bytes + BinaryCopy.trailer
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            throw ExportFailure("cannot write \(path)")
        }
        try postgres.psql("TRUNCATE sensorkit.motion", database: "bench")
        let columnList = ExportFamily.of(.motion)!.columnNames.joined(separator: ", ")
        let anchorStart = Date()
        try ScratchPostgres.run(
            [
                "/usr/bin/psql", "-X", "-q", "-h", postgres.folder, "-U", "postgres", "-d", "bench", "-c",
                "\\copy sensorkit.motion (\(columnList)) from '\(path)' with (format binary)",
            ], seconds: 600)
        let anchorSeconds = Date().timeIntervalSince(anchorStart)

        let exportRate = Double(rows) / exportSeconds
        let anchorRate = Double(rows) / anchorSeconds
        print("  rows in table after export: \(counted.first ?? "?")")
        print(
            String(
                format: "  sensorkit-export path: %.0f rows/s (%.2f s; a day of 100 Hz ≈ %.0f s)", exportRate, exportSeconds,
                8_640_000 / exportRate))
        print(
            String(
                format: "  anchor psql \\copy (binary file, %.0f MB): %.0f rows/s (%.2f s)", Double(bytes.count) / 1e6,
                anchorRate,
                anchorSeconds))
        print(String(format: "  ratio: %.2f× the anchor (target ≥ 0.5×)", exportRate / anchorRate))
        print(
            String(
                format: "  exporter CPU: %.2f s per million rows (user + system, this process)", exportCPU / (Double(rows) / 1e6))
        )
    }

    /// This process's CPU time (all threads, user + system).
    static func cpuSeconds() -> Double {
        Double((try? SystemCalls.clockNanoseconds(CLOCK_PROCESS_CPUTIME_ID)) ?? 0) / 1e9
    }
}
