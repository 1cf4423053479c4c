import Foundation
import Glibc
import SensorExport
import SensorKitModel
import SensorSimulation
import SensorTestKit
import Testing

/// sensorkit-export against a real daemon and a real PostgreSQL: every released sample lands once
/// with the values a direct fetch gives, through kills and server restarts (docs/export.md). The
/// exporter keeps its recording stake, so recording goes on; each check compares the table with a
/// direct fetch up to the exported cursor.
@Suite(.serialized) struct ExportEndToEndTests {
    @Test(.timeLimit(.minutes(3)))
    func everyReleasedSampleOnceWithTheFetchedValues() throws {
        let rig = try ExportRig(rate: 500)
        defer { rig.close() }
        // The first pass takes the app's stake (recording starts) and creates the schema.
        let first = try rig.exportOnce(["--commit-rows", "300"])
        #expect(first.status == 0, "\(first.output)")
        usleep(2_000_000)
        let released = rig.released
        let second = try rig.exportOnce(["--commit-rows", "300"])
        #expect(second.status == 0, "\(second.output)")
        let cursor = try #require(try rig.cursor())
        let exported = try rig.databaseRows()
        // Everything released when the pass began is there, once, with the fetched values.
        let expected = try rig.directRows(through: released)
        #expect(expected.count > 300)
        #expect(ExportRig.difference(Array(exported.prefix(expected.count)), expected) == nil)
        #expect(ExportRig.difference(exported, try rig.directRows(through: cursor)) == nil)
        // Another pass adds only what was released since.
        let third = try rig.exportOnce()
        #expect(third.status == 0, "\(third.output)")
        let after = try #require(try rig.cursor())
        #expect(ExportRig.difference(try rig.databaseRows(), try rig.directRows(through: after)) == nil)
        let counted = try rig.postgres.psql(
            "SELECT exported_rows FROM sensorkit.cursors WHERE stream = 'com.apple.SensorKit.motion.accelerometer'",
            database: rig.database)
        #expect(counted == ["\(try rig.databaseRows().count)"])
        let device = try rig.postgres.psql(
            "SELECT host_id, identifier, system_name FROM sensorkit.devices", database: rig.database)
        #expect(device == ["\(ExportRig.hostID)|host|Linux"])
    }

    @Test(.timeLimit(.minutes(3)))
    func twentyKillsAtRandomPointsLoseAndDuplicateNothing() throws {
        let rig = try ExportRig(rate: 2000, gapEvery: 50)
        defer { rig.close() }
        #expect(try rig.exportOnce().status == 0)
        var random = SeededGenerator(seed: 17)
        var progress: [Int] = []
        for _ in 0..<20 {
            let child = try rig.follow(["--commit-rows", "200"])
            usleep(UInt32.random(in: 150_000...600_000, using: &random))
            kill(child.pid, SIGKILL)
            child.wait()
            progress.append(try rig.databaseRows().count)
        }
        let last = try rig.exportOnce(["--commit-rows", "200"])
        #expect(last.status == 0, "\(last.output)")
        let cursor = try #require(try rig.cursor())
        let exported = try rig.databaseRows()
        let expected = try rig.directRows(through: cursor)
        #expect(ExportRig.difference(exported, expected) == nil)
        let deletions = try #require(try rig.cursor(ExportRig.deletionStream))
        #expect(ExportRig.difference(try rig.databaseDeletions(), try rig.directDeletions(through: deletions)) == nil)
        // The kills landed while rows were flowing: the table grew between them.
        #expect(Set(progress).count > 10, "rows after each kill: \(progress)")
    }

