import Testing

@testable import IIOBridge

/// A read kept at once hands out exactly what keeping its scans one by one does, trims included
/// (the two may trim at different moments: what lies before `firstKept` is not handed out).
@Suite struct RecentScansTests {
    @Test func aWholeReadKeptAtOnceEqualsItsScansKeptOneByOne() {
        var oneByOne = RecentScans(width: 3, capacity: 5)
        var atOnce = RecentScans(width: 3, capacity: 5)
        for read in 0..<7 {
            let count = read % 4 + 1
            let times = (0..<count).map { Int64(read * 100 + $0) }
            let values = times.flatMap { [$0, -$0, 2 * $0] }
            let receive = Int64(read * 1_000)
            values.withUnsafeBufferPointer { all in
                for scan in 0..<count {
                    oneByOne.append(
                        UnsafeBufferPointer(rebasing: all[(scan * 3)..<(scan * 3 + 3)]), sensorTime: times[scan],
                        receiveTime: receive, gapBefore: nil)
                }
                atOnce.append(reads: all, sensorTimes: times, receiveTime: receive)
            }
            // What can be handed out: the scans from `firstKept` on, and which requests missed scans.
            func kept(_ recent: RecentScans) -> [[Int64]] {
                (recent.firstKept..<recent.count).map {
                    [recent.sensorTimes[$0], recent.receiveTimes[$0]] + recent.values(of: $0)
                }
            }
            #expect(kept(atOnce) == kept(oneByOne), "read \(read)")
            for asked in stride(from: Int64(-500), through: 7_500, by: 250) {
                #expect(atOnce.missedScans(readSince: asked) == oneByOne.missedScans(readSince: asked), "read \(read), \(asked)")
                #expect(
                    atOnce.sensorTimes[atOnce.firstRead(atOrAfter: asked)...]
                        == oneByOne.sensorTimes[oneByOne.firstRead(atOrAfter: asked)...], "read \(read), \(asked)")
            }
            #expect(atOnce.hasNoGaps && (atOnce.firstKept..<atOnce.count).allSatisfy { atOnce.gapBefore($0) == nil })
        }
        #expect(atOnce.evictedReceiveTime != nil && oneByOne.evictedReceiveTime != nil, "the reads outgrew the capacity")
    }

    /// A gap's reason stays with the scan after the jump while the scans before it are trimmed,
    /// and leaves with that scan.
    @Test func aGapStaysWithItsScanAcrossTrims() {
        var recent = RecentScans(width: 1, capacity: 4)
        func keep(_ time: Int64, gap: String? = nil) {
            [time].withUnsafeBufferPointer { recent.append($0, sensorTime: time, receiveTime: time, gapBefore: gap) }
        }
        for time in Int64(0)..<3 { keep(time) }
        keep(3, gap: "overflow at 3")
        keep(4)
        keep(5, gap: "overflow at 5")
        func reasons() -> [Int64: String] {
            var found: [Int64: String] = [:]
            for index in 0..<recent.count { if let why = recent.gapBefore(index) { found[recent.sensorTimes[index]] = why } }
            return found
        }
        #expect(reasons() == [3: "overflow at 3", 5: "overflow at 5"])
        keep(6)
        keep(7)  // eight kept: trimmed to the last four (4...7)
        #expect(recent.sensorTimes == [4, 5, 6, 7])
        #expect(reasons() == [5: "overflow at 5"])
        for time in Int64(8)..<12 { keep(time) }  // trimmed again: 8...11, no gap left
        #expect(recent.sensorTimes == [8, 9, 10, 11])
        #expect(reasons().isEmpty && recent.hasNoGaps)
    }

    /// A read not kept (no stream was joining) drops what was kept and counts as evicted: a
    /// request older than it missed scans, a newer one did not, and keeping resumes without a
    /// hole.
    @Test func aReadNotKeptCountsAsEvicted() {
        var recent = RecentScans(width: 1, capacity: 8)
        [Int64(1), 2].withUnsafeBufferPointer { recent.append(reads: $0, sensorTimes: [10, 20], receiveTime: 100) }
        recent.skipped(readAt: 200)
        #expect(recent.count == 0 && recent.evictedReceiveTime == 200)
        #expect(recent.missedScans(readSince: 150) && recent.missedScans(readSince: 200))
        #expect(!recent.missedScans(readSince: 201))
        [Int64(3)].withUnsafeBufferPointer { recent.append(reads: $0, sensorTimes: [30], receiveTime: 300) }
        #expect(recent.sensorTimes == [30] && recent.firstRead(atOrAfter: 201) == 0)
        #expect(!recent.missedScans(readSince: 250))
    }
}
