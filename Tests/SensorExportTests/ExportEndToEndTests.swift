import Foundation
import Glibc
import SensorSimulation
import SensorTestKit
import Testing

/// sensorkit-export against a real daemon and a real PostgreSQL: every released sample lands once
/// with the values a direct fetch gives, through kills and server restarts (docs/export.md).
@Suite(.serialized) struct ExportEndToEndTests {
    @Test(.timeLimit(.minutes(2)))
    func everyReleasedSampleOnceWithTheFetchedValues() throws {
        let rig = try ExportRig(rate: 500)
        defer { rig.close() }
        // The first pass takes the app's stake (recording starts) and creates the schema.
        let first = try rig.exportOnce(["--commit-rows", "300"])
        #expect(first.status == 0, "\(first.output)")
        usleep(1_500_000)
        let expected = try rig.settle()
        #expect(expected.count > 300)
        let second = try rig.exportOnce(["--commit-rows", "300"])
        #expect(second.status == 0, "\(second.output)")
        let exported = try rig.databaseRows()
        #expect(exported.count == expected.count)
        #expect(exported == expected)
        // Another pass finds nothing new and writes nothing.
        let third = try rig.exportOnce()
        #expect(third.status == 0, "\(third.output)")
        #expect(try rig.databaseRows().count == expected.count)
        let cursor = try rig.postgres.psql("SELECT sr_time, exported_rows FROM sensorkit.cursors WHERE stream = 'com.apple.SensorKit.motion.accelerometer'",
                                           database: rig.database)
        #expect(cursor == ["\(expected.last!.sensorTime)|\(expected.count)"])
        let device = try rig.postgres.psql("SELECT host_id, identifier, system_name FROM sensorkit.devices", database: rig.database)
        #expect(device == ["\(ExportRig.hostID)|host|Linux"])
    }

    @Test(.timeLimit(.minutes(3)))
    func twentyKillsAtRandomPointsLoseAndDuplicateNothing() throws {
        let rig = try ExportRig(rate: 2000)
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
        let expected = try rig.settle()
        let last = try rig.exportOnce(["--commit-rows", "200"])
        #expect(last.status == 0, "\(last.output)")
        let exported = try rig.databaseRows()
        #expect(exported.count == expected.count)
        #expect(exported == expected)
        // The kills landed while rows were flowing: the table grew between them.
        #expect(Set(progress).count > 10, "rows after each kill: \(progress)")
    }

    @Test(.timeLimit(.minutes(2)))
    func serverStoppedAndRestartedMidExport() throws {
        let rig = try ExportRig(rate: 2000)
        defer { rig.close() }
        #expect(try rig.exportOnce().status == 0)
        let child = try rig.follow(["--commit-rows", "200"])
        defer {
            kill(child.pid, SIGKILL)
            child.wait()
        }
        usleep(800_000)
        try rig.postgres.stop()
        usleep(1_000_000)
        try rig.postgres.start()
        let expected = try rig.settle()
        let caughtUp = DaemonHarness.eventually(30) { ((try? rig.databaseRows().count) ?? 0) >= expected.count }
        #expect(caughtUp, "\(rig.followLog)")
        #expect(try rig.databaseRows() == expected)
        #expect(rig.followLog.contains("pass failed"), "the exporter saw the server go: \(rig.followLog)")
    }
}
