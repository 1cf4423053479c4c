// Entropy coding of prediction residuals, in blocks of `blockLength` values. Each block picks the
// cheapest of four exact codings (the encoder computes each candidate's size in bits, and skips
// frame of reference and uniform where they cannot win — see `encodeBlock`):
//
//   mode 0, frame of reference: 7-bit width w, the block minimum m (varbits, zigzag), then each
//           value as (r − m) in w bits. Best for uniform noise such as timestamp jitter, and for
//           constant blocks (w = 0 costs nothing per value).
//   mode 1, Rice: 6-bit parameter k, then each zigzag value z as unary(z >> k) and the low k bits.
//           Best for the peaked residuals of a good predictor. Quotients ≥ 32 escape: 32 zero
//           bits, then z in 64 bits, so adversarial values cost at most 96 bits.
//   mode 2, sparse: 6-bit k, then per value one flag bit (set when nonzero) and, for nonzero
//           values, Rice(z − 1). Best for mostly-zero residuals (receive times of batched reads).
//   mode 3, uniform: the minimum m and the range size R − 1 (varbits), then each (r − m) in
//           truncated binary: with k = ⌊log₂ R⌋ and u = 2^(k+1) − R, values below u take k bits,
//           the others k + 1 (the high k bits of x + u first, then its low bit). ≈ log₂ R bits
//           per value: the right code for uniform noise such as ±20 µs timestamp jitter.
//
// Every block starts with its 2-bit mode. Pure functions; arithmetic wraps, so any Int64
// residual round-trips.

enum ResidualCoding {
    static let blockLength = 256
    static let escapeQuotient = 32
    static let maxRiceParameter = 56

    /// Encodes the next `count` residuals of `source` into `writer`, block by block: each block
    /// is drawn into a small buffer, measured (the statistics the choice of code needs) and coded
    /// at once; no column-sized buffer is needed.
    @inline(__always)
    static func encode<Source: ResidualSource>(_ source: inout Source, count: Int, into writer: inout BitWriter) {
        withUnsafeTemporaryAllocation(of: Int64.self, capacity: blockLength) { block in
            withUnsafeTemporaryAllocation(of: UInt64.self, capacity: blockLength) { zigzags in
                var done = 0
                while done < count {
                    let length = min(blockLength, count - done)
                    source.fill(block.baseAddress!, count: length)
                    encodeBlock(
                        UnsafeBufferPointer(rebasing: block[0..<length]), zigzags: zigzags.baseAddress!, into: &writer)
                    done += length
                }
            }
        }
    }

    /// Encodes `residuals` (any count, including zero) into `writer`.
    static func encode(_ residuals: UnsafeBufferPointer<Int64>, into writer: inout BitWriter) {
        guard let base = residuals.baseAddress else { return }
        var source = VerbatimResiduals(x: base, index: 0)
        encode(&source, count: residuals.count, into: &writer)
    }

    /// What `encode` writes for `count` residuals that all equal `value`, without looking at them.
    static func encodeConstant(_ value: Int64, count: Int, into writer: inout BitWriter) {
        for _ in stride(from: 0, to: count, by: blockLength) { writeConstantBlock(value, into: &writer) }
    }

    /// A block whose values all equal `value`: frame of reference of width 0.
    private static func writeConstantBlock(_ value: Int64, into writer: inout BitWriter) {
        writer.write(0, bits: 2)
        writer.write(0, bits: 7)
        writer.writeVarBits(zigzag(value))
    }

