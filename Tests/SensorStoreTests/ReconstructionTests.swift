import Foundation
import Testing

@testable import SensorChunks

/// The decoder runs each predictor's reconstruction inside the residual decoder's loop
/// (Reconstructions.swift); these hold every predictor, forced on columns it would never be
/// chosen for, to an exact round trip through every block code.
@Suite struct ReconstructionTests {
    /// Columns of every kind: smooth motion under noise, adversarial blocks (escapes, extremes of
    /// Int64, long runs of one value) joined end to end, and short ones around the warm-ups.
    static func columns() -> [[Int64]] {
        var random = SeededGenerator(seed: 2026)
        var columns: [[Int64]] = [[], [5], [1, 2], Array(0..<9), Array(0..<10).map { $0 * $0 }]
        columns.append(
            (0..<3_000).map { i in
                let t = Double(i)
                let motion: Double = 800 * sin(t / 590) + 300 * sin(t / 49)
                return Int64(motion + random.gaussian() * 2.5) + 16_384
            })
        columns.append(ChunkFormatTests.adversarialBlocks(&random).flatMap { $0 })
        columns.append(
            (0..<2_000).map { i in 1_700_000_000_000_000_000 + Int64(i) * 10_000_000 + Int64(random.next() % 40_001) - 20_000 })
        return columns
    }

    static func roundTrip(_ column: [Int64], _ predictor: Predictor, _ parameters: PredictorParameters) throws -> [Int64] {
        // One spare value, so even an empty column has a buffer to point at.
        let padded = column + [0]
        var writer = BitWriter()
        padded.withUnsafeBufferPointer { x in
            ColumnCoding.write(x.baseAddress!, count: column.count, predictor: predictor, parameters: parameters, into: &writer)
        }
        let bytes = writer.bytes() + [UInt8](repeating: 0, count: BitReader.padding)
        var decoded = [Int64](repeating: 0, count: padded.count)
        try bytes.withUnsafeBytes { raw in
            try decoded.withUnsafeMutableBufferPointer { out in
                try ColumnCoding.decode(section: raw, count: column.count, times: nil, into: out.baseAddress!)
            }
        }
        return Array(decoded.dropLast())
    }

    @Test func everyPredictorRoundTripsEveryColumn() throws {
        var random = SeededGenerator(seed: 7)
        for (index, column) in Self.columns().enumerated() {
            var cases: [(Predictor, PredictorParameters)] = [
                (.verbatim, PredictorParameters()), (.delta, PredictorParameters()), (.delta2, PredictorParameters()),
                (.grid, PredictorParameters(origin: column.first ?? 0, period: 10_000_000 << 16)),
                (.grid, PredictorParameters(origin: .max, period: .min)),
            ]
            for order in 1...ColumnCoding.maxLinearOrder {
                // Fitted-looking coefficients, and ones at the edge of what the header holds.
                let small = (0..<order).map { _ in Int64(random.next() % 40_000) - 20_000 }
                let large = (0..<order).map { _ in Int64(bitPattern: random.next()) >> 40 }
                cases.append((.linear, PredictorParameters(coefficients: small)))
                cases.append((.linear, PredictorParameters(coefficients: large)))
            }
            for (predictor, parameters) in cases {
                let decoded = try Self.roundTrip(column, predictor, parameters)
                #expect(decoded == column, "column \(index), \(predictor), order \(parameters.coefficients.count)")
            }
        }
    }
}
