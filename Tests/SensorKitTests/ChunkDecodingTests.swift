import SensorChunks
import SensorKitModel
import SensorTestKit
import Testing

@testable import SensorKit

/// A `chunk` frame decoded by the client gives the batch the daemon would have sent, and a frame
/// that does not match its chunk fails instead of delivering anything.
@Suite struct ChunkDecodingTests {
    static let count = 3_000

    static func frame(count announced: Int = count, damage: Bool = false) -> (ChunkBatchFrame, ChunkSamples) {
        var random = SeededGenerator(seed: 9)
        let times = (0..<count).map {
            Int64(1_000_000_000 + $0 * 10_000_000) + Int64.random(in: -20_000...20_000, using: &random)
        }
        let axes = (0..<3).map { axis in
            (0..<count).map { _ in Int64.random(in: -2_000...2_000, using: &random) + Int64(axis * 16_384) }
        }
        let samples = ChunkSamples(times: times, receiveTimes: times.map { $0 + 40_000 }, columns: axes)
        var bytes = ChunkCodec.encode(samples, roles: [.integer, .integer, .integer], effort: .best)
        if damage { bytes[bytes.count / 2] ^= 0x20 }
        let mapping = ColumnMapping(
            sources: (0..<3).map { _ in .init(isFloat: false, scale: 0.000598, offset: 0) },
            outputs: [[0.0, 1, 0], [-1, 0, 0], [0, 0, 1]].map { row in
                ColumnMapping.Output(
                    terms: row.enumerated().map { .init(source: $0.offset, coefficient: $0.element) },
                    divisor: UnitConversion.standardGravity)
            })
        return (
            ChunkBatchFrame(
                requestID: 5, layout: .motion, formatVersion: bytes[0], count: announced, mapping: mapping, chunk: bytes),
            samples
        )
    }

    @Test func aChunkFrameBecomesTheBatchOfItsSamples() throws {
        let (frame, samples) = Self.frame()
        let batch = try ChunkDecoding.batch(frame)
        #expect(batch.requestID == 5 && batch.layout == .motion && batch.count == Self.count)
        #expect(batch.sensorTimes == samples.times && batch.writeTimes == samples.receiveTimes)
        let expected = ColumnMapping.withBuffers(samples.columns, 0..<Self.count) { stored in
            (0..<3).map { frame.mapping.column($0, count: Self.count, stored: stored) }
        }
        #expect(batch.columns.map { $0.map(\.bitPattern) } == expected.map { $0.map(\.bitPattern) })
        // Mount matrix row 0 takes y: the first sample's x is its y count in g.
        #expect(batch.columns[0][0] == Double(samples.columns[1][0]) * 0.000598 / UnitConversion.standardGravity)
    }

    @Test func aFrameThatDoesNotMatchItsChunkFails() {
        #expect(throws: ChunkDecoding.Failure.self) { try ChunkDecoding.batch(Self.frame(count: Self.count - 1).0) }
        #expect(throws: ChunkDecoding.Failure.self) { try ChunkDecoding.batch(Self.frame(damage: true).0) }
    }
}