    /// Chooses the cheapest code for a block and writes it. Every candidate considered is costed
    /// exactly; frame of reference and uniform are only considered when the block's largest
    /// value is within a few bits of its mean (otherwise the range is too wide for them to beat
    /// Rice), which spares the block's minimum and maximum (`bounds`).
    private static func encodeBlock(
        _ block: UnsafeBufferPointer<Int64>, zigzags: UnsafeMutablePointer<UInt64>, into writer: inout BitWriter
    ) {
        let count = block.count
        let values = block.baseAddress!
        // One pass: zigzag codes, their sum, their bits or-ed together, zeros. Written with
        // logical shifts, subtraction and or only (no 64-bit compare or arithmetic shift, which
        // baseline x86-64 lacks in vector form), so the compiler vectorises it.
        var sum: UInt64 = 0, bits: UInt64 = 0, zeroBits: UInt64 = 0
        for index in 0..<count {
            let v = UInt64(bitPattern: values[index])
            let z = (v &<< 1) ^ (0 &- (v &>> 63))
            zigzags[index] = z
            sum &+= z
            bits |= z
            // 1 when z == 0: the top bit of z | −z is set for every other value.
            zeroBits &+= ((z | (0 &- z)) &>> 63) ^ 1
        }
        let zeros = Int(truncatingIfNeeded: zeroBits)
        let zz = UnsafeBufferPointer(start: zigzags, count: count)
        if bits == 0 {
            writeConstantBlock(0, into: &writer)
            return
        }
        // The sum is exact while every value is below 2^55 (a block has at most 2^8 values).
        let exactSum = bits < 1 << 55
        let mean = exactSum ? sum / UInt64(count) : bits >> 1
        let meanLength = 64 - mean.leadingZeroBitCount
        let maxLength = 64 - bits.leadingZeroBitCount

        // Rice, with k near log2 of the mean: four parameters costed in one pass (exact while no
        // value escapes).
        let guess = mean < 2 ? 0 : min(maxRiceParameter, meanLength - 1)
        let k0 = max(0, min(maxRiceParameter - 3, guess - 2))
        let shifted = shiftedSums(zz, by: k0)
        var best = (code: Code.rice(k: 0), cost: Int.max)
        @inline(__always) func considerRice(_ k: Int, _ total: Int) {
            // Exact unless some value might escape (its quotient reach 32): then count exactly.
            let cost =
                bits &>> UInt64(k) < UInt64(escapeQuotient)
                ? 2 + 6 + count * (1 + k) + total : riceCost(zz, k: k)
            if cost < best.cost { best = (.rice(k: k), cost) }
        }
        considerRice(k0, shifted.0)
        considerRice(k0 + 1, shifted.1)
        considerRice(k0 + 2, shifted.2)
        considerRice(k0 + 3, shifted.3)

        // Sparse, only when at least half the values are zero.
        let nonzero = count - zeros
        if nonzero * 2 <= count {
            let nonzeroMean = !exactSum ? mean : sum / UInt64(nonzero)
            let k0 = nonzeroMean < 2 ? 0 : min(maxRiceParameter, 63 - nonzeroMean.leadingZeroBitCount)
            let kLow = max(0, k0 - 1), kHigh = min(maxRiceParameter, k0 + 1)
            if bits &>> UInt64(kLow) < UInt64(escapeQuotient) {
                // No nonzero value escapes at these parameters (z − 1 < z ≤ bits): the three
                // costs come exactly from one vectorised pass, as Rice's do.
                let sums = sparseShiftedSums(zz, by: kLow)
                for k in kLow...kHigh {
                    let shifted = k == kLow ? sums.0 : k == kLow + 1 ? sums.1 : sums.2
                    let cost = 2 + 6 + count + nonzero * (1 + k) + shifted
                    if cost < best.cost { best = (.sparse(k: k), cost) }
                }
            } else {
                for k in kLow...kHigh {
                    let cost = sparseCost(zz, k: k)
                    if cost < best.cost { best = (.sparse(k: k), cost) }
                }
            }
        }

        // Frame of reference and uniform: they spend about log2(range) bits per value, Rice about
        // log2(mean) + 2, and the range is at least half the largest value unless the values sit
        // away from zero — in which case the largest value is close to the mean.
        if maxLength <= meanLength + 3 || best.cost > count * maxLength {
            let (minimum, maximum) = bounds(values, count: count, orBits: bits)
            if minimum == maximum {
                writeConstantBlock(minimum, into: &writer)
                return
            }
            let spread = UInt64(bitPattern: maximum &- minimum)
            let width = 64 - spread.leadingZeroBitCount
            let forCost = 2 + 7 + BitWriter.varBitsCost(zigzag(minimum)) + width * count
            if forCost < best.cost { best = (.frameOfReference(minimum: minimum, width: width), forCost) }

            // Uniform (truncated binary) when the range is not a power of two; its long
            // codewords are only counted when it might win.
            let range = spread &+ 1
            if spread != UInt64.max, range & spread != 0 {
                let k = 63 - range.leadingZeroBitCount
                let short = (UInt64(2) &<< UInt64(k)) &- range
                let header = 2 + BitWriter.varBitsCost(zigzag(minimum)) + BitWriter.varBitsCost(spread)
                if header + k * count < best.cost {
                    let cost =
                        header + k * count + longCodewords(values, count: count, minimum: minimum, spread: spread, short: short)
                    if cost <= best.cost { best = (.uniform(minimum: minimum, spread: spread), cost) }
                }
            }
        }
        write(best.code, cost: best.cost, values: values, zigzags: zz, orBits: bits, into: &writer)
    }

