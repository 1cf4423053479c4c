import Dispatch
import SensorKitModel

/// The purge (docs/store.md, window and hold): whole sealed chunks older than each sensor's
/// window go with an `ageLimit` record, old deletion records follow one window later, and the
/// disk budget is kept (DiskBudget.swift). Runs on the writer's thread like the rest of the writer,
/// every `purgeInterval` and on `SensorStore.purge()`.
extension StoreWriter {
    /// Deletes whole sealed chunks older than each sensor's window (`ageLimit` records), old
    /// deletion records, and then the oldest chunks while over the disk budget (`lowDiskSpace`).
    @discardableResult
    func purge() throws -> PurgeReport {
        thread.assertCurrent()
        let db = try database()
        guard let now = timeline.withLock({ $0.srNanoseconds(of: clock.now()) }) else {
            throw StoreError.currentBootNotAdopted
        }
        var report = PurgeReport()
        try begin()
        let range = try db.prepare(
            "SELECT min(min_time), max(max_time), count(*), coalesce(sum(sample_count), 0) FROM chunks WHERE stream = ? AND tier = 1 AND max_time <= ?"
        )
        let delete = try db.prepare("DELETE FROM chunks WHERE stream = ? AND tier = 1 AND max_time <= ?")
        var longestWindow: Int64 = configuration.retention.window
        for stream in registry.all {
            let window = configuration.retention(for: stream.descriptor.sensor).window
            longestWindow = max(longestWindow, window)
            let cutoff = now.subtractingSaturating(window)
            range.reset()
            try range.bind([stream.id.rawValue, cutoff])
            // Reset on every path: a statement left on its row holds a read transaction, and a
            // checkpoint of the budget would find the database locked.
            guard try range.step(), range.int64(2) > 0 else {
                range.reset()
                continue
            }
            let (first, last, chunks, samples) = (range.int64(0), range.int64(1), range.int(2), range.int(3))
            range.reset()
            delete.reset()
            try delete.bind([stream.id.rawValue, cutoff])
            try delete.run()
            try insertRecord(
                sensor: stream.descriptor.sensor, device: stream.descriptor.device, start: first, end: last,
                reason: .ageLimit, explainsDeletion: true)
            report.purgedChunks += chunks
            report.purgedSamples += samples
        }
        // Deletion records outlive the data they explain by one window, then go too.
        try db.execute(
            "DELETE FROM deletion_records WHERE end_time < \(now.subtractingSaturating(longestWindow.multipliedSaturating(by: 2)))"
        )
        coalescing.forgetAll()
        try keepBudget(&report)
        try commit()
        // Pages freed by the window are left in the file: at a full window the next day's chunks
        // reuse them. Only eviction for free space hands pages back (incremental_vacuum there).
        return report
    }

    /// Purges by window and budget every `purgeInterval`.
    func purgeOnSchedule() {
        thread.assertCurrent()
        guard db != nil else { return }
        do {
            try writeOwedRecords()
            try purge()
        } catch {
            fail(error)
        }
        commitWhenDue()
    }
}

/// What a purge removed.
public struct PurgeReport: Hashable, Sendable {
    /// Sealed chunks (and their samples) older than the window.
    public var purgedChunks = 0
    public var purgedSamples = 0
    /// Sealed chunks (and their samples) evicted for the disk budget.
    public var evictedChunks = 0
    public var evictedSamples = 0
    public init() {}
}
