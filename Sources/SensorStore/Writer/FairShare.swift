import SensorKitModel

/// Who gives up room when the store is over its disk budget: the sources holding the most, down
/// to a common level, so a source flooding the store with samples or deletion records loses its
/// own oldest data while a quiet source under the level keeps all of its own.
enum FairShare {
    /// Bytes each source must free so that `excess` bytes are freed in all: every source above a
    /// level L gives up what it holds above L, the lowest L that frees `excess` (water-filling);
    /// sources at or below L give nothing. When everything together is not enough, everything.
    static func cuts<Source: Hashable>(_ usage: [Source: Int64], excess: Int64) -> [Source: Int64] {
        guard excess > 0 else { return [:] }
        let held = usage.filter { $0.value > 0 }.sorted { $0.value > $1.value }
        var sum: Int64 = 0
        for (index, entry) in held.enumerated() {
            sum = sum.addingSaturating(entry.value)
            let count = Int64(index + 1)
            let next = index + 1 < held.count ? held[index + 1].value : 0
            // Lowering the top `count` sources to `next` frees sum − count × next.
            guard sum.subtractingSaturating(next.multipliedSaturating(by: count)) >= excess else { continue }
            // The level that frees exactly `excess` (rounded down, so at least `excess`).
            let level = sum.subtractingSaturating(excess) / count
            var cuts: [Source: Int64] = [:]
            for taken in held.prefix(index + 1) { cuts[taken.key] = taken.value - level }
            return cuts
        }
        return Dictionary(uniqueKeysWithValues: held.map { ($0.key, $0.value) })
    }
}