    /// The smallest and largest of `values`; `orBits` is their zigzag codes or-ed together.
    /// Baseline x86-64 has no vector compare of 64-bit integers, so a 64-bit pass runs one value
    /// at a time; when every value fits 32 bits (zigzag codes below 2^32, as residuals of sensor
    /// signals and timestamp jitter do) the same pass runs on 32-bit lanes, which vectorise.
    @inline(__always)
    private static func bounds(_ values: UnsafePointer<Int64>, count: Int, orBits: UInt64) -> (min: Int64, max: Int64) {
        if orBits < 1 << 32 {
            var minimum = Int32.max, maximum = Int32.min
            for index in 0..<count {
                let value = Int32(truncatingIfNeeded: values[index])
                minimum = min(minimum, value)
                maximum = max(maximum, value)
            }
            return (Int64(minimum), Int64(maximum))
        }
        var minimum = Int64.max, maximum = Int64.min
        for index in 0..<count {
            minimum = min(minimum, values[index])
            maximum = max(maximum, values[index])
        }
        return (minimum, maximum)
    }

    /// A block code with its parameters.
    private enum Code {
        case frameOfReference(minimum: Int64, width: Int)
        case rice(k: Int)
        case sparse(k: Int)
        case uniform(minimum: Int64, spread: UInt64)
    }

