import Foundation
import SensorKit
import SensorKitModel
import SensorSystem

/// sensorkit-export's work (docs/export.md): passes over every entitled sensor and device, each
/// fetching `(cursor, now − hold − lag]` through the reader API and committing rows with their
/// cursor; failed passes are retried with doubling waits, resuming from the database's cursors.
public struct Exporter: Sendable {
    public let options: ExportOptions
    public let hostID: String
    let log: @Sendable (String) -> Void
    let sleep: @Sendable (Int64) async -> Void

    public init(
        options: ExportOptions, hostID: String, log: @escaping @Sendable (String) -> Void,
        sleep: @escaping @Sendable (Int64) async -> Void = { try? await Task.sleep(nanoseconds: UInt64(max(0, $0))) }
    ) {
        self.options = options
        self.hostID = hostID
        self.log = log
        self.sleep = sleep
    }

    /// Runs until `--once` finishes (0) or gives up (1); following, never returns.
    public func run() async -> Int32 {
        var database: PostgresConnection?
        var failures = 0
        // `--retry-delay`, doubling up to `--max-retry-delay`, started over by a pass that succeeds.
        var backoff = RetryBackoff(first: options.retryDelay, last: options.maxRetryDelay)
        while true {
            do {
                let connection: PostgresConnection
                if let database {
                    connection = database
                } else {
                    connection = try PostgresConnection(options.database)
                    try ExportSchema.prepare(connection)
                    if failures == 0 { log("connected to PostgreSQL: \(connection.summary)") }
                    database = connection
                }
                let summary = try await pass(ExportLedger(connection))
                if failures > 0 { log("pass done after \(failures) failed attempts; exporting again") }
                failures = 0
                backoff.succeeded()
                if options.once || options.verbose { log(summary) }
                if options.once { return 0 }
                await sleep(options.interval)
            } catch {
                // Whatever failed, nothing half-done survives: the transaction rolled back (or the
                // server will), and the next attempt starts over from the committed cursors.
                database = nil
                ReaderSession.reset()
                failures += 1
                if options.once && failures >= options.retries {
                    log("giving up after \(failures) attempts: \(error)")
                    return 1
                }
                let wait = backoff.failed().wait
                // One line per episode (docs/export.md, "Retries"): a server down or a disk full for
                // hours must not write a line, or a reconnection line, per retry.
                if failures == 1 {
                    log(
                        "pass failed: \(error); retrying in \(Double(wait) / 1e9) s, waits doubling up to \(Double(options.maxRetryDelay) / 1e9) s"
                    )
                } else if options.verbose {
                    log("pass failed (attempt \(failures)): \(error); retrying in \(Double(wait) / 1e9) s")
                }
                await sleep(wait)
            }
        }
    }

    /// One pass: every sensor, every device, its data and its deletion records.
    func pass(_ ledger: ExportLedger) async throws -> String {
        let daemon = try ReaderSession.connection()
        guard let origin = daemon.welcome.timeline?.origin else { throw ExportFailure("the daemon's hello carries no timeline") }
        let status = daemon.call(.daemonStatus)
        guard let nowText = status.info?["now"], let now = Int64(nowText) else {
            throw ExportFailure(status.error.map { "daemonStatus failed: \($0)" } ?? "daemonStatus has no time")
        }
        let to = now.subtractingSaturating(options.hold).subtractingSaturating(options.lag)
        var exported = 0, streams = 0
        for sensor in try sensors(daemon) {
            guard let layout = BatchLayout.of(sensor), let family = ExportFamily.of(layout),
                let deletions = ExportFamily.of(.deletionRecords), let name = SensorCatalog.descriptor(for: sensor)?.name
            else {
                log("\(sensor.rawValue): no sample layout, skipped")
                continue
            }
            let reader = SRReader(sensor: sensor)
            switch try await reader.authorizationStatus {
            case .authorized: break
            case .notDetermined:
                SRSensorReader.requestAuthorization(sensors: [sensor]) { _ in }
                log("\(name): waiting for consent (sensorkitctl consent \(ReaderSession.appIdentifier))")
                continue
            case .denied:
                log("\(name): consent denied, skipped")
                continue
            @unknown default:
                continue
            }
            try await reader.startRecording()
            for device in try await reader.devices() {
                let key = try ledger.device(host: hostID, device)
                exported += try await stream(
                    reader, family: family, name: name, cursor: sensor.rawValue,
                    device: device.identifier, key: key, to: to, origin: origin, ledger: ledger)
                if let tombstones = sensor.deletionRecordSensor {
                    exported += try await stream(
                        SRReader(sensor: tombstones), family: deletions, name: name, cursor: tombstones.rawValue,
                        device: device.identifier, key: key, to: to, origin: origin, ledger: ledger)
                }
                streams += 2
            }
        }
        return "pass done: \(exported) rows from \(streams) streams, released up to SR \(to)"
    }

    /// Exports one stream of one device from its cursor to `to`; the rows committed.
    func stream(
        _ reader: SRReader, family: ExportFamily, name: String, cursor stream: String, device: String, key: Int32,
        to: Int64, origin: Int64, ledger: ExportLedger
    ) async throws -> Int {
        var cursor = try ledger.cursor(device: key, stream: stream, rows: family, named: name)
        guard cursor < to else { return 0 }
        var rows = StreamRows(family: family, device: key, stream: name, origin: origin)
        var total = 0
        func commit(final: Bool) throws {
            guard let part = rows.committable(final: final) else { return }
            let inserted = try ledger.commit(
                rows, cursor: stream, part: part.bytes, count: part.rows, from: cursor, to: part.cursor)
            rows.committed(rows: part.rows)
            cursor = part.cursor
            total += inserted
            if options.verbose { log("\(name) \(device): committed \(inserted) of \(part.rows) rows up to SR \(part.cursor)") }
        }
        for try await batch in try reader.batches(device: device, fromNanoseconds: cursor, toNanoseconds: to, window: 16) {
            guard batch.layout == family.layout else { throw StreamRows.ShapeError(stream: name) }
            try rows.append(
                sensorTimes: batch.sensorTimes, receiveTimes: batch.receiveTimes, columns: batch.columnValues,
                ragged: batch.ragged)
            if rows.rows >= options.commitRows { try commit(final: false) }
        }
        try commit(final: true)
        return total
    }

    /// The sensors to export: those named, or every sensor the app is entitled to.
    func sensors(_ daemon: ReaderConnection) throws -> [SRSensor] {
        if !options.sensors.isEmpty {
            return try options.sensors.map { text in
                guard let sensor = SensorCatalog.sensor(named: text) else { throw ExportFailure("unknown sensor \(text)") }
                return sensor
            }
        }
        let reply = daemon.call(.status)
        if let error = reply.error { throw error.srError }
        return (reply.states ?? []).map { SRSensor($0.sensor) }.filter { BatchLayout.of($0) != nil }
    }
}

public struct ExportFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
