import SensorTestKit
import Testing

@testable import IIOBridge

/// Drip-feed: the same stream cut into one big buffer, single bytes, and random chunks
/// must give the same scans.
@Suite struct ScanAssemblerTests {
    /// A BMI160-style 24-byte stream of `count` scans with distinct contents.
    static func stream(count: Int) throws -> (layout: ScanLayout, scans: [[UInt8]]) {
        let s16 = try ScanType(parsing: "le:s16/16>>0")
        let elements = (0..<6).map { ScanElementSpec(channel: "c\($0)", index: 4 + $0, type: s16) }
        let layout = try ScanLayout(
            elements: elements,
            timestamp: ScanElementSpec(channel: "in_timestamp", index: 10, type: try ScanType(parsing: "le:s64/64>>0")))
        let scans = (0..<count).map { n in
            ScanEncoder.encode(
                layout, values: (0..<6).map { Int64(n * 6 + $0) % 30000 - 15000 },
                timestamp: 1_000_000_000 + Int64(n) * 2_500_000)
        }
        return (layout, scans)
    }

    static func assemble(_ bytes: [UInt8], scanBytes: Int, chunkSizes: (Int) -> Int) -> [[UInt8]] {
        var assembler = ScanAssembler(scanBytes: scanBytes)
        var out: [[UInt8]] = []
        var position = 0
        while position < bytes.count {
            let size = min(chunkSizes(bytes.count - position), bytes.count - position)
            out += assembler.feed(Array(bytes[position..<position + size]))
            position += size
        }
        #expect(assembler.pendingByteCount == 0)
        return out
    }

    @Test func oneBigBuffer() throws {
        let (layout, scans) = try Self.stream(count: 400)
        let bytes = scans.flatMap { $0 }
        #expect(layout.scanBytes == 24)
        #expect(Self.assemble(bytes, scanBytes: 24) { $0 } == scans)
    }

    @Test func oneByteAtATime() throws {
        let (_, scans) = try Self.stream(count: 50)
        #expect(Self.assemble(scans.flatMap { $0 }, scanBytes: 24) { _ in 1 } == scans)
    }

    @Test func randomChunks() throws {
        let (_, scans) = try Self.stream(count: 1000)
        let bytes = scans.flatMap { $0 }
        for seed in UInt64(1)...20 {
            var random = SeededGenerator(seed: seed)
            // Sizes around what umockdev's PTY returns (average ~1 KiB), and tiny ones.
            let result = Self.assemble(bytes, scanBytes: 24) { _ in
                random.next() % 2 == 0 ? Int(random.next() % 2048) + 1 : Int(random.next() % 30) + 1
            }
            #expect(result == scans, "seed \(seed)")
        }
    }

    @Test func decodesWhatItAssembles() throws {
        let (layout, scans) = try Self.stream(count: 3)
        let decoder = ScanDecoder(layout: layout)
        var assembler = ScanAssembler(scanBytes: layout.scanBytes)
        var timestamps: [Int64?] = []
        let bytes = scans.flatMap { $0 }
        // Cut at 5 and 30 bytes: the first scan completes in the second chunk, the third at the end.
        for (from, to) in [(0, 5), (5, 30), (30, bytes.count)] {
            bytes[from..<to].withUnsafeBytes { chunk in
                assembler.feed(chunk) { timestamps.append(decoder.decode($0).timestamp) }
            }
        }
        #expect(timestamps == [1_000_000_000, 1_002_500_000, 1_005_000_000])
    }

    @Test func resetDropsAPartialScan() {
        var assembler = ScanAssembler(scanBytes: 16)
        #expect(assembler.feed([UInt8](repeating: 1, count: 20)).count == 1)
        #expect(assembler.pendingByteCount == 4)
        #expect(assembler.reset() == 4)
        let scans = assembler.feed([UInt8](repeating: 2, count: 16))
        #expect(scans == [[UInt8](repeating: 2, count: 16)])
    }
}