    /// Writes a block in `code`, whose exact size is `cost` bits; `orBits` is the block's zigzag
    /// codes or-ed together.
    @inline(__always)
    private static func write(
        _ code: Code, cost: Int, values: UnsafePointer<Int64>, zigzags zz: UnsafeBufferPointer<UInt64>, orBits: UInt64,
        into writer: inout BitWriter
    ) {
        let count = zz.count
        switch code {
        case .uniform(let minimum, let spread):
            let range = spread &+ 1
            let k = 63 - range.leadingZeroBitCount
            let short = (UInt64(2) &<< UInt64(k)) &- range
            writer.withReservedBits(cost) { cursor in
                cursor.write(3, bits: 2)
                cursor.writeVarBits(zigzag(minimum))
                cursor.writeVarBits(spread)
                if spread < 1 << 62 {
                    // The same fields without a branch per value (long and short codewords come
                    // in no predictable order): x and short are below 2^63, so x − short is
                    // negative exactly for short codewords. Fields of four (or two) values are
                    // joined before they reach the cursor when they fit one word.
                    let kBits = UInt64(truncatingIfNeeded: k)
                    @inline(__always) func field(_ index: Int) -> (UInt64, Int) {
                        let x = UInt64(bitPattern: values[index] &- minimum)
                        let y = x &+ short
                        let long = ((x &- short) &>> 63) ^ 1
                        let mask = 0 &- long
                        return ((((y &>> 1) | ((y & 1) &<< kBits)) & mask) | (x & ~mask), k &+ Int(truncatingIfNeeded: long))
                    }
                    writeGrouped(count: count, maxFieldBits: k &+ 1, into: &cursor, field)
                } else {
                    for index in 0..<count {
                        // Short codewords: x in k bits. Long ones: the high k bits of x + short,
                        // then its low bit — one (k + 1)-bit field, low bit on top.
                        let x = UInt64(bitPattern: values[index] &- minimum)
                        let y = x &+ short
                        let isLong = x >= short
                        let field = isLong ? (y &>> 1) | ((y & 1) &<< UInt64(k)) : x
                        cursor.write(field, bits: isLong ? k &+ 1 : k)
                    }
                }
            }
        case .frameOfReference(let minimum, let width):
            writer.withReservedBits(cost) { cursor in
                cursor.write(0, bits: 2)
                cursor.write(UInt64(width), bits: 7)
                cursor.writeVarBits(zigzag(minimum))
                writeGrouped(count: count, maxFieldBits: width, into: &cursor) { index in
                    (UInt64(bitPattern: values[index] &- minimum), width)
                }
            }
        case .rice(let k):
            writer.withReservedBits(cost) { cursor in
                cursor.write(1, bits: 2)
                cursor.write(UInt64(k), bits: 6)
                let mask = BitReader.mask(k)
                let shift = UInt64(truncatingIfNeeded: k)
                // The largest quotient is at most that of the block's or-ed bits.
                let maxQuotient = orBits &>> shift
                if maxQuotient < UInt64(escapeQuotient), k < 64 - escapeQuotient {
                    // No escapes: each codeword is q zeros, a one and the low k bits, one field.
                    writeGrouped(count: count, maxFieldBits: Int(maxQuotient) &+ 1 &+ k, into: &cursor) { index in
                        let z = zz[index]
                        let quotient = z &>> shift
                        return ((1 &<< quotient) | ((z & mask) &<< (quotient &+ 1)), Int(truncatingIfNeeded: quotient) &+ 1 &+ k)
                    }
                } else if k < 64 - escapeQuotient {
                    // Every unescaped codeword (q < 32 zeros, a one, k bits) fits one field.
                    for index in 0..<count {
                        let z = zz[index]
                        let quotient = z &>> shift
                        if quotient < UInt64(escapeQuotient) {
                            cursor.write(
                                (1 &<< quotient) | ((z & mask) &<< (quotient &+ 1)),
                                bits: Int(truncatingIfNeeded: quotient) &+ 1 &+ k)
                        } else {
                            cursor.write(0, bits: escapeQuotient)
                            cursor.write(z, bits: 64)
                        }
                    }
                } else {
                    for index in 0..<count { writeRice(zz[index], k: k, into: &cursor) }
                }
            }
        case .sparse(let k):
            writer.withReservedBits(cost) { cursor in
                cursor.write(2, bits: 2)
                cursor.write(UInt64(k), bits: 6)
                for index in 0..<count {
                    let z = zz[index]
                    if z == 0 {
                        cursor.write(0, bits: 1)
                    } else {
                        cursor.write(1, bits: 1)
                        writeRice(z - 1, k: k, into: &cursor)
                    }
                }
            }
        }
    }

    /// Writes the fields `field(0)…field(count − 1)` (value, width ≤ `maxFieldBits`), joining
    /// four or two neighbours into one cursor write when their widths fit a word: the cursor's
    /// position is a chain from one write to the next, and fewer, wider writes shorten it.
    @inline(__always)
    private static func writeGrouped(
        count: Int, maxFieldBits: Int, into cursor: inout BitCursor, _ field: (Int) -> (UInt64, Int)
    ) {
        var index = 0
        if maxFieldBits &* 4 <= 64 {
            while index &+ 4 <= count {
                let (f0, w0) = field(index), (f1, w1) = field(index &+ 1)
                let (f2, w2) = field(index &+ 2), (f3, w3) = field(index &+ 3)
                let low = f0 | f1 &<< UInt64(truncatingIfNeeded: w0), lowWidth = w0 &+ w1
                let high = f2 | f3 &<< UInt64(truncatingIfNeeded: w2), highWidth = w2 &+ w3
                cursor.write(low | high &<< UInt64(truncatingIfNeeded: lowWidth), bits: lowWidth &+ highWidth)
                index &+= 4
            }
        } else if maxFieldBits &* 2 <= 64 {
            while index &+ 2 <= count {
                let (f0, w0) = field(index), (f1, w1) = field(index &+ 1)
                cursor.write(f0 | f1 &<< UInt64(truncatingIfNeeded: w0), bits: w0 &+ w1)
                index &+= 2
            }
        }
        while index < count {
            let (f, w) = field(index)
            cursor.write(f, bits: w)
            index &+= 1
        }
    }

