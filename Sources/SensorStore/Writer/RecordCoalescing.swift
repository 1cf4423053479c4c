import SensorKitModel

/// The newest deletion record written per source (sensor and device) and reason, so a record that
/// overlaps or touches it widens that row instead of adding one: a source reporting the same loss
/// over and over (a gap that keeps growing, a disk that stays full, batch after batch dropped)
/// leaves one record, not one per report. Records that neither overlap nor touch stay apart —
/// between them data was kept, and a record covering it would claim a deletion that did not happen.
struct RecordCoalescing {
    struct Key: Hashable {
        var sensor: SRSensor
        var device: String
        var reason: SRDeletionReason
    }

    struct Row: Equatable {
        var id: Int64
        var start: Int64
        var end: Int64
    }

    /// One entry per source and reason; sources are the registered streams' devices, a few dozen,
    /// but a bound keeps a churn of device names from growing it.
    private var newest: [Key: Row] = [:]
    static let maxEntries = 1024

    /// The widened row when `start...end` overlaps or touches the newest row of its key.
    func widening(_ key: Key, start: Int64, end: Int64) -> Row? {
        guard let row = newest[key], start <= row.end, row.start <= end else { return nil }
        return Row(id: row.id, start: min(row.start, start), end: max(row.end, end))
    }

    mutating func remember(_ key: Key, _ row: Row) {
        if newest[key] == nil, newest.count >= Self.maxEntries { newest.removeAll() }
        newest[key] = row
    }

    /// Rows of the source were deleted or rewritten (eviction, purge): none is widened again.
    mutating func forget(sensor: SRSensor, device: String) {
        newest = newest.filter { !($0.key.sensor == sensor && $0.key.device == device) }
    }

    /// A transaction was rolled back: the rows it wrote or widened are not what is remembered.
    mutating func forgetAll() { newest.removeAll() }
}
