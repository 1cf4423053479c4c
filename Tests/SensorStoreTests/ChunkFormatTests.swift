import Foundation
import Testing

@testable import SensorChunks
@testable import SensorStore

/// Chunk format 2 and what changed with it: receive-time runs, the block coder's shortcuts, the
/// bit cursor, and chunks written by format 1 that must still read.
@Suite struct ChunkFormatTests {
    // MARK: Format 1

    /// The samples of `format1Chunk`: 300 samples at 100 Hz with jitter, receive times of batch
    /// reads of ten, an integer and a float column.
    static func format1Samples() -> ChunkSamples {
        var times: [Int64] = [], receive: [Int64] = [], integers: [Int64] = [], floats: [Int64] = []
        for i in 0..<300 {
            times.append(1_000_000_000 + Int64(i) * 10_000_000 + Int64((i * 7919) % 40_001) - 20_000)
            integers.append(Int64(16_384 + (i * 37) % 101 - 50))
            floats.append(Int64(bitPattern: (Double(i) * 0.25 - 3).bitPattern))
        }
        for i in 0..<300 { receive.append(times[min(299, (i / 10) * 10 + 9)] + 250_000 + Int64(i / 10) * 1_000) }
        return ChunkSamples(times: times, receiveTimes: receive, columns: [integers, floats])
    }

    /// `format1Samples()` as the format-1 encoder (commit 303896f) wrote them: zstd body,
    /// `heldReceive` offsets.
    static let format1Chunk = [UInt8](
        hex: """
            0103ac0202e71828b52ffd60670ba51c00c431d704041faccc9a7b8a08a09e25e690cb5088c1270080de93deebe696b9
            7ff7eb75dc78635bd43691feff0dbd0e3dbbce56c657a8c9cbb9615bd851f71432ffb7792bdcbaba3ee485d096579d55
            6bd1afb028d4fca7f66970799b94c719a114277d160f6452214b88eea1d7df9b4634618f4fdf339cfb1508c88bc21970
            b66717eb286d693287cc7deb6c1a2bac8fa56139403def0256559a4c261ba20f52d8a454900c648673c788dd13acd169
            3c598ee91064aa29468a2fc84b178c49bb43ea30a7f82b02d3084878111609d72d880e190375bfd46f4e7f57a0a51f90
            d7e23dd28fdb13dd2be666b94ff78b75ac784b5bce368bfef30db70e3afbcd96c5d7a609cb596143d839f7e431e7b76d
            2bd9bab73ede85cd16563d550bd1efafc8d3cca7ea6964798394bb199b9425fd140f61d21f8b87bea1a7df3b46046177
            4fd93396fb0908c28bbf596ff66697e9686c09326fcc65eb3c1a13ac83a55e393d3de90253d598ec25bba14f5178a424
            9000647a73af88d113a65168bc578ee69062ea28168affc7eb165c49a343e430a1f81f02cd0845b8105608f7ff9f1b72
            058a7e91df84fe7e40333f14afc27ba11fb127b7d7ca6d723fee57eaf8f066b6906d0afdcf1b621d6e769aad89af4a93
            94f3c156b043ee69639e6fc356ac75697db00b952da9baa956a15f5ed1a6394fbdd3b0f2d6285f332a2948fa261ebca4
            3c960dcd49e0cbbebbea3b0ccc163aece2e30c0dbc1d3e173570056c5612b61a879124b50e33170f4393b94b18590c98
            7f8a97cc56a7ce2b49cbbac6c5e768d488d545651a64a0f4920a95aa73f26bb2aeda78e5322522e922ba86019601051c
            3695617503d0bbe1f501e8ddf0fa00f46e787d007a37bc3e00bd1b5e1f80de0daf0f40ef86d707a077c3eb6e009d0103
            e291f17f44731f9cff87f91f0203a8c135d7a4e49a6bae49c935d75c9392b92625734d4ae69a945c73cd35296b527234
            01d51101bffff7ffb5ff030002020038000e0080e0000030000c00000300c0002000080000f0ff7ffe80001800060040
            0100005000001400000500200100004800001200800410441140084280102004414010028040200840cb041000000049
            a8e15470170afbc76e808314a6d20112a0f119a1310aaad88a7f2a3fdb367afe1ec08d317ae073020f75beab734af1ed
            0a1396175ff92276a9e3a9f6473d766516e430af12474c3282104450901cca5af3b3453dc5f2a7fe90102ebd0e295132
            42a234709119e44e27572989289bf7a8210a55b155fc8f8bdd
            """)

