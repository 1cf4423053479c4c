// Entropy coding of prediction residuals, in blocks of `blockLength` values. Each block picks the
// cheapest of three exact codings (the encoder computes every candidate's size in bits):
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

    /// Encodes `residuals` (any count, including zero) into `writer`.
    static func encode(_ residuals: UnsafeBufferPointer<Int64>, into writer: inout BitWriter, fast: Bool) {
        var zigzags = [UInt64](repeating: 0, count: blockLength)
        zigzags.withUnsafeMutableBufferPointer { zz in
            var start = 0
            while start < residuals.count {
                let count = min(blockLength, residuals.count - start)
                let block = UnsafeBufferPointer(rebasing: residuals[start..<start + count])
                encodeBlock(block, zigzags: zz, into: &writer, fast: fast)
                start += count
            }
        }
    }

    private static func encodeBlock(
        _ block: UnsafeBufferPointer<Int64>, zigzags: UnsafeMutableBufferPointer<UInt64>,
        into writer: inout BitWriter, fast: Bool
    ) {
        let count = block.count
        var minimum = Int64.max, maximum = Int64.min
        var sum = 0
        var nonzero = 0
        var maxZigzag: UInt64 = 0
        for index in 0..<count {
            let value = block[index]
            minimum = min(minimum, value)
            maximum = max(maximum, value)
            let z = zigzag(value)
            zigzags[index] = z
            sum &+= Int(truncatingIfNeeded: min(z, 1 << 40))  // only to guess parameters
            maxZigzag = max(maxZigzag, z)
            if z != 0 { nonzero &+= 1 }
        }
        // A constant block (receive times equal to sensor times, a flat line): nothing per value.
        if minimum == maximum {
            writer.write(0, bits: 2)
            writer.write(0, bits: 7)
            writer.writeVarBits(zigzag(minimum))
            return
        }
        // Frame of reference.
        let spread = UInt64(bitPattern: maximum &- minimum)
        let width = 64 - spread.leadingZeroBitCount
        let forCost = 2 + 7 + BitWriter.varBitsCost(zigzag(minimum)) + width * count

        // Rice, with k near log2 of the mean: four parameters costed in one pass (exact while no
        // value escapes), together with the uniform code's count of long codewords.
        let zz = UnsafeBufferPointer(rebasing: zigzags[0..<count])
        let mean = Double(sum) / Double(count)
        let guess = mean < 2 ? 0 : min(maxRiceParameter, Int(mean.log2Floor))
        let k0 = max(0, min(maxRiceParameter - 3, guess - 2))
        let range = spread &+ 1
        let uniformApplies = spread != UInt64.max && range & spread != 0
        let uniformK = uniformApplies ? 63 - range.leadingZeroBitCount : 0
        let short = uniformApplies ? (UInt64(2) &<< UInt64(uniformK)) &- range : 0
        var s0 = 0, s1 = 0, s2 = 0, s3 = 0, long = 0
        let shift = UInt64(k0)
        for index in 0..<count {
            let z = zz[index] &>> shift
            s0 &+= Int(truncatingIfNeeded: z)
            s1 &+= Int(truncatingIfNeeded: z &>> 1)
            s2 &+= Int(truncatingIfNeeded: z &>> 2)
            s3 &+= Int(truncatingIfNeeded: z &>> 3)
            if UInt64(bitPattern: block[index] &- minimum) >= short { long &+= 1 }
        }
        var bestRice = (k: 0, cost: Int.max)
        for (offset, shifted) in [s0, s1, s2, s3].enumerated() {
            let k = k0 + offset
            let cost = maxZigzag &>> UInt64(k) < UInt64(escapeQuotient)
                ? 2 + 6 + count * (1 + k) + shifted : riceCost(zz, k: k)
            if cost < bestRice.cost { bestRice = (k, cost) }
        }

        // Sparse, only when at least half the values are zero.
        var bestSparse = (k: 0, cost: Int.max)
        if nonzero * 2 <= count {
            let nonzeroMean = nonzero == 0 ? 0 : Double(sum) / Double(nonzero)
            let k0 = nonzeroMean < 2 ? 0 : min(maxRiceParameter, Int(nonzeroMean.log2Floor))
            for k in [k0, k0 - 1, k0 + 1] where k >= 0 && k <= maxRiceParameter {
                let cost = sparseCost(zz, k: k)
                if cost < bestSparse.cost { bestSparse = (k, cost) }
            }
        }

        // Uniform (truncated binary), when the range is not a power of two.
        let uniformCost = uniformApplies
            ? 2 + BitWriter.varBitsCost(zigzag(minimum)) + BitWriter.varBitsCost(spread) + uniformK * count + long
            : Int.max

        if uniformCost < forCost && uniformCost <= bestRice.cost && uniformCost <= bestSparse.cost {
            let k = uniformK
            writer.write(3, bits: 2)
            writer.writeVarBits(zigzag(minimum))
            writer.writeVarBits(spread)
            for index in 0..<count {
                let x = UInt64(bitPattern: block[index] &- minimum)
                if x < short {
                    writer.write(x, bits: k)
                } else {
                    let y = x &+ short
                    writer.write(y &>> 1, bits: k)
                    writer.write(y & 1, bits: 1)
                }
            }
        } else if forCost <= bestRice.cost && forCost <= bestSparse.cost {
            writer.write(0, bits: 2)
            writer.write(UInt64(width), bits: 7)
            writer.writeVarBits(zigzag(minimum))
            for index in 0..<count {
                writer.write(UInt64(bitPattern: block[index] &- minimum), bits: width)
            }
        } else if bestRice.cost <= bestSparse.cost {
            writer.write(1, bits: 2)
            writer.write(UInt64(bestRice.k), bits: 6)
            for index in 0..<count { writeRice(zz[index], k: bestRice.k, into: &writer) }
        } else {
            writer.write(2, bits: 2)
            writer.write(UInt64(bestSparse.k), bits: 6)
            for index in 0..<count {
                let z = zz[index]
                if z == 0 {
                    writer.write(0, bits: 1)
                } else {
                    writer.write(1, bits: 1)
                    writeRice(z - 1, k: bestSparse.k, into: &writer)
                }
            }
        }
    }

    @inline(__always)
    private static func writeRice(_ z: UInt64, k: Int, into writer: inout BitWriter) {
        let quotient = z &>> UInt64(k)
        if quotient < UInt64(escapeQuotient) {
            let q = Int(quotient)
            if q &+ 1 &+ k <= 64 {
                // Unary and remainder in one field: q zeros, a one, then the low k bits.
                writer.write((1 &<< quotient) | ((z & BitReader.mask(k)) &<< UInt64(q &+ 1)), bits: q &+ 1 &+ k)
            } else {
                writer.writeUnary(q)
                writer.write(z & BitReader.mask(k), bits: k)
            }
        } else {
            writer.write(0, bits: escapeQuotient)
            writer.write(z, bits: 64)
        }
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
        var start = 0
        while start < count {
            let length = min(blockLength, count - start)
            let out = output + start
            let mode = reader.read(bits: 2)
            switch mode {
            case 0:
                let width = Int(reader.read(bits: 7))
                guard width <= 64 else { throw .malformed("frame-of-reference width \(width)") }
                let minimum = unzigzag(reader.readVarBits())
                guard reader.position + width * length <= reader.limit else {
                    throw .malformed("residuals run past their section")
                }
                if width == 0 {
                    for index in 0..<length { out[index] = minimum }
                } else if width <= 56 {
                    for index in 0..<length {
                        out[index] = minimum &+ Int64(bitPattern: reader.read(bits: width))
                    }
                } else {
                    for index in 0..<length {
                        out[index] = minimum &+ Int64(bitPattern: reader.readWide(bits: width))
                    }
                }
            case 1:
                let k = Int(reader.read(bits: 6))
                guard k <= maxRiceParameter else { throw .malformed("Rice parameter \(k)") }
                for index in 0..<length {
                    out[index] = unzigzag(readRice(&reader, k: k))
                    if reader.overran { throw .malformed("residuals run past their section") }
                }
            case 2:
                let k = Int(reader.read(bits: 6))
                guard k <= maxRiceParameter else { throw .malformed("Rice parameter \(k)") }
                for index in 0..<length {
                    if reader.read(bits: 1) == 0 {
                        out[index] = 0
                    } else {
                        out[index] = unzigzag(readRice(&reader, k: k) &+ 1)
                    }
                    if reader.overran { throw .malformed("residuals run past their section") }
                }
            default:
                let minimum = unzigzag(reader.readVarBits())
                let spread = reader.readVarBits()
                guard spread != UInt64.max else { throw .malformed("uniform range") }
                let range = spread &+ 1
                let k = 63 - range.leadingZeroBitCount
                let short = (UInt64(2) &<< UInt64(k)) &- range
                for index in 0..<length {
                    let high = k <= 56 ? reader.read(bits: k) : reader.readWide(bits: k)
                    let x = high < short ? high : ((high &<< 1) | reader.read(bits: 1)) &- short
                    out[index] = minimum &+ Int64(bitPattern: x)
                    if reader.overran { throw .malformed("residuals run past their section") }
                }
            }
            if reader.overran { throw .malformed("residuals run past their section") }
            start += length
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

extension Double {
    /// ⌊log₂ self⌋ for self ≥ 1.
    fileprivate var log2Floor: Int { Int(exponent) }
}