    @inline(__always)
    private static func writeRice(_ z: UInt64, k: Int, into cursor: inout BitCursor) {
        let quotient = z &>> UInt64(k)
        if quotient < UInt64(escapeQuotient) {
            let q = Int(quotient)
            if q &+ 1 &+ k <= 64 {
                // Unary and remainder in one field: q zeros, a one, then the low k bits.
                cursor.write((1 &<< quotient) | ((z & BitReader.mask(k)) &<< UInt64(q &+ 1)), bits: q &+ 1 &+ k)
            } else {
                cursor.write(1 &<< quotient, bits: q &+ 1)
                cursor.write(z & BitReader.mask(k), bits: k)
            }
        } else {
            cursor.write(0, bits: escapeQuotient)
            cursor.write(z, bits: 64)
        }
    }

    /// Values of the block with `value − minimum ≥ short`: uniform's (k + 1)-bit codewords.
    @inline(__always)
    private static func longCodewords(
        _ values: UnsafePointer<Int64>, count: Int, minimum: Int64, spread: UInt64, short: UInt64
    ) -> Int {
        var long: UInt64 = 0
        if spread < 1 << 62 {
            // Every x = value − minimum is at most the spread, and short at most the range, so
            // both are below 2^63 and the sign of x − short says it, in a loop that vectorises.
            for index in 0..<count {
                let x = UInt64(bitPattern: values[index] &- minimum)
                long &+= ((x &- short) &>> 63) ^ 1
            }
        } else {
            for index in 0..<count where UInt64(bitPattern: values[index] &- minimum) >= short { long &+= 1 }
        }
        return Int(truncatingIfNeeded: long)
    }

    /// Σ z >> (k + j) for j = 0…3, in one pass.
    @inline(__always)
    private static func shiftedSums(_ zz: UnsafeBufferPointer<UInt64>, by k: Int) -> (Int, Int, Int, Int) {
        var s0: UInt64 = 0, s1: UInt64 = 0, s2: UInt64 = 0, s3: UInt64 = 0
        let shift = UInt64(k)
        for z in zz {
            let y = z &>> shift
            s0 &+= y
            s1 &+= y &>> 1
            s2 &+= y &>> 2
            s3 &+= y &>> 3
        }
        return (
            Int(truncatingIfNeeded: s0), Int(truncatingIfNeeded: s1), Int(truncatingIfNeeded: s2),
            Int(truncatingIfNeeded: s3)
        )
    }

    /// Σ (z − 1) >> k, >> (k + 1) and >> (k + 2) over the nonzero zigzag codes: the quotients
    /// sparse spends on them, without a branch per value (a zero is masked to 0 by the top bit
    /// of z | −z, which only zero lacks), so the loop vectorises.
    private static func sparseShiftedSums(_ zz: UnsafeBufferPointer<UInt64>, by k: Int) -> (Int, Int, Int) {
        var s0: UInt64 = 0, s1: UInt64 = 0, s2: UInt64 = 0
        let shift = UInt64(k)
        for z in zz {
            let nonzero = 0 &- ((z | (0 &- z)) &>> 63)
            let y = ((z &- 1) & nonzero) &>> shift
            s0 &+= y
            s1 &+= y &>> 1
            s2 &+= y &>> 2
        }
        return (Int(truncatingIfNeeded: s0), Int(truncatingIfNeeded: s1), Int(truncatingIfNeeded: s2))
    }

    private static func riceCost(_ zigzags: UnsafeBufferPointer<UInt64>, k: Int) -> Int {
        var bits = 2 + 6
        let shift = UInt64(k)
        for z in zigzags {
            let quotient = z &>> shift
            bits &+= quotient < UInt64(escapeQuotient) ? Int(quotient) &+ 1 &+ k : escapeQuotient + 64
        }
        return bits
    }

