/// The scans a chip's buffer handed over lately, kept so a stream that asked to record just before
/// they were read — but joined the running buffer just after (its subscription still crossing the
/// capture's queues) — gets them too (`ScanFanOut.adopt`, docs/iio.md §4, "Joining a running
/// buffer").
///
/// Bounded: at most `capacity` scans are kept (the oldest go first); `evictedReceiveTime` says
/// when the newest scan no longer kept was read, so a stream whose request is older than that
/// knows it missed scans and records a gap for them.
struct RecentScans {
    let width: Int
    let capacity: Int
    private var values: [Int64] = []
    private(set) var sensorTimes: [Int64] = []
    private(set) var receiveTimes: [Int64] = []
    /// Why the scan timeline jumped just before a scan (a FIFO overflow), by the scan's number
    /// since the first one kept ever (`dropped` + its index), oldest first. Sparse: jumps are
    /// rare, and an optional string per scan cost the reading thread a tenth of its keeping.
    private var gaps: [(scan: Int, why: String)] = []
    /// Scans dropped from the front since the first one was kept.
    private var dropped = 0
    /// When the newest scan that is no longer kept was read; nil when none was dropped.
    private(set) var evictedReceiveTime: Int64?

    init(width: Int, capacity: Int) {
        precondition(width >= 0 && capacity > 0, "a scan has values and at least one scan is kept")
        self.width = width
        self.capacity = capacity
    }

    var count: Int { sensorTimes.count }

    /// Why the scan timeline jumped just before kept scan `index`; nil when it did not.
    func gapBefore(_ index: Int) -> String? {
        let scan = dropped + index
        var low = 0, high = gaps.count
        while low < high {
            let middle = (low + high) / 2
            if gaps[middle].scan < scan { low = middle + 1 } else { high = middle }
        }
        return low < gaps.count && gaps[low].scan == scan ? gaps[low].why : nil
    }

    /// Whether no kept scan follows a jump.
    var hasNoGaps: Bool { gaps.isEmpty }

    /// The values of kept scan `index`.
    func values(of index: Int) -> ArraySlice<Int64> { values[(index * width)..<((index + 1) * width)] }

    /// Keeps one scan (`scanValues` holds its `width` values).
    mutating func append(_ scanValues: UnsafeBufferPointer<Int64>, sensorTime: Int64, receiveTime: Int64, gapBefore: String?) {
        values.append(contentsOf: scanValues)
        sensorTimes.append(sensorTime)
        receiveTimes.append(receiveTime)
        if let gapBefore { gaps.append((dropped + sensorTimes.count - 1, gapBefore)) }
        // Trimmed in steps of `capacity`, not one scan at a time: each scan is moved once.
        if sensorTimes.count >= 2 * capacity { dropOldest(sensorTimes.count - capacity) }
    }

    /// Keeps a whole read's scans at once (`scanValues` holds `width` values for each of
    /// `sensorTimes`), none after a gap: the common read, four copies instead of four appends a scan.
    mutating func append(reads scanValues: UnsafeBufferPointer<Int64>, sensorTimes times: [Int64], receiveTime: Int64) {
        precondition(scanValues.count == times.count * width, "width values a scan")
        values.append(contentsOf: scanValues)
        sensorTimes.append(contentsOf: times)
        receiveTimes.append(contentsOf: repeatElement(receiveTime, count: times.count))
        if sensorTimes.count >= 2 * capacity { dropOldest(sensorTimes.count - capacity) }
    }

    /// The first scan that may still be handed out: beyond `capacity`, older ones only wait for
    /// the next trim.
    var firstKept: Int { max(0, count - capacity) }

    /// The index of the first scan from `firstKept` on that was read at or after `time` (`count`
    /// when none). Read times never decrease: the reader stamps each read after the one before.
    func firstRead(atOrAfter time: Int64) -> Int {
        var low = firstKept, high = count
        while low < high {
            let middle = (low + high) / 2
            if receiveTimes[middle] < time { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Whether scans read at or after `time` can no longer be handed out.
    func missedScans(readSince time: Int64) -> Bool {
        if let evicted = evictedReceiveTime, evicted >= time { return true }
        let first = firstKept
        return first > 0 && receiveTimes[first - 1] >= time
    }

    /// A read was not kept (its owner knew no stream was joining): what was kept goes with it, so
    /// the kept scans never have a hole in the middle, and the read counts as the newest evicted.
    mutating func skipped(readAt receiveTime: Int64) {
        if !sensorTimes.isEmpty { removeAll() }
        evictedReceiveTime = receiveTime
    }

    mutating func removeAll() {
        values.removeAll()
        sensorTimes.removeAll()
        receiveTimes.removeAll()
        gaps.removeAll()
        dropped = 0
        evictedReceiveTime = nil
    }

    private mutating func dropOldest(_ scans: Int) {
        evictedReceiveTime = receiveTimes[scans - 1]
        values.removeFirst(scans * width)
        sensorTimes.removeFirst(scans)
        receiveTimes.removeFirst(scans)
        dropped += scans
        gaps.removeAll { $0.scan < dropped }
    }
}
