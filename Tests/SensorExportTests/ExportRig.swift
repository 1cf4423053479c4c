import Foundation
import Glibc
import SensorExport
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem

/// A real sensorkitd recording a generated accelerometer with a 1 s hold, a real PostgreSQL, and
/// the real `sensorkit-export` binary run as `nobody` under the app `org.sensorkitd.export`.
final class ExportRig {
    static let app = "org.sensorkitd.export"
    static let hostID = "rig-host"
    let postgres: ScratchPostgres
    let harness: DaemonHarness
    let database = "study"

    /// One fetched or exported accelerometer sample.
    struct Row: Equatable, CustomStringConvertible {
        var sensorTime: Int64, receiveTime: Int64, x: Double, y: Double, z: Double
        var description: String { "(\(sensorTime), \(receiveTime), \(x), \(y), \(z))" }
    }

    /// One fetched or exported deletion record of the accelerometer.
    struct Deletion: Equatable, CustomStringConvertible {
        var start: Int64, end: Int64, reason: Int
        var description: String { "(\(start), \(end), \(reason))" }
    }

    static let deletionStream = SRSensor.accelerometer.deletionRecordSensor!.rawValue

    /// `gapEvery` n > 0: the source loses every n-th tick (10 ms) and reports it, so deletion
    /// records keep arriving while samples do. `light`: a generated ambient light sensor at
    /// 50 Hz as well (a second family table, `ambient_light`).
    convenience init(rate: Int, gapEvery: Int = 0, light: Bool = false) throws {
        try self.init(
            sources: [GeneratedSource(sensor: .accelerometer, rate: rate, perTick: max(1, rate / 100), gapEvery: gapEvery)]
                + (light ? [GeneratedSource(sensor: .ambientLightSensor, rate: 50, perTick: 5)] : []),
            entitlements: ["motion-accelerometer"] + (light ? ["ambient-light-sensor"] : []),
            sensors: [.accelerometer] + (light ? [.ambientLightSensor] : []))
    }

    /// The daemon with `sources`, the export app entitled to and granted `sensors`; `config` after
    /// the 1 s hold.
    init(sources: [any SensorSource], entitlements: [String], sensors: [SRSensor], config: String = "") throws {
        postgres = try ScratchPostgres()
        do {
            try postgres.psql("CREATE DATABASE \(database)")
            harness = try DaemonHarness(config: "[store]\nhold = 1s\n" + config, sources: sources) { folder in
                try DaemonHarness.writeApp(
                    Self.app, in: folder + "/apps.d", entitlements: entitlements, users: ["root", "nobody"])
            }
            try harness.grant(sensors, to: Self.app)
        } catch {
            postgres.close()
            throw error
        }
    }

    func close() {
        harness.stop()
        postgres.close()
    }

    /// The exporter's command line, as `nobody`.
    func command(_ extra: [String]) -> [String] {
        [
            "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
            DaemonHarness.productsFolder + "/sensorkit-export",
            "--socket", harness.socket, "--app", Self.app, "--database", postgres.conninfo(database),
            "--hold", "1s", "--lag", "0", "--host-id", Self.hostID, "--retry-delay", "100ms", "--max-retry-delay", "400ms",
        ] + extra
    }