    @Test func aChunkWrittenInFormat1StillDecodes() throws {
        #expect(Self.format1Chunk[0] == 1)
        let decoded = try ChunkCodec.decode(Self.format1Chunk)
        #expect(decoded.samples == Self.format1Samples())
        #expect(decoded.header.timesNonDecreasing)
        // This build writes the same samples in format 2.
        let now = ChunkCodec.encode(Self.format1Samples(), roles: [.integer, .float], effort: .best)
        #expect(now[0] == 2)
        #expect(try ChunkCodec.decode(now).samples == Self.format1Samples())
    }

    @Test func anUnknownFormatVersionIsRefused() throws {
        var bytes = ChunkCodec.encode(Self.format1Samples(), roles: [.integer, .float], effort: .fast)
        bytes.removeLast(4)
        bytes[0] = 3
        let crc = CRC32C.checksum(bytes)
        withUnsafeBytes(of: crc.littleEndian) { bytes += $0 }
        #expect(throws: ChunkCodecError.unsupportedVersion(3)) { try ChunkCodec.decode(bytes) }
    }

    // MARK: Receive-time runs

    /// Receive times of batch reads: runs of random lengths, latencies from the run's last sensor
    /// time that are typical, zero (times derived from the receive time), negative (a clock step)
    /// or extreme; sensor times jittered, duplicated or going back.
    static func batchedReceive(_ random: inout SeededGenerator, count: Int) -> ChunkSamples {
        var times: [Int64] = []
        var time = Int64(bitPattern: random.next()) >> 8
        for _ in 0..<count {
            time &+= [10_000_000, 0, -3_000_000, 10_000_000][Int(random.next() % 4)] &+ Int64(random.next() % 40_001)
            times.append(time)
        }
        var receive = [Int64](repeating: 0, count: count)
        var start = 0
        while start < count {
            let length = min(count - start, 1 + Int(random.next() % UInt64([1, 10, 30][Int(random.next() % 3)])))
            let last = start + length - 1
            let latency: Int64 =
                switch random.next() % 6 {
                case 0: 0
                case 1: -Int64(random.next() % 5_000_000)
                case 2: [Int64.min, .max, 1, -1][Int(random.next() % 4)]
                default: 50_000 + Int64(random.next() % 2_000_000)
                }
            for i in start...last { receive[i] = times[last] &+ latency }
            start = last + 1
        }
        return ChunkSamples(times: times, receiveTimes: receive, columns: [times.map { $0 % 977 }])
    }

    @Test func batchedReceiveTimesRoundTripAsRuns() throws {
        var random = SeededGenerator(seed: 31)
        for round in 0..<200 {
            let count = [2, 3, 10, 255, 256, 257, 1_000, 3_000][round % 8]
            let samples = Self.batchedReceive(&random, count: count)
            for effort in [ChunkCodec.Effort.fast, .best] {
                let bytes = ChunkCodec.encode(samples, roles: [.integer], effort: effort)
                #expect(try ChunkCodec.decode(bytes).samples == samples)
            }
        }
    }

    /// The section of the receive column (predictor byte first) of an uncompressed chunk.
    static func receiveSection(_ bytes: [UInt8]) -> ArraySlice<UInt8> {
        #expect(bytes[1] & ChunkCodec.compressedFlag == 0)
        return bytes.withUnsafeBytes { raw in
            var offset = 2
            _ = ByteVarint.read(raw, at: &offset)  // count
            _ = ByteVarint.read(raw, at: &offset)  // columns
            let timeLength = Int(ByteVarint.read(raw, at: &offset)!)
            offset += timeLength
            let receiveLength = Int(ByteVarint.read(raw, at: &offset)!)
            return bytes[offset..<offset + receiveLength]
        }
    }

