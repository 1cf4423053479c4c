import Foundation
import SensorChunks
import SensorKitModel
import SensorStore

/// `sensorkit-bench decode`: the chunk decoder alone, the cost that bounds a fetch (the daemon's
/// for plain batches, the client's for chunk frames). Ten minutes of the reference accelerometer
/// stored as one sealed chunk, decoded and mapped to g again and again on one thread; the best
/// of several rounds, in CPU time of that thread, beside a plain copy of the decoded bytes (the
/// anchor: what the decode would cost if it were free).
enum DecodeBenchmark {
    static func run() throws {
        print("\n== decode: one sealed 10-minute accelerometer chunk (60 000 samples) ==")
        let workdir = NSTemporaryDirectory() + "sensorkit-bench-decode-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: workdir) }
        let stream = ReferenceStream.accelerometer(seconds: 600)
        let clock = BenchClock(boottime: StoreBenchmark.start + StoreBenchmark.day)
        var timeline = Timeline.founded(by: clock)
        timeline.adoptCurrentBoot(of: clock)
        let store = try SensorStore(configuration: StoreBenchmark.configuration(workdir), clock: clock, timeline: timeline)
        let id = try store.register(stream.descriptor)
        store.append(
            SampleBatch(
                boot: clock.bootID, sensorTimes: stream.times, receiveTimes: stream.times,
                columns: stream.columns.map { .integers($0) }), to: id)
        try store.close()
        let reopened = try SensorStore(configuration: StoreBenchmark.configuration(workdir), clock: clock, timeline: timeline)
        defer { try? reopened.close() }
        let cursor = try reopened.samples(sensor: stream.descriptor.sensor, device: "host", from: .min, to: .max)
        var chunks: [EncodedChunk] = []
        while let item = try cursor.next(handingOver: .init(formats: Set(StoredChunk.readableVersions), maxBytes: .max)) {
            if case .chunk(let chunk) = item { chunks.append(chunk) }
        }
        guard let chunk = chunks.max(by: { $0.count < $1.count }) else {
            print("no sealed chunk was handed over")
            return
        }
        let mapping = ColumnMapping(
            sources: (0..<3).map { _ in ColumnMapping.Source(isFloat: false, scale: 0.000598, offset: 0) },
            outputs: (0..<3).map { axis in
                ColumnMapping.Output(
                    terms: (0..<3).map { ColumnMapping.Term(source: $0, coefficient: $0 == axis ? 1 : 0) },
                    divisor: UnitConversion.standardGravity)
            })
        // As the client receives it: with zeroed room after the chunk, so the body decodes in place.
        let padded = chunk.bytes + [UInt8](repeating: 0, count: StoredChunk.inPlacePadding)
        func decodeChunk() throws -> StoredChunk.Columns {
            try padded.withUnsafeBytes { raw in
                try StoredChunk.decode(
                    UnsafeRawBufferPointer(rebasing: raw[0..<chunk.bytes.count]),
                    readablePastEnd: StoredChunk.inPlacePadding)
            }
        }
        var best = (decode: Double.infinity, map: Double.infinity, copy: Double.infinity)
        var checksum: Int64 = 0
        for _ in 0..<7 {
            let rounds = 150
            // Each decode's arrays are dropped before the next, as a consumer that moves on would.
            let before = StoreBenchmark.threadCPUSeconds()
            for _ in 0..<rounds {
                let columns = try decodeChunk()
                checksum &+= columns.values[0][chunk.count / 2]
            }
            let decodeSeconds = StoreBenchmark.threadCPUSeconds() - before
            let decoded = try (0..<rounds).map { _ in try decodeChunk() }
            let mapBefore = StoreBenchmark.threadCPUSeconds()
            for columns in decoded {
                let mapped = ColumnMapping.withBuffers(columns.values, 0..<chunk.count) { stored in
                    (0..<3).map { mapping.column($0, count: chunk.count, stored: stored) }
                }
                checksum &+= Int64(mapped[0][chunk.count / 2])
            }
            let mapSeconds = StoreBenchmark.threadCPUSeconds() - mapBefore
            let copyBefore = StoreBenchmark.threadCPUSeconds()
            for columns in decoded {
                var copy = columns.sensorTimes + columns.receiveTimes
                for column in columns.values { copy += column }
                checksum &+= copy[copy.count / 2]
            }
            let copySeconds = StoreBenchmark.threadCPUSeconds() - copyBefore
            let samples = Double(rounds * chunk.count)
            best = (
                min(best.decode, decodeSeconds / samples * 1e9), min(best.map, mapSeconds / samples * 1e9),
                min(best.copy, copySeconds / samples * 1e9)
            )
        }
        if checksum == 42 { print("") }
        print(
            "chunk: \(chunk.count) samples, \(chunk.bytes.count) bytes (\(StoreBenchmark.format(Double(chunk.bytes.count) / Double(chunk.count))) B/sample), format \(chunk.formatVersion)"
        )
        print(
            "decode \(StoreBenchmark.format(best.decode)) ns/sample (\(StoreBenchmark.format(1e3 / best.decode))M samples/s on one core); mapping to g \(StoreBenchmark.format(best.map)) ns/sample"
        )
        print(
            "anchor: copying the decoded 40 bytes of a sample \(StoreBenchmark.format(best.copy)) ns/sample; decode ÷ copy ×\(StoreBenchmark.format(best.decode / best.copy))"
        )
    }
}