    /// Runs `sensorkit-export --once` to its end (at most 60 s); its exit status and output.
    func exportOnce(_ extra: [String] = []) throws -> (status: Int32, output: String) {
        let log = postgres.folder + "/once.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let fd = open(log, O_WRONLY | O_APPEND)
        defer { Glibc.close(fd) }
        let child = try ChildProcess(
            ["/usr/bin/timeout", "--kill-after=5", "60"] + command(["--once"] + extra),
            stdin: 0, stdout: fd, stderr: fd)
        child.wait()
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: log)
        return (child.exitStatus ?? -1, output)
    }

    /// Starts a following exporter; its output goes to `follow.log` in the scratch folder.
    func follow(_ extra: [String] = []) throws -> ChildProcess {
        let fd = open(postgres.folder + "/follow.log", O_WRONLY | O_APPEND | O_CREAT, 0o644)
        defer { Glibc.close(fd) }
        return try ChildProcess(command(["--interval", "50ms"] + extra), stdin: 0, stdout: fd, stderr: fd)
    }

    var followLog: String { (try? String(contentsOfFile: postgres.folder + "/follow.log", encoding: .utf8)) ?? "" }

    /// Every accelerometer sample in `(−∞, through]`, fetched directly as the app (`through` must
    /// be released: at most now − hold).
    func directRows(through: Int64) throws -> [Row] {
        let connection = try harness.connect(app: Self.app)
        defer { connection.close() }
        let (batches, reply) = DaemonHarness.fetchAll(connection, sensor: .accelerometer, from: -(1 << 62), to: through)
        if let error = reply.error { throw error }
        return batches.flatMap { batch in
            (0..<batch.sensorTimes.count).map {
                Row(
                    sensorTime: batch.sensorTimes[$0], receiveTime: batch.writeTimes[$0],
                    x: batch.columns[0][$0], y: batch.columns[1][$0], z: batch.columns[2][$0])
            }
        }
    }

    /// SR ns up to which the daemon has released data now (its hold is 1 s).
    var released: Int64 { harness.now - 1_000_000_000 }

    /// The accelerometer cursor in the database (nil before the first commit); `stream` names
    /// another (`deletionStream`).
    func cursor(_ stream: String = "com.apple.SensorKit.motion.accelerometer") throws -> Int64? {
        try postgres.psql(
            "SELECT sr_time FROM sensorkit.cursors WHERE stream = '\(stream)'",
            database: database
        ).first.flatMap { Int64($0) }
    }

    /// Sensor and receive time of every ambient light sample in `(−∞, through]`, fetched directly.
    func directLightTimes(through: Int64) throws -> [[Int64]] {
        let connection = try harness.connect(app: Self.app)
        defer { connection.close() }
        let (batches, reply) = DaemonHarness.fetchAll(connection, sensor: .ambientLightSensor, from: -(1 << 62), to: through)
        if let error = reply.error { throw error }
        return batches.flatMap { batch in (0..<batch.sensorTimes.count).map { [batch.sensorTimes[$0], batch.writeTimes[$0]] } }
    }

    /// Sensor and receive time of every exported ambient light row, in sensor-time order.
    func databaseLightTimes() throws -> [[Int64]] {
        try postgres.psql(
            """
            SELECT l.sr_time, l.receive_sr_time FROM sensorkit.ambient_light l JOIN sensorkit.devices d USING (device)
            WHERE d.host_id = '\(Self.hostID)' AND d.identifier = 'host' ORDER BY l.sr_time, l.receive_sr_time
            """, database: database
        ).map { $0.split(separator: "|").map { Int64($0)! } }
    }

    /// Every accelerometer deletion record starting in `(−∞, through]`, fetched directly as the app.
    func directDeletions(through: Int64) throws -> [Deletion] {
        let connection = try harness.connect(app: Self.app)
        defer { connection.close() }
        let (batches, reply) = DaemonHarness.fetchAll(
            connection, sensor: SRSensor.accelerometer.deletionRecordSensor!,
            from: -(1 << 62), to: through)
        if let error = reply.error { throw error }
        return batches.flatMap { batch in
            (0..<batch.sensorTimes.count).map {
                Deletion(start: batch.sensorTimes[$0], end: Int64(batch.columns[0][$0]), reason: Int(batch.columns[1][$0]))
            }
        }
    }

    /// The exported accelerometer deletion records, in the fetch's order (start, then end).
    func databaseDeletions() throws -> [Deletion] {
        try postgres.psql(
            """
            SELECT r.sr_time, r.end_sr_time, r.reason FROM sensorkit.deletions r
            JOIN sensorkit.devices d USING (device)
            WHERE d.host_id = '\(Self.hostID)' AND d.identifier = 'host' AND r.stream = 'accelerometer'
            ORDER BY r.sr_time, r.end_sr_time
            """, database: database
        ).map { line in
            let f = line.split(separator: "|").map(String.init)
            return Deletion(start: Int64(f[0])!, end: Int64(f[1])!, reason: Int(f[2])!)
        }
    }

    /// The exported accelerometer rows, in sensor-time order.
    func databaseRows() throws -> [Row] {
        try postgres.psql(
            """
            SELECT m.sr_time, m.receive_sr_time, m.x, m.y, m.z FROM sensorkit.motion m
            JOIN sensorkit.devices d USING (device)
            WHERE d.host_id = '\(Self.hostID)' AND d.identifier = 'host' AND m.stream = 'accelerometer'
            ORDER BY m.sr_time, m.receive_sr_time
            """, database: database
        ).map { line in
            let f = line.split(separator: "|").map(String.init)
            return Row(sensorTime: Int64(f[0])!, receiveTime: Int64(f[1])!, x: Double(f[2])!, y: Double(f[3])!, z: Double(f[4])!)
        }
    }

    /// Every sample of `sensor` in `(−∞, through]` fetched directly as the app: sensor time,
    /// receive time, then the batch's columns, as doubles.
    func directValues(_ sensor: SRSensor, through: Int64) throws -> [[Double]] {
        let connection = try harness.connect(app: Self.app)
        defer { connection.close() }
        let (batches, reply) = DaemonHarness.fetchAll(connection, sensor: sensor, from: -(1 << 62), to: through)
        if let error = reply.error { throw error }
        return batches.flatMap { batch in
            (0..<batch.count).map { i in
                [Double(batch.sensorTimes[i]), Double(batch.writeTimes[i])] + batch.columns.map { $0[i] }
            }
        }
    }

    /// Every exported row of `family`'s table for this host, in sensor-time order: sr_time,
    /// receive_sr_time, then the value columns, as doubles (NULL as NaN).
    func databaseValues(_ family: ExportFamily) throws -> [[Double]] {
        let columns = (["sr_time", "receive_sr_time"] + family.values.map(\.name)).map { "t." + $0 }
        return try postgres.psql(
            """
            SELECT \(columns.joined(separator: ", ")) FROM sensorkit.\(family.table) t JOIN sensorkit.devices d USING (device)
            WHERE d.host_id = '\(Self.hostID)' AND d.identifier = 'host' ORDER BY t.sr_time, t.receive_sr_time
            """, database: database
        ).map { line in line.split(separator: "|", omittingEmptySubsequences: false).map { Double(String($0)) ?? .nan } }
    }

    /// Where two row lists first differ, or nil when equal (a short message, not two dumps).
    static func difference<R: Equatable>(_ exported: [R], _ expected: [R]) -> String? {
        if let i = (0..<min(exported.count, expected.count)).first(where: { exported[$0] != expected[$0] }) {
            return "row \(i): exported \(exported[i]), fetched \(expected[i]) (\(exported.count) vs \(expected.count) rows)"
        }
        return exported.count == expected.count ? nil : "exported \(exported.count) rows, fetched \(expected.count)"
    }
}
