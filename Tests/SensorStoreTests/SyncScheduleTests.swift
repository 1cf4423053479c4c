import Foundation
import SensorKitModel
import Testing

@testable import SensorStore

/// Which commits wait for the disk (`SyncSchedule`), at instants the test chooses.
@Suite struct SyncScheduleTests {
    static let second: UInt64 = 1_000_000_000

    @Test func aCommitLeftUnsyncedIsOwedASyncOneIntervalLater() {
        var schedule = SyncSchedule(interval: 5, commitInterval: 0.5)
        #expect(schedule.deadline == nil)
        #expect(!schedule.syncs(beginningAt: 10 * Self.second))
        schedule.committed(at: 10 * Self.second, synced: false)
        #expect(schedule.deadline == 15 * Self.second)
        // Later unsynced commits do not move the deadline of the oldest.
        schedule.committed(at: 12 * Self.second, synced: false)
        #expect(schedule.deadline == 15 * Self.second)
        #expect(!schedule.idleSyncDue(at: 15 * Self.second - 1))
        #expect(schedule.idleSyncDue(at: 15 * Self.second))
        schedule.committed(at: 15 * Self.second, synced: true)
        #expect(schedule.deadline == nil)
        #expect(!schedule.idleSyncDue(at: 100 * Self.second))
    }

    @Test func aTransactionThatWouldCommitPastTheDeadlineIsSynced() {
        var schedule = SyncSchedule(interval: 5, commitInterval: 0.5)
        schedule.committed(at: 0, synced: false)
        // It may stay open for an interval and a half of the commit interval (0.75 s).
        #expect(!schedule.syncs(beginningAt: 4 * Self.second))
        #expect(schedule.syncs(beginningAt: 4_250_000_000))
        #expect(schedule.syncs(beginningAt: 9 * Self.second))
    }

    /// Commits every half second for a minute, as the daemon makes them: one in ten waits for the
    /// disk, and no commit stays unsynced longer than the interval.
    @Test func aCommitEveryHalfSecondIsSyncedAboutOnceInTenAndNeverLate() {
        var schedule = SyncSchedule(interval: 5, commitInterval: 0.5)
        var synced = 0
        var unsynced: [UInt64] = []
        var now: UInt64 = 0
        while now < 60 * Self.second {
            let syncs = schedule.syncs(beginningAt: now)
            let commit = now + 100_000_000
            schedule.committed(at: commit, synced: syncs)
            if syncs {
                synced += 1
                #expect(unsynced.allSatisfy { commit - $0 <= 5 * Self.second })
                unsynced.removeAll()
            } else {
                unsynced.append(commit)
            }
            now += Self.second / 2
        }
        #expect((11...13).contains(synced), "\(synced) synced commits in 120")
    }

    @Test(arguments: [0, -1, Double.nan, -Double.infinity])
    func aZeroOrNaNIntervalSyncsEveryCommitWithoutTrapping(_ interval: Double) {
        var schedule = SyncSchedule(interval: interval, commitInterval: interval)
        schedule.committed(at: Self.second, synced: false)
        #expect(schedule.syncs(beginningAt: Self.second))
    }

    @Test func aHugeIntervalNeitherTrapsNorOverflows() {
        var schedule = SyncSchedule(interval: .infinity, commitInterval: .infinity)
        schedule.committed(at: .max - 1, synced: false)
        #expect(schedule.deadline == .max)
        #expect(schedule.syncs(beginningAt: .max - 1))
        #expect(!schedule.idleSyncDue(at: .max - 1))
    }
}

/// The real writer on real time: commits reach the disk within the sync interval, also when no
/// further commit comes to carry the sync.
@Suite struct WriterSyncTests {
    /// The header's `user_version`, which the writer's idle sync writes, read by a connection of
    /// the test's own.
    static func syncMarks(_ fixture: StoreFixture) throws -> Int64 {
        let db = try SQLiteDatabase(path: fixture.configuration.databasePath, create: false)
        return try db.scalar("PRAGMA user_version") ?? 0
    }

    @Test(.timeLimit(.minutes(3)), arguments: [Durability.powerLoss, .processCrash])
    func anIdleWriterSyncsItsLastCommitsAtTheDeadlineOnlyForPowerLoss(_ durability: Durability) throws {
        let fixture = try WriterWakeTests.fixture(commitInterval: 0.05) {
            $0.durability = durability
            $0.syncInterval = 0.3
        }
        let stream = try fixture.opened.register(.accelerometer)
        WriterWakeTests.append(fixture, stream, first: 1_000_000_000, count: 10)
        #expect(try WriterWakeTests.secondsUntilCommitted(fixture, count: 10) != nil)
        let start = Date()
        var marks = try Self.syncMarks(fixture)
        while marks == 0, Date().timeIntervalSince(start) < 2 {
            Thread.sleep(forTimeInterval: 0.02)
            marks = try Self.syncMarks(fixture)
        }
        #expect(marks == (durability == .powerLoss ? 1 : 0))
        // Nothing more to sync: the writer does not wake for it again.
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try Self.syncMarks(fixture) == marks)
    }
}