    /// Deletion records overlap-match `(from, to]` and a deletion stream's cursor is the start of
    /// its newest record, so that record came back on every pass and was inserted again (one row
    /// per deletion stream per pass). Passes with `--once` and a follower's passes, while samples
    /// and deletion records keep arriving, leave both tables equal to a direct fetch.
    @Test(.timeLimit(.minutes(3)))
    func repeatedPassesExportEveryRowAndDeletionRecordOnce() throws {
        let rig = try ExportRig(rate: 500, gapEvery: 40, light: true)
        defer { rig.close() }
        // A record reaches the store up to a commit interval after its end: a 2 s lag fetches only
        // records already there, so the check below cannot race the daemon's writer.
        let options = ["--lag", "2s", "--commit-rows", "300"]
        #expect(try rig.exportOnce(options).status == 0)
        usleep(3_500_000)
        for _ in 0..<3 {
            let pass = try rig.exportOnce(options)
            #expect(pass.status == 0, "\(pass.output)")
            usleep(400_000)
        }
        let follower = try rig.follow(options)
        usleep(1_500_000)
        kill(follower.pid, SIGKILL)
        follower.wait()
        #expect(try rig.exportOnce(options).status == 0)
        let deletionCursor = try #require(try rig.cursor(ExportRig.deletionStream))
        let deletions = try rig.databaseDeletions(), fetched = try rig.directDeletions(through: deletionCursor)
        print(
            "deletion records: \(deletions.count) rows in the table, \(fetched.count) in a direct fetch, \(Set(deletions.map(\.description)).count) distinct"
        )
        #expect(deletions.count >= 5, "\(deletions)")
        #expect(ExportRig.difference(deletions, fetched) == nil)
        let cursor = try #require(try rig.cursor())
        #expect(ExportRig.difference(try rig.databaseRows(), try rig.directRows(through: cursor)) == nil)
        let counted = try rig.postgres.psql(
            "SELECT exported_rows FROM sensorkit.cursors WHERE stream = '\(ExportRig.deletionStream)'",
            database: rig.database)
        #expect(counted == ["\(deletions.count)"])
        let light = try #require(try rig.cursor(SRSensor.ambientLightSensor.rawValue))
        let lightRows = try rig.databaseLightTimes()
        #expect(lightRows.count > 50)
        #expect(ExportRig.difference(lightRows, try rig.directLightTimes(through: light)) == nil)
    }

    /// Rows in the tables with their cursors behind them: what a crash between the insert and the
    /// cursor's update would leave were they not one transaction, and what a cursors table
    /// restored from an older backup leaves. A pass from there inserts no row twice.
    @Test(.timeLimit(.minutes(3)))
    func cursorsBehindTheirRowsDuplicateNothing() throws {
        let rig = try ExportRig(rate: 500, gapEvery: 40, light: true)
        defer { rig.close() }
        #expect(try rig.exportOnce().status == 0)
        usleep(2_500_000)
        #expect(try rig.exportOnce().status == 0)
        let rows = try rig.databaseRows(), deletions = try rig.databaseDeletions()
        #expect(rows.count > 300 && deletions.count >= 2, "\(rows.count) rows, \(deletions.count) deletion records")
        try rig.postgres.psql("UPDATE sensorkit.cursors SET sr_time = \(ExportLedger.origin)", database: rig.database)
        let replay = try rig.exportOnce()
        #expect(replay.status == 0, "\(replay.output)")
        let cursor = try #require(try rig.cursor())
        let deletionCursor = try #require(try rig.cursor(ExportRig.deletionStream))
        #expect(ExportRig.difference(try rig.databaseRows(), try rig.directRows(through: cursor)) == nil)
        #expect(ExportRig.difference(try rig.databaseDeletions(), try rig.directDeletions(through: deletionCursor)) == nil)
        #expect(Array(try rig.databaseRows().prefix(rows.count)) == rows)
        let light = try #require(try rig.cursor(SRSensor.ambientLightSensor.rawValue))
        #expect(ExportRig.difference(try rig.databaseLightTimes(), try rig.directLightTimes(through: light)) == nil)

        // A database left by schema version 1: no key on deletions, each record in it twice, and
        // the five-column photoplethysmogram table. The next start's migration removes the copies
        // before it makes the key (version 2) and gives the PPG table the wide frame types' columns
        // (version 3).
        let ppg = try #require(ExportFamily.of(.photoplethysmogram))
        let added = ppg.values.map(\.name).filter { !["ppg0", "ppg1", "ppg2", "ppg3", "ambient"].contains($0) }
        #expect(added.count == 17)
        for statement in [
            "DROP INDEX sensorkit.deletions_identity", "DELETE FROM sensorkit.schema_version WHERE version >= 2",
            "INSERT INTO sensorkit.deletions SELECT * FROM sensorkit.deletions",
        ] + added.map({ "ALTER TABLE sensorkit.photoplethysmogram DROP COLUMN \($0)" }) {
            try rig.postgres.psql(statement, database: rig.database)
        }
        func ppgColumns() throws -> [String] {
            try rig.postgres.psql(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = 'sensorkit' AND table_name = 'photoplethysmogram' ORDER BY ordinal_position",
                database: rig.database)
        }
        #expect(try ppgColumns() == ExportFamily.leadingColumns.map(\.name) + ["ppg0", "ppg1", "ppg2", "ppg3", "ambient"])
        let upgraded = try rig.exportOnce()
        #expect(upgraded.status == 0, "\(upgraded.output)")
        let upgradedCursor = try #require(try rig.cursor(ExportRig.deletionStream))
        #expect(ExportRig.difference(try rig.databaseDeletions(), try rig.directDeletions(through: upgradedCursor)) == nil)
        #expect(Set(try ppgColumns()) == Set(ExportFamily.leadingColumns.map(\.name) + ppg.values.map(\.name)))
        #expect(try rig.postgres.psql("SELECT max(version) FROM sensorkit.schema_version", database: rig.database) == ["3"])
    }

