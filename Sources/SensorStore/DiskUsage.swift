import Glibc
import SensorSystem

/// How much room the store takes and how much its file system has left.
public struct DiskUsage: Hashable, Sendable {
    /// Pages in use by the catalog and chunks (`(page_count − freelist_count) × page_size`): what
    /// the disk budget counts. Free pages are reused before the file grows.
    public var storeBytes: Int64
    /// The write-ahead log's current size (bounded by checkpoints; counted by the budget).
    public var walBytes: Int64
    /// The WAL index (`-shm`) file's size (counted by the budget).
    public var shmBytes: Int64 = 0
    /// Bytes the file system still offers an unprivileged writer (`statvfs`: `f_bavail × f_frsize`).
    public var availableBytes: Int64

    /// What the store occupies on disk and the budget's `maxBytes` counts: pages in use, the WAL
    /// and its index.
    public var occupiedBytes: Int64 { storeBytes + walBytes + shmBytes }

    /// The page counts in one statement over SQLite's pragma functions, for `measure`: the writer
    /// keeps it prepared, since compiling the pragmas anew cost most of a measurement, and the
    /// budget measures before every commit.
    static let pageCountsSQL =
        "SELECT page_size, page_count, freelist_count FROM pragma_page_size(), pragma_page_count(), pragma_freelist_count()"

    /// Reads the page counts (`pageCounts`: `pageCountsSQL` prepared on `db`) and `statvfs(2)`
    /// of the store's folder. May block on disk I/O briefly.
    static func measure(_ db: SQLiteDatabase, pageCounts: SQLiteStatement, directory: String) throws -> DiskUsage {
        // Reset at once: a statement left on its row keeps a read transaction open.
        defer { pageCounts.reset() }
        guard try pageCounts.step() else { throw SQLiteError(operation: "step \(pageCountsSQL)", code: 0, message: "no row") }
        let pageSize = pageCounts.int64(0)
        let pages = pageCounts.int64(1)
        let free = pageCounts.int64(2)
        // No -wal or -shm file (not yet created, or checkpointed away) counts as 0 bytes.
        let walBytes = (try? SystemCalls.stat(db.path + "-wal")).map { Int64($0.st_size) } ?? 0
        let shmBytes = (try? SystemCalls.stat(db.path + "-shm")).map { Int64($0.st_size) } ?? 0
        let fs = try SystemCalls.statvfs(directory)
        return DiskUsage(
            storeBytes: (pages - free) * pageSize, walBytes: walBytes, shmBytes: shmBytes,
            availableBytes: Int64(fs.f_bavail) * Int64(fs.f_frsize))
    }
}