    private static func sparseCost(_ zigzags: UnsafeBufferPointer<UInt64>, k: Int) -> Int {
        var bits = 2 + 6 + zigzags.count
        let shift = UInt64(k)
        for z in zigzags where z != 0 {
            let quotient = (z &- 1) &>> shift
            bits &+= quotient < UInt64(escapeQuotient) ? Int(quotient) &+ 1 &+ k : escapeQuotient + 64
        }
        return bits
    }

    /// Decodes `count` residuals into `output`. Throws when the data runs past the reader's limit
    /// or names an unknown mode (only possible for corrupt input whose checksum still matched).
    static func decode(
        count: Int, from reader: inout BitReader, into output: UnsafeMutablePointer<Int64>
    ) throws(ChunkCodecError) {
        var values = VerbatimValues(out: output)
        try decode(count: count, from: &reader, into: &values)
    }

    /// Decodes `count` residuals and hands each to `values`, which writes what it stands for.
    /// Throws as above.
    ///
    /// The per-value loops work on a local copy of the reader, so its position stays in a
    /// register (it is the loop's critical dependency), and check the limit per value with a
    /// register compare: a value reads at most 96 bits, within `BitReader.padding`, so stopping
    /// at the first value that starts past the limit never reads outside the buffer.
    @inline(__always)
    static func decode<Values: Reconstruction>(
        count: Int, from reader: inout BitReader, into values: inout Values
    ) throws(ChunkCodecError) {
        // A local copy, so the reconstruction's state can live in registers (through the inout
        // parameter it stays in memory, and every value would load and store it).
        var sink = values
        defer { values = sink }
        var start = 0
        while start < count {
            let length = min(blockLength, count - start)
            let mode = reader.read(bits: 2)
            switch mode {
            case 0:
                let width = Int(reader.read(bits: 7))
                guard width <= 64 else { throw .malformed("frame-of-reference width \(width)") }
                let minimum = unzigzag(reader.readVarBits())
                guard reader.position + width * length <= reader.limit else {
                    throw .malformed("residuals run past their section")
                }
                var bits = reader
                if width == 0 {
                    for index in start..<start &+ length { sink.take(minimum, at: index) }
                } else if width <= 56 {
                    for index in start..<start &+ length {
                        sink.take(minimum &+ Int64(bitPattern: bits.read(bits: width)), at: index)
                    }
                } else {
                    for index in start..<start &+ length {
                        sink.take(minimum &+ Int64(bitPattern: bits.readWide(bits: width)), at: index)
                    }
                }
                reader = bits
            case 1:
                let k = Int(reader.read(bits: 6))
                guard k <= maxRiceParameter else { throw .malformed("Rice parameter \(k)") }
                decodeRice(&reader, k: k, indices: start..<start &+ length, into: &sink)
            case 2:
                let k = Int(reader.read(bits: 6))
                guard k <= maxRiceParameter else { throw .malformed("Rice parameter \(k)") }
                var bits = reader
                for index in start..<start &+ length {
                    if bits.read(bits: 1) == 0 {
                        sink.take(0, at: index)
                    } else {
                        sink.take(unzigzag(readRice(&bits, k: k) &+ 1), at: index)
                    }
                    if bits.overran { break }
                }
                reader = bits
            default:
                let minimum = unzigzag(reader.readVarBits())
                let spread = reader.readVarBits()
                guard spread != UInt64.max else { throw .malformed("uniform range") }
                decodeUniform(&reader, minimum: minimum, spread: spread, indices: start..<start &+ length, into: &sink)
            }
            if reader.overran { throw .malformed("residuals run past their section") }
            start += length
        }
    }