    @Test(.timeLimit(.minutes(3)))
    func serverStoppedAndRestartedMidExport() throws {
        let rig = try ExportRig(rate: 2000)
        defer { rig.close() }
        #expect(try rig.exportOnce().status == 0)
        let child = try rig.follow(["--commit-rows", "200"])
        usleep(800_000)
        try rig.postgres.stop()
        usleep(1_000_000)
        try rig.postgres.start()
        let target = rig.released
        let caughtUp = DaemonHarness.eventually(30) { ((try? rig.cursor()) ?? nil).map { $0 >= target - 10_000_000 } ?? false }
        kill(child.pid, SIGKILL)
        child.wait()
        #expect(caughtUp, "\(rig.followLog)")
        let cursor = try #require(try rig.cursor())
        #expect(ExportRig.difference(try rig.databaseRows(), try rig.directRows(through: cursor)) == nil)
        #expect(rig.followLog.contains("pass failed"), "the exporter saw the server go: \(rig.followLog)")
    }

    @Test(.timeLimit(.minutes(3)))
    func fullDiskOnTheServerRollsBackOnceLoggedAndRecovers() throws {
        let tablespace: SmallTablespace
        switch try SmallTablespace.make(megabytes: 64) {
        case .success(let made): tablespace = made
        case .failure(let refused): try Test.cancel("full-disk test skipped: \(refused)")
        }
        defer { tablespace.remove() }
        let rig = try ExportRig(rate: 2000)
        defer { rig.close() }
        #expect(try rig.exportOnce().status == 0)
        // The accelerometer's table and its indexes move to the tmpfs; WAL, catalogs and cursors stay
        // on the normal disk, so the server stays up and only the COPY runs out of room.
        try rig.postgres.psql("CREATE TABLESPACE small LOCATION '\(tablespace.mountPoint)'")
        for statement in [
            "ALTER TABLE sensorkit.motion SET TABLESPACE small",
            "ALTER INDEX sensorkit.motion_device_stream_time SET TABLESPACE small",
            "ALTER INDEX sensorkit.motion_wall_time SET TABLESPACE small",
        ] {
            try rig.postgres.psql(statement, database: rig.database)
        }
        // Room for a few seconds of samples at 2 000 samples/s, then the disk is full.
        try tablespace.resize(bytes: try tablespace.usedBytes() + 512 * 1024)
        func diskFullErrors() -> Int {
            let log = (try? String(contentsOfFile: rig.postgres.folder + "/server.log", encoding: .utf8)) ?? ""
            return log.components(separatedBy: "No space left on device").count - 1
        }
        let child = try rig.follow(["--commit-rows", "200"])
        defer {
            if child.isRunning { kill(child.pid, SIGKILL) }
            child.wait()
        }
        try #require(DaemonHarness.eventually(30) { diskFullErrors() > 0 }, "the tablespace never filled: \(rig.followLog)")
        let firstErrors = diskFullErrors()
        let started = Date()
        usleep(3_000_000)
        let held = Date().timeIntervalSince(started)
        let attempts = diskFullErrors() - firstErrors
        // Still retrying, with its waits (100 ms doubling to 400 ms here), not in a tight loop.
        #expect(attempts >= 2 && Double(attempts) <= held / 0.4 + 3, "\(attempts) failed COPYs in \(held) s")
        // The server is up; every failed transaction rolled back, so the rows match the cursor.
        #expect(try rig.postgres.psql("SELECT 1") == ["1"])
        let cursorWhenFull = try #require(try rig.cursor())
        #expect(ExportRig.difference(try rig.databaseRows(), try rig.directRows(through: cursorWhenFull)) == nil)
        // One line for the whole episode, naming the cause, not the connection string.
        let log = rig.followLog
        #expect(log.components(separatedBy: "pass failed").count - 1 == 1, "\(log)")
        #expect(log.components(separatedBy: "connected to PostgreSQL").count - 1 == 1, "\(log)")
        #expect(log.contains("No space left on device") && log.contains("(SQLSTATE 53100)"), "\(log)")
        #expect(!log.contains(rig.postgres.conninfo(rig.database)), "\(log)")

        try tablespace.resize(bytes: 64 << 20)
        let grown = Date()
        let target = rig.released
        let caughtUp = DaemonHarness.eventually(30) { ((try? rig.cursor()) ?? nil).map { $0 >= target - 10_000_000 } ?? false }
        #expect(caughtUp, "\(rig.followLog)")
        print(
            "full disk: \(attempts) failed COPYs in \(String(format: "%.1f", held)) s while full; caught up \(String(format: "%.2f", Date().timeIntervalSince(grown))) s after the tmpfs grew"
        )
        #expect(DaemonHarness.eventually(10) { rig.followLog.contains("pass done after") }, "\(rig.followLog)")
        kill(child.pid, SIGKILL)
        child.wait()
        let last = try rig.exportOnce(["--commit-rows", "200"])
        #expect(last.status == 0, "\(last.output)")
        let cursor = try #require(try rig.cursor())
        #expect(cursor > cursorWhenFull)
        #expect(ExportRig.difference(try rig.databaseRows(), try rig.directRows(through: cursor)) == nil)
    }

