import Foundation
import SensorKitModel
import SensorTestKit
import Testing

/// `chunk` frames (docs/protocol.md §5.3) and the `ColumnMapping` they carry: the bytes round-trip,
/// damage is refused, and the mapping gives exactly the doubles of its documented expression.
@Suite struct ChunkFrameTests {
    static let motion = ColumnMapping(
        sources: [
            .init(isFloat: false, scale: 0.000598, offset: 0.25), .init(isFloat: false, scale: 0.000598, offset: 0),
            .init(isFloat: false, scale: 0.0012, offset: -3),
        ],
        outputs: [[0, -1, 0], [1, 0, 0], [0, 0.5, -1]].map { row in
            ColumnMapping.Output(
                terms: row.enumerated().map { .init(source: $0.offset, coefficient: $0.element) },
                divisor: 9.80665)
        })

    func frame(chunk: [UInt8] = Array(0..<200)) -> ChunkBatchFrame {
        ChunkBatchFrame(requestID: 77, layout: .motion, formatVersion: 2, count: 1234, mapping: Self.motion, chunk: chunk)
    }

    @Test func framesRoundTripAndAnnounceTheirLength() throws {
        var bytes: [UInt8] = [9, 9]  // appended after what is already there
        frame().appendFrame(to: &bytes)
        #expect(Array(bytes[0..<2]) == [9, 9])
        var decoder = FrameDecoder(limit: WireLimits.maxServerFrame)
        decoder.feed(bytes[2...])
        let parsed = try #require(try decoder.next())
        #expect(parsed.kind == .chunk)
        #expect(parsed.payload.count == ChunkBatchFrame.payloadSize(mapping: Self.motion, chunkBytes: 200))
        let decoded = try parsed.payload.withUnsafeBytes { try ChunkBatchFrame.decode($0) }
        #expect(decoded == frame())
        // With room for the chunk decoder: the same frame, and zeros in the chunk's spare capacity.
        let padded = try parsed.payload.withUnsafeBytes { try ChunkBatchFrame.decode($0, chunkPadding: 20) }
        #expect(padded == frame())
        #expect(padded.chunk.capacity - padded.chunk.count >= 20)
        padded.chunk.withUnsafeBytes { raw in
            let after = UnsafeRawBufferPointer(start: raw.baseAddress! + raw.count, count: 20)
            #expect(after.allSatisfy { $0 == 0 })
        }
    }

    @Test func everyTruncationAndTrailingByteIsRefused() throws {
        var bytes: [UInt8] = []
        frame(chunk: Array(0..<16)).appendFrame(to: &bytes)
        let payload = Array(bytes.dropFirst(Frame.headerSize))
        for length in 0..<payload.count {
            #expect(throws: SampleBatchFrame.DecodeError.self) {
                try Array(payload[0..<length]).withUnsafeBytes { try ChunkBatchFrame.decode($0) }
            }
        }
        #expect(throws: SampleBatchFrame.DecodeError.trailingBytes(1)) {
            try (payload + [0]).withUnsafeBytes { try ChunkBatchFrame.decode($0) }
        }
        var badTerm = payload
        badTerm[14 + 3 * 17 + 1] = 9  // the first term of the first output names stored column 9 of 3
        #expect(throws: SampleBatchFrame.DecodeError.self) {
            try badTerm.withUnsafeBytes { try ChunkBatchFrame.decode($0) }
        }
    }

    /// The documented expression, evaluated one sample at a time.
    static func reference(_ mapping: ColumnMapping, output: Int, stored: [[Int64]], at i: Int) -> Double {
        let spec = mapping.outputs[output]
        guard let first = spec.terms.first else { return .nan }
        if spec.terms.allSatisfy({ !mapping.sources[$0.source].isFloat }) {
            var b = first.coefficient * mapping.sources[first.source].offset
            for term in spec.terms.dropFirst() { b = b + term.coefficient * mapping.sources[term.source].offset }
            var value = b / spec.divisor
            for term in spec.terms {
                let a = (term.coefficient * mapping.sources[term.source].scale) / spec.divisor
                if a != 0 { value = value + a * Double(stored[term.source][i]) }
            }
            return value
        }
        func physical(_ c: Int) -> Double {
            let source = mapping.sources[c]
            return source.isFloat
                ? Double(bitPattern: UInt64(bitPattern: stored[c][i])) : Double(stored[c][i]) * source.scale + source.offset
        }
        if spec.terms.count == 1 && first.coefficient == 1 && spec.divisor == 1 { return physical(first.source) }
        var sum = first.coefficient * physical(first.source)
        for term in spec.terms.dropFirst() { sum = sum + term.coefficient * physical(term.source) }
        return sum / spec.divisor
    }

    /// With `extremes`, every column holds counts beyond ±2^51, which the fast conversion cannot
    /// take (the column is written again with the conversion instruction); without, none does.
    @Test(arguments: [false, true], [false, true])
    func mappingGivesTheExpressionBitForBit(floatSources: Bool, extremes: Bool) throws {
        var random = SeededGenerator(seed: (floatSources ? 5 : 6) + (extremes ? 0 : 10))
        let count = 1_000
        var mapping = Self.motion
        if floatSources { mapping.sources[1] = .init(isFloat: true) }  // the general path
        mapping.outputs.append(.copy(2))
        mapping.outputs.append(.missing)
        mapping.outputs.append(ColumnMapping.Output(terms: [.init(source: 1, coefficient: 2)], divisor: 3))
        let stored: [[Int64]] = (0..<3).map { column in
            (0..<count).map { i in
                if column == 1 && floatSources {
                    return Int64(bitPattern: Double.random(in: -1e3...1e3, using: &random).bitPattern)
                }
                return switch i % 97 {
                case 0 where extremes: Int64.max
                case 1 where extremes: Int64.min
                case 2: (1 << 51) - 1  // the widest counts the fast conversion takes
                case 3: -(1 << 51)
                case 4 where extremes: 1 << 51  // the first it does not
                default: Int64.random(in: -5_000...5_000, using: &random)
                }
            }
        }
        for output in mapping.outputs.indices {
            let column = ColumnMapping.withBuffers(stored, 0..<count) { mapping.column(output, count: count, stored: $0) }
            for i in 0..<count {
                let expected = Self.reference(mapping, output: output, stored: stored, at: i)
                #expect(
                    column[i].bitPattern == expected.bitPattern || (column[i].isNaN && expected.isNaN),
                    "output \(output) sample \(i): \(column[i]) vs \(expected)")
            }
        }
    }
}