    /// A Rice block: per value, q zeros, a one, the low k bits (q < 32; 32 zeros escape to a
    /// 64-bit value). Stops early once past the limit (the caller then throws).
    ///
    /// Reading a codeword at the reader's position is one chain of dependent steps (position →
    /// load → shift → count zeros → position), so codewords are taken up to `group` at a time
    /// from one 57-bit window: each after the first costs only count zeros → shift. A codeword
    /// that does not fit what is left of the window waits for the next load; one that does not
    /// fit a fresh window (a long quotient or an escape) is read on its own.
    @inline(__always)
    private static func decodeRice<Values: Reconstruction>(
        _ reader: inout BitReader, k: Int, indices: Range<Int>, into values: inout Values
    ) {
        let group = 4
        var bits = reader
        defer { reader = bits }
        // Below this quotient the whole codeword lies in one 57-bit window.
        let inWindow = min(escapeQuotient, 56 - k)
        let mask = BitReader.mask(k)
        let shift = UInt64(truncatingIfNeeded: k)
        var index = indices.lowerBound
        let end = indices.upperBound
        while index < end {
            var window = bits.peek()
            var used = 0
            let last = min(index &+ group, end)
            let first = index
            while index < last {
                let quotient = window.trailingZeroBitCount
                let length = quotient &+ 1 &+ k
                if quotient >= inWindow || used &+ length > 57 { break }
                values.take(
                    unzigzag(
                        UInt64(truncatingIfNeeded: quotient) &<< shift
                            | ((window &>> UInt64(truncatingIfNeeded: quotient &+ 1)) & mask)), at: index)
                window &>>= UInt64(truncatingIfNeeded: length)
                used &+= length
                index &+= 1
            }
            bits.skip(used)
            if index == first {
                values.take(unzigzag(readRice(&bits, k: k)), at: index)
                index &+= 1
            }
            if bits.overran { return }
        }
    }

    /// A uniform (truncated binary) block. Short and long codewords come in no predictable order,
    /// so for k ≤ 55 the choice is made with masks, not a branch.
    @inline(__always)
    private static func decodeUniform<Values: Reconstruction>(
        _ reader: inout BitReader, minimum: Int64, spread: UInt64, indices: Range<Int>, into values: inout Values
    ) {
        var bits = reader
        defer { reader = bits }
        let range = spread &+ 1
        let k = 63 - range.leadingZeroBitCount
        let short = (UInt64(2) &<< UInt64(k)) &- range
        if k <= 55 {
            let mask = BitReader.mask(k)
            let shift = UInt64(truncatingIfNeeded: k)
            // As many codewords (at most k + 1 bits each) as always fit one 57-bit window come
            // from one load, as in `decodeRice`: three of timestamp jitter's 16 or 17 bits.
            let perLoad = min(4, 57 / (k &+ 1))
            var index = indices.lowerBound
            let end = indices.upperBound
            while index < end {
                var window = bits.peek()
                var used = 0
                let last = min(index &+ perLoad, end)
                while index < last {
                    let high = window & mask
                    // high and short are below 2^57: the sign of high − short says short or long.
                    let long = ((high &- short) &>> 63) ^ 1
                    let choose = 0 &- long
                    let extended = ((high &<< 1) | ((window &>> shift) & 1)) &- short
                    let length = k &+ Int(truncatingIfNeeded: long)
                    values.take(minimum &+ Int64(bitPattern: (extended & choose) | (high & ~choose)), at: index)
                    window &>>= UInt64(truncatingIfNeeded: length)
                    used &+= length
                    index &+= 1
                }
                bits.skip(used)
                if bits.overran { return }
            }
        } else {
            for index in indices {
                let high = bits.readWide(bits: k)
                let x = high < short ? high : ((high &<< 1) | bits.read(bits: 1)) &- short
                values.take(minimum &+ Int64(bitPattern: x), at: index)
                if bits.overran { return }
            }
        }
    }

    @inline(__always)
    private static func readRice(_ reader: inout BitReader, k: Int) -> UInt64 {
        let window = reader.peek()
        let quotient = window.trailingZeroBitCount
        if quotient < escapeQuotient {
            if quotient &+ 1 &+ k <= 57 {
                reader.skip(quotient &+ 1 &+ k)
                let low = (window &>> UInt64(quotient &+ 1)) & BitReader.mask(k)
                return UInt64(quotient) &<< UInt64(k) | low
            }
            reader.skip(quotient &+ 1)
            return UInt64(quotient) &<< UInt64(k) | reader.read(bits: k)
        }
        reader.skip(escapeQuotient)
        return reader.readWide(bits: 64)
    }
}
