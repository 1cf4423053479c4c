import Foundation
import Testing

@testable import SensorChunks
@testable import SensorStore

/// The chunk codec as pure functions: exact round trips over random and adversarial input, and
/// every damaged chunk refused.
@Suite struct ChunkCodecTests {
    @Test func crc32cMatchesTheStandardCheckValue() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
        // The slicing-by-8 path and the byte path agree at every length and alignment.
        var random = SeededGenerator(seed: 4)
        let bytes = (0..<100).map { _ in UInt8.random(in: 0...255, using: &random) }
        for length in 0...bytes.count {
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes[0..<length] {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            }
            #expect(CRC32C.checksum(Array(bytes[0..<length])) == crc ^ 0xFFFF_FFFF)
            // The CPU's instruction (where there is one) and the tables agree, at every offset.
            for offset in 0..<min(8, length + 1) {
                let slice = Array(bytes[offset..<length])
                #expect(slice.withUnsafeBytes { CRC32C.tableChecksum($0) } == CRC32C.checksum(slice))
            }
        }
    }

    /// Long buffers take three CRC streams side by side, joined at each 12 KiB stride: around
    /// the stride's edges, over several strides and at odd offsets the result must be the tables'.
    @Test func crc32cOfLongBuffersMatchesTheTables() {
        var random = SeededGenerator(seed: 9)
        let bytes = (0..<(5 * 12_288 + 64)).map { _ in UInt8.random(in: 0...255, using: &random) }
        let stride = 3 * 4_096
        for length in [stride - 1, stride, stride + 1, stride + 7, 2 * stride - 8, 2 * stride + 3, 5 * stride + 64] {
            for offset in [0, 1, 5] where offset + length <= bytes.count {
                let slice = Array(bytes[offset..<(offset + length)])
                #expect(
                    slice.withUnsafeBytes { CRC32C.tableChecksum($0) } == CRC32C.checksum(slice),
                    "length \(length), offset \(offset)")
            }
        }
        // A flipped bit in any block of a stride changes the checksum.
        var damaged = Array(bytes[0..<(2 * stride)])
        let intact = CRC32C.checksum(damaged)
        for position in [0, 4_095, 4_096, 8_191, 8_192, 12_287, 12_288, 2 * stride - 1] {
            damaged[position] ^= 0x10
            #expect(CRC32C.checksum(damaged) != intact, "bit at byte \(position)")
            damaged[position] ^= 0x10
        }
    }

    @Test func bitWriterAndReaderAgreeOnEveryWidth() {
        var random = SeededGenerator(seed: 11)
        var fields: [(UInt64, Int)] = []
        var writer = BitWriter()
        for _ in 0..<5_000 {
            let width = Int(random.next() % 65)
            let value = width == 64 ? random.next() : random.next() & BitReader.mask(width)
            fields.append((value, width))
            writer.write(value, bits: width)
        }
        let bytes = writer.bytes() + [UInt8](repeating: 0, count: BitReader.padding)
        bytes.withUnsafeBytes { raw in
            var reader = BitReader(base: raw.baseAddress!, limit: writer.bitCount)
            for (value, width) in fields { #expect(reader.readWide(bits: width) == value) }
            #expect(reader.position == writer.bitCount)
        }
    }

    /// The linear predictor's `Double` kernel gives the integer kernel's residuals bit for bit at
    /// the edge of its bounds (|d| up to 2^21, coefficients up to 2^24), and larger differences
    /// take the integer kernel.
    @Test func linearResidualsMatchTheIntegerDefinition() {
        var random = SeededGenerator(seed: 21)
        for (limit, order): (Int64, Int) in [(3, 8), (1 << 21, 8), (1 << 40, 8), (3, 4), (1 << 20, 4), (1 << 21, 3)] {
            let coefficients =
                (0..<order).map { _ in Int64.random(in: -(1 << 24) + 1...(1 << 24) - 1, using: &random) }
                + [Int64](repeating: 0, count: 8 - order)
            var x: [Int64] = [0]
            for _ in 0..<1_000 { x.append(x[x.count - 1] &+ Int64.random(in: -limit...limit, using: &random)) }
            let start = 9
            var out = [Int64](repeating: 0, count: x.count - start)
            x.withUnsafeBufferPointer { x in
                var source = LinearResiduals(x.baseAddress!, from: start, coefficients: coefficients)
                out.withUnsafeMutableBufferPointer { source.fill($0.baseAddress!, count: 300) }
                out.withUnsafeMutableBufferPointer { source.fill($0.baseAddress! + 300, count: $0.count - 300) }
            }
            for i in start..<x.count {
                var acc: Int64 = 1 << 13
                for k in 0..<8 { acc &+= coefficients[k] &* (x[i - 1 - k] &- x[i - 2 - k]) }
                #expect(out[i - start] == (x[i] &- x[i - 1]) &- (acc >> 14), "limit \(limit), index \(i)")
            }
        }
        // Every remainder of the sum modulo 2^14, ties (remainder 2^13) included, on both signs:
        // with a single coefficient ±1 the sum is ±the previous difference, and the differences
        // walk through −40 000…40 000 (the Double kernel rounds where the integer one shifts).
        for coefficients: [Int64] in [[1], [-1], [0, 3, 0, 0, 0, 0, 0, -2]] {
            var x: [Int64] = [0]
            for d in -40_000...40_000 { x.append(x[x.count - 1] &+ Int64(d)) }
            let start = 9
            var out = [Int64](repeating: 0, count: x.count - start)
            x.withUnsafeBufferPointer { x in
                var source = LinearResiduals(x.baseAddress!, from: start, coefficients: coefficients)
                out.withUnsafeMutableBufferPointer { out in
                    var done = 0
                    while done < out.count {
                        let length = min(256, out.count - done)
                        source.fill(out.baseAddress! + done, count: length)
                        done += length
                    }
                }
            }
            let c = coefficients + [Int64](repeating: 0, count: 8 - coefficients.count)
            for i in start..<x.count {
                var acc: Int64 = 1 << 13
                for k in 0..<8 where i - 2 - k >= 0 { acc &+= c[k] &* (x[i - 1 - k] &- x[i - 2 - k]) }
                #expect(out[i - start] == (x[i] &- x[i - 1]) &- (acc >> 14), "coefficients \(coefficients), index \(i)")
            }
        }
    }

    @Test func referenceAccelerometerRoundTripsCompactly() throws {
        let data = referenceAccelerometer(seconds: 600)
        let samples = ChunkSamples(times: data.times, receiveTimes: data.times, columns: data.axes)
        let bytes = ChunkCodec.encode(samples, roles: [.integer, .integer, .integer], effort: .best)
        #expect(try ChunkCodec.decode(bytes).samples == samples)
        // Timestamp jitter alone carries ≈ 1.9 B/sample; three noisy int16 axes ≈ 1.4 more.
        #expect(Double(bytes.count) / Double(samples.count) < 3.5)
        let fast = ChunkCodec.encode(samples, roles: [.integer, .integer, .integer], effort: .fast)
        #expect(try ChunkCodec.decode(fast).samples == samples)
        #expect(Double(fast.count) / Double(samples.count) < 4)
    }

    /// Random shapes: each column drawn from a different family, lengths around block edges.
    static func randomSamples(_ random: inout SeededGenerator) -> (ChunkSamples, [ColumnRole]) {
        let lengths = [0, 1, 2, 3, 9, 10, 255, 256, 257, 511, 1_000, 2_345]
        let count = lengths[Int(random.next() % UInt64(lengths.count))]
        func column(_ family: UInt64) -> [Int64] {
            var previous: Int64 = Int64(bitPattern: random.next()) >> 20
            return (0..<count).map { i -> Int64 in
                switch family {
                case 0: return Int64(bitPattern: random.next())  // anything
                case 1: return [Int64.min, .max, 0, -1, 1][Int(random.next() % 5)]  // extremes
                case 2: return 42  // constant
                case 3:  // jittered clock with duplicates and steps back
                    let step: Int64 = [10_000_000, 0, -3_000_000, 10_000_000, 10_000_000][Int(random.next() % 5)]
                    previous &+= step &+ Int64(random.next() % 40_001) &- 20_000
                    return previous
                case 4: return Int64((random.gaussian() * 3 + 200 * sin(Double(i) / 30)).rounded())  // smooth + noise
                case 5: return random.next() % 10 == 0 ? Int64(random.next() % 1_000_000) : 0  // sparse
                // float bit patterns, NaNs included
                case 6: return Int64(bitPattern: Double(bitPattern: random.next()).bitPattern)
                default: return Int64(i) &* Int64.max / 7  // huge linear ramp that wraps
                }
            }
        }
        let times = column([3, 0, 1, 2, 4][Int(random.next() % 5)])
        let receive: [Int64] =
            switch random.next() % 3 {
            case 0: times
            case 1: times.indices.map { times[($0 / 10) * 10 + min(9, times.count - 1 - ($0 / 10) * 10)] &+ 250_000 }
            default: column(0)
            }
        let width = Int(random.next() % 5)
        let columns = (0..<width).map { _ in column(random.next() % 8) }
        let roles = (0..<width).map { _ in random.next() % 2 == 0 ? ColumnRole.integer : .float }
        return (ChunkSamples(times: times, receiveTimes: receive, columns: columns), roles)
    }

    @Test func randomAndAdversarialSamplesRoundTripExactly() throws {
        var random = SeededGenerator(seed: 2024)
        for _ in 0..<300 {
            let (samples, roles) = Self.randomSamples(&random)
            for effort in [ChunkCodec.Effort.fast, .best] {
                let bytes = ChunkCodec.encode(samples, roles: roles, effort: effort)
                let decoded = try ChunkCodec.decode(bytes)
                #expect(decoded.samples == samples)
                let inPlace = try Self.withGuardedCopy(bytes) {
                    try ChunkCodec.decode($0, readablePastEnd: ChunkCodec.inPlacePadding)
                }
                #expect(inPlace.samples == samples)
                #expect(
                    decoded.header.timesNonDecreasing == zip(samples.times, samples.times.dropFirst()).allSatisfy { $0 <= $1 })
            }
        }
    }

    @Test func everyFlippedBitAndEveryTruncationIsDetected() throws {
        var random = SeededGenerator(seed: 5)
        let times = (0..<40).map { Int64($0) * 10_000_000 + Int64(random.next() % 1000) }
        let samples = ChunkSamples(times: times, receiveTimes: times, columns: [times.map { $0 % 977 }])
        let bytes = ChunkCodec.encode(samples, roles: [.integer], effort: .best)
        for bit in 0..<bytes.count * 8 {
            var damaged = bytes
            damaged[bit / 8] ^= 1 << UInt8(bit % 8)
            #expect(throws: ChunkCodecError.self) { try ChunkCodec.decode(damaged) }
        }
        for length in 0..<bytes.count {
            #expect(throws: ChunkCodecError.self) { try ChunkCodec.decode(Array(bytes[0..<length])) }
        }
    }

    /// Garbage that carries a valid checksum reaches the structural checks: they must throw, or
    /// decode to something, and never trap or read out of bounds.
    @Test func garbageWithAValidChecksumNeverCrashesTheDecoder() {
        var random = SeededGenerator(seed: 77)
        var valid = [[UInt8]]()
        for _ in 0..<30 {
            let (samples, roles) = Self.randomSamples(&random)
            valid.append(ChunkCodec.encode(samples, roles: roles, effort: .best))
        }
        for round in 0..<400 {
            var body: [UInt8]
            if round % 2 == 0 {
                body = (0..<Int(random.next() % 200)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                if body.count >= 2, round % 4 == 0 { body[0] = 1 }
            } else {
                // A real chunk with a few bytes changed and the checksum fixed up.
                body = Array(valid[Int(random.next() % 30)].dropLast(4))
                for _ in 0..<1 + Int(random.next() % 3) where !body.isEmpty {
                    body[Int(random.next() % UInt64(body.count))] = UInt8(truncatingIfNeeded: random.next())
                }
            }
            let crc = CRC32C.checksum(body)
            withUnsafeBytes(of: crc.littleEndian) { body += $0 }
            _ = try? ChunkCodec.decode(body)
            // In place, a read past the room the decoder was promised hits a guard page.
            _ = try? Self.withGuardedCopy(body) { try ChunkCodec.decode($0, readablePastEnd: ChunkCodec.inPlacePadding) }
        }
    }

    /// Runs `body` on a copy of `bytes` followed by exactly `ChunkCodec.inPlacePadding` readable
    /// zero bytes and then an inaccessible page: reading any further crashes the test.
    static func withGuardedCopy<T>(_ bytes: [UInt8], _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let used = bytes.count + ChunkCodec.inPlacePadding
        let dataPages = (used + page - 1) / page
        let length = (dataPages + 1) * page
        guard let mapping = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            mapping != MAP_FAILED
        else { throw POSIXError(.ENOMEM) }
        defer { munmap(mapping, length) }
        let guardPage = mapping + dataPages * page
        precondition(mprotect(guardPage, page, PROT_NONE) == 0)
        let start = guardPage - used
        bytes.withUnsafeBytes { start.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
        return try body(UnsafeRawBufferPointer(start: start, count: bytes.count))
    }
}