    @Test func runsAreChosenForBatchReadsAndCostAboutTheLatencyEntropy() throws {
        // The bench's model of IIO batch reads: ten samples a read, 50 µs + Exp(200 µs) latency.
        var random = SeededGenerator(seed: 8)
        let data = referenceAccelerometer(seconds: 60)
        var receive = [Int64](repeating: 0, count: data.times.count)
        for start in stride(from: 0, to: receive.count, by: 10) {
            let last = min(start + 9, receive.count - 1)
            let u = Double(random.next() >> 11) / Double(1 << 53)
            let latency = 50_000 + Int64(-log(1 - u) * 200_000)
            for i in start...last { receive[i] = data.times[last] + latency }
        }
        let samples = ChunkSamples(times: data.times, receiveTimes: receive, columns: [])
        let bytes = ChunkCodec.encode(samples, roles: [], effort: .fast)
        let section = Self.receiveSection(bytes)
        #expect(section.first == Predictor.receiveRuns.rawValue)
        // Exp(200 µs) at ns resolution carries ≈ 19 bits per read: ≈ 0.24 B per sample.
        #expect(Double(section.count) / Double(samples.count) < 0.3)
        #expect(try ChunkCodec.decode(bytes).samples == samples)

        // Receive times derived from the read (sensor time = receive − k·period): latency 0.
        var derived = receive
        for start in stride(from: 0, to: derived.count, by: 10) {
            let last = min(start + 9, derived.count - 1)
            for i in start...last { derived[i] = data.times[last] }
        }
        let exact = ChunkCodec.encode(
            ChunkSamples(times: data.times, receiveTimes: derived, columns: []), roles: [], effort: .fast)
        #expect(Double(Self.receiveSection(exact).count) / Double(samples.count) < 0.02)

        // One sample per read (receive = sensor time): the offsets, not runs.
        let single = ChunkCodec.encode(
            ChunkSamples(times: data.times, receiveTimes: data.times, columns: []), roles: [], effort: .fast)
        #expect(Self.receiveSection(single).first == Predictor.verbatim.rawValue)
    }