    @Test(.timeLimit(.minutes(3)))
    func anotherHostsExportIsNotBlockedByThisOnes() throws {
        let rig = try ExportRig(rate: 500)
        defer { rig.close() }
        #expect(try rig.exportOnce().status == 0)
        usleep(1_500_000)
        // Another session holds every cursor row of the first host, as a stalled exporter mid-transaction would.
        let null = open("/dev/null", O_WRONLY)
        defer { Glibc.close(null) }
        let locker = try ChildProcess(
            [
                "/usr/bin/timeout", "60", "/usr/bin/psql", "-X", "-q", "-h", rig.postgres.folder, "-U", "postgres",
                "-d", rig.database, "-c",
                "BEGIN; SELECT * FROM sensorkit.cursors FOR UPDATE; SELECT pg_sleep(50); COMMIT;",
            ],
            stdin: 0, stdout: null, stderr: null)
        defer {
            kill(locker.pid, SIGKILL)
            locker.wait()
        }
        let locked = DaemonHarness.eventually(10) {
            ((try? rig.postgres.psql("SELECT count(*) FROM pg_locks WHERE mode = 'RowShareLock'", database: rig.database)) ?? [])
                .first.flatMap { Int($0) }.map { $0 > 0 } ?? false
        }
        #expect(locked)
        let started = Date()
        let other = try rig.exportOnce(["--host-id", "other-host", "--retries", "1"])
        #expect(other.status == 0, "\(other.output)")
        #expect(Date().timeIntervalSince(started) < 20)
        let rows = try rig.postgres.psql(
            """
            SELECT count(*) FROM sensorkit.motion JOIN sensorkit.devices USING (device) WHERE host_id = 'other-host'
            """, database: rig.database)
        #expect((rows.first.flatMap { Int($0) } ?? 0) > 0)
    }
}
