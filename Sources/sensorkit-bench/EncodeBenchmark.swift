import Foundation
import SensorChunks

/// `sensorkit-bench encode`: the chunk encoder alone, the largest part of the store's ingest CPU.
/// One 64 Ki-sample chunk of each reference stream (receive time = sensor time, as in the store
/// bench) is sealed (`.best`) and written as a piece (`.fast`) again and again by one
/// `ChunkEncoder` on one thread; the best of several rounds, in CPU time of that thread. The
/// store bench's ingest figure swings with the shared machine; this one moves only with the
/// encoder, so small encoder changes can be compared.
enum EncodeBenchmark {
    static func run() {
        print("\n== encode: one 64 Ki-sample chunk per reference stream ==")
        let streams: [ReferenceStream] = [.accelerometer(seconds: 700), .electrocardiogram(), .photoplethysmogram()]
        for stream in streams {
            let range = 0..<min(stream.count, 1 << 16)
            let times = Array(stream.times[range])
            let samples = ChunkSamples(times: times, receiveTimes: times, columns: stream.columns.map { Array($0[range]) })
            let roles = [ColumnRole](repeating: .integer, count: samples.columns.count)
            var encoder = ChunkEncoder()
            for (label, effort) in [("sealed", ChunkCodec.Effort.best), ("piece", .fast)] {
                var best = Double.infinity
                var bytes = 0
                for _ in 0..<7 {
                    let rounds = 20
                    let before = StoreBenchmark.threadCPUSeconds()
                    for _ in 0..<rounds {
                        bytes = encoder.encode(samples, range: 0..<samples.count, roles: roles, effort: effort).count
                    }
                    best = min(best, (StoreBenchmark.threadCPUSeconds() - before) / Double(rounds))
                }
                let perMillion = best / Double(samples.count) * 1e6
                print(
                    "  \(stream.name) \(label): \(String(format: "%.4f", perMillion)) CPU-s/M samples, "
                        + "\(String(format: "%.3f", Double(bytes) / Double(samples.count))) B/sample (chunk bytes only)")
            }
        }
    }
}