    @Test func runsThatDoNotCoverTheChunkAreRefused() throws {
        var random = SeededGenerator(seed: 5)
        let samples = Self.batchedReceive(&random, count: 500)
        var writer = BitWriter()
        let runs = try #require(
            samples.receiveTimes.withUnsafeBufferPointer { receive in
                samples.times.withUnsafeBufferPointer { ReceiveRuns(receive: receive, times: $0) }
            })
        runs.write(into: &writer)
        let section = writer.bytes() + [UInt8](repeating: 0, count: BitReader.padding)
        for count in [499, 501, 1] {
            #expect(throws: ChunkCodecError.self) {
                var out = [Int64](repeating: 0, count: count)
                try section.withUnsafeBytes { raw in
                    try samples.times.withUnsafeBufferPointer { times in
                        try out.withUnsafeMutableBufferPointer { out in
                            try ColumnCoding.decode(
                                section: UnsafeRawBufferPointer(rebasing: raw[0..<raw.count - BitReader.padding]),
                                count: count, times: times.baseAddress, into: out.baseAddress!)
                        }
                    }
                }
            }
        }
    }

    // MARK: Block codes

    /// Blocks aimed at each code and at the shortcuts in choosing one: constants, ranges of
    /// 2^k and 2^k + 1 values, values far from zero, mostly zeros, quotients at the escape, the
    /// extremes of Int64.
    static func adversarialBlocks(_ random: inout SeededGenerator) -> [[Int64]] {
        var blocks: [[Int64]] = [
            [Int64](repeating: 0, count: 256), [Int64](repeating: -7, count: 300), [Int64](repeating: .min, count: 3),
            [Int64](repeating: .max, count: 256), [.min, .max], [0, 1], [-1, 0, 1],
            (0..<256).map { Int64($0 % 2) * 1_000_000_000_000 },
            (0..<256).map { _ in 1_000_000_000_000_000 + Int64(random.next() % 8) },
            (0..<256).map { _ in -4_000_000_000_000 - Int64(random.next() % 40_001) },
            (0..<256).map { _ in random.next() % 10 == 0 ? Int64(bitPattern: random.next()) : 0 },
            (0..<300).map { i in i % 50 == 0 ? 31 << 20 : Int64(random.next() % 3) - 1 },
        ]
        // The minimum and maximum are taken on 32-bit lanes while every zigzag code is below
        // 2^32 (values in −2^31…2^31 − 1): blocks at both ends of that range and just past it,
        // far from zero so that frame of reference and uniform are costed.
        let high = Int64(Int32.max), low = Int64(Int32.min)
        blocks += [
            (0..<256).map { _ in high - Int64(random.next() % 100) },
            (0..<256).map { _ in low + Int64(random.next() % 100) },
            (0..<256).map { _ in high + 1 - Int64(random.next() % 100) },
            (0..<256).map { _ in low - 1 + Int64(random.next() % 100) },
            (0..<256).map { i in i % 2 == 0 ? low : high },
            [high, high - 1, high],
            [low, low + 1],
        ]
        for k in [0, 1, 5, 15, 31, 40, 62] {
            let range = Int64(1) << k
            blocks.append((0..<256).map { _ in Int64(bitPattern: random.next() % UInt64(range)) - range / 2 })
            blocks.append((0..<256).map { _ in Int64(bitPattern: random.next() % (UInt64(range) + 1)) })
            // Zigzag values at and just past the escape of Rice with parameter k.
            let escape = UInt64(32) << UInt64(min(k, 26))
            blocks.append(
                (0..<256).map { (i: Int) -> Int64 in
                    let z: UInt64 =
                        switch i % 64 {
                        case 0: escape
                        case 1: escape - 1
                        default: UInt64(i % 7)
                        }
                    return unzigzag(z)
                })
        }
        // Mostly zeros with small nonzero values (sparse costed in one pass, no escapes), at
        // several magnitudes so the three sparse parameters straddle the escape bound.
        for magnitude: UInt64 in [1, 3, 40, 1 << 20, 1 << 36] {
            blocks.append(
                (0..<256).map { _ in
                    random.next() % 5 == 0 ? unzigzag(1 + random.next() % (2 * magnitude)) : 0
                })
        }
        for _ in 0..<40 {
            let count = 1 + Int(random.next() % 700)
            let scale = Double(1 << (random.next() % 40))
            blocks.append((0..<count).map { _ in Int64((random.gaussian() * scale).rounded()) })
        }
        return blocks
    }

    @Test func everyBlockCodeRoundTripsAndStaysWithinPlainBits() throws {
        var random = SeededGenerator(seed: 99)
        for block in Self.adversarialBlocks(&random) {
            var writer = BitWriter()
            block.withUnsafeBufferPointer { ResidualCoding.encode($0, into: &writer) }
            // Never worse than frame of reference: 64 bits a value plus a header a block.
            #expect(writer.bitCount <= block.count * 64 + (block.count / 256 + 1) * 80)
            let bytes = writer.bytes() + [UInt8](repeating: 0, count: BitReader.padding)
            var decoded = [Int64](repeating: 0, count: block.count)
            let bitCount = writer.bitCount
            try bytes.withUnsafeBytes { raw in
                var reader = BitReader(base: raw.baseAddress!, limit: bitCount)
                try decoded.withUnsafeMutableBufferPointer { out in
                    try ResidualCoding.decode(count: block.count, from: &reader, into: out.baseAddress!)
                }
                #expect(reader.position == bitCount)
            }
            #expect(decoded == block)
        }
    }

    @Test func reservedWritesMatchPlainWrites() {
        var random = SeededGenerator(seed: 12)
        var plain = BitWriter()
        var reserved = BitWriter()
        for _ in 0..<2_000 {
            let fields = (0..<Int(random.next() % 40)).map { _ -> (UInt64, Int) in
                let width = Int(random.next() % 65)
                return (width == 64 ? random.next() : random.next() & BitReader.mask(width), width)
            }
            for (value, width) in fields { plain.write(value, bits: width) }
            reserved.withReservedBits(fields.reduce(0) { $0 + $1.1 }) { cursor in
                for (value, width) in fields { cursor.write(value, bits: width) }
            }
            #expect(reserved.bitCount == plain.bitCount)
        }
        #expect(reserved.bytes() == plain.bytes())
        var appended: [UInt8] = [7]
        plain.append(to: &appended)
        #expect(appended == [7] + plain.bytes())
    }
}

extension [UInt8] {
    /// Bytes from hexadecimal text (whitespace ignored).
    init(hex: String) {
        let digits = hex.filter(\.isHexDigit).map { UInt8(String($0), radix: 16)! }
        self = stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
    }
}
