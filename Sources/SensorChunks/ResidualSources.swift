// The predictors' residuals, block by block, in index order. Each predictor is a small struct
// that the block encoder is specialised for (no closure or existential per value); it fills a
// block of residuals at a time, in loops simple enough for the compiler to keep in registers or
// vectorise. The same structs serve the sampled cost estimate (a few windows of a column) and the
// final encoding (the whole column), so the two can never disagree on what a predictor produces.
// The decoder's inverse lives in `ColumnCoding.read`; the round-trip tests hold the two together.

/// Yields residuals for consecutive indices from the start index it was made with, which must be
/// at or after the predictor's warm-up.
protocol ResidualSource {
    /// Writes the residuals of the next `count` indices to `out`.
    mutating func fill(_ out: UnsafeMutablePointer<Int64>, count: Int)
}

/// `.verbatim`: the value itself.
struct VerbatimResiduals: ResidualSource {
    let x: UnsafePointer<Int64>
    var index: Int

    @inline(__always)
    mutating func fill(_ out: UnsafeMutablePointer<Int64>, count: Int) {
        out.update(from: x + index, count: count)
        index &+= count
    }
}

/// `.delta`: x[i] − x[i−1].
struct DeltaResiduals: ResidualSource {
    let x: UnsafePointer<Int64>
    var index: Int

    init(_ x: UnsafePointer<Int64>, from index: Int) {
        self.x = x
        self.index = index
    }

    @inline(__always)
    mutating func fill(_ out: UnsafeMutablePointer<Int64>, count: Int) {
        let base = x + index
        for j in 0..<count { out[j] = base[j] &- base[j &- 1] }
        index &+= count
    }
}

/// `.delta2`: x[i] − 2x[i−1] + x[i−2].
struct SecondDeltaResiduals: ResidualSource {
    let x: UnsafePointer<Int64>
    var index: Int

    init(_ x: UnsafePointer<Int64>, from index: Int) {
        self.x = x
        self.index = index
    }

    @inline(__always)
    mutating func fill(_ out: UnsafeMutablePointer<Int64>, count: Int) {
        let base = x + index
        for j in 0..<count { out[j] = base[j] &- 2 &* base[j &- 1] &+ base[j &- 2] }
        index &+= count
    }
}

/// `.grid`: x[i] − (origin + i·period), period in 1/2^16 ns. The product i·period is kept as a
/// running sum (wrapping arithmetic makes the two equal).
struct GridResiduals: ResidualSource {
    let x: UnsafePointer<Int64>
    var index: Int
    let parameters: PredictorParameters

    @inline(__always)
    mutating func fill(_ out: UnsafeMutablePointer<Int64>, count: Int) {
        let origin = parameters.origin, period = parameters.period
        let half: Int64 = 1 &<< (ColumnCoding.gridFractionBits &- 1)
        var scaled = Int64(index) &* period &+ half
        let base = x + index
        for j in 0..<count {
            out[j] = base[j] &- (origin &+ (scaled &>> ColumnCoding.gridFractionBits))
            scaled &+= period
        }
        index &+= count
    }
}

/// `.linear`: the first difference minus its prediction from the previous `order` differences,
/// (Σ c[k]·d[i−1−k] + ½) >> linearShift. Orders below 8 run the order-8 kernel with zero
/// coefficients in the unused places, which add nothing to the sum. The differences (and the
/// eight before them) go to a small buffer first, so the kernel is eight loads, multiplies and
/// adds per value with the coefficients in registers.
///
/// When every |d| of a block times Σ|c| stays below 2^50 (always, for sensor counts), the sum is
/// computed in `Double`: each product and partial sum is then an integer below 2^53, so exact,
/// and baseline x86-64 multiplies two doubles per instruction but has no vector 64-bit integer
/// multiply. Integers move in and out of `Double` by adding 1.5·2^52 (exact below 2^51), which
/// also vectorises. The result is the integer kernel's, bit for bit; other blocks use that kernel.
struct LinearResiduals: ResidualSource {
    let x: UnsafePointer<Int64>
    var index: Int
    private let c0, c1, c2, c3, c4, c5, c6, c7: Int64
    private let f0, f1, f2, f3, f4, f5, f6, f7: Double
    /// Σ|c[k]| (below 2^27 for fitted coefficients, each < 2^24).
    private let coefficientWeight: UInt64

    init(_ x: UnsafePointer<Int64>, from index: Int, coefficients: [Int64]) {
        precondition(coefficients.count <= 8 && index > coefficients.count)
        self.x = x
        self.index = index
        var c = [Int64](repeating: 0, count: 8)
        for k in coefficients.indices { c[k] = coefficients[k] }
        (c0, c1, c2, c3, c4, c5, c6, c7) = (c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7])
        (f0, f1, f2, f3) = (Double(c[0]), Double(c[1]), Double(c[2]), Double(c[3]))
        (f4, f5, f6, f7) = (Double(c[4]), Double(c[5]), Double(c[6]), Double(c[7]))
        // Each term capped at 2^40, so the sum cannot wrap; a large weight just keeps the
        // integer kernel.
        coefficientWeight = c.reduce(UInt64(0)) { $0 &+ min($1.magnitude, 1 << 40) }
    }

    /// 1.5·2^52: for |v| < 2^51, the double 1.5·2^52 + v has the bit pattern of this + v.
    private static let magic: Int64 = 0x4338_0000_0000_0000
    private static let magicValue: Double = 6_755_399_441_055_744

    @inline(__always)
    mutating func fill(_ out: UnsafeMutablePointer<Int64>, count: Int) {
        let start = index
        let x = self.x
        // A fresh buffer the compiler knows aliases nothing (what keeps these loops tight).
        withUnsafeTemporaryAllocation(of: Int64.self, capacity: 2 * (count + 8)) { buffer in
            let d = buffer.baseAddress! + 8
            let magic = Self.magic, magicValue = Self.magicValue
            // The differences as integers (d) and as doubles (f, valid only below 2^51, which the
            // bound checked next ensures for the Double kernel), and an upper bound of every |d|
            // (of the one's-complement magnitudes), in one vectorisable pass. d[j] is the
            // difference at index start + j; the eight before exist as far as the predictor's
            // order reaches (its warm-up), and are zero (times a zero coefficient) beyond.
            UnsafeMutableRawPointer(buffer.baseAddress! + count + 8).withMemoryRebound(
                to: Double.self, capacity: count + 8
            ) { doubles in
                let f = doubles + 8
                var magnitudes: UInt64 = 0
                for j in -8..<0 {
                    let difference = start &+ j &- 1 >= 0 ? x[start &+ j] &- x[start &+ j &- 1] : 0
                    d[j] = difference
                    let v = UInt64(bitPattern: difference)
                    magnitudes |= v ^ (0 &- (v &>> 63))
                    f[j] = Double(bitPattern: UInt64(bitPattern: difference &+ magic)) - magicValue
                }
                let base = x + start
                for j in 0..<count {
                    let difference = base[j] &- base[j &- 1]
                    d[j] = difference
                    let v = UInt64(bitPattern: difference)
                    magnitudes |= v ^ (0 &- (v &>> 63))
                    f[j] = Double(bitPattern: UInt64(bitPattern: difference &+ magic)) - magicValue
                }
                if coefficientWeight < 1 << 28, magnitudes < 1 << 21 {
                    // Σ|c|·|d| < 2^28 · 2^21 = 2^49: the sum is an exact integer in Double, as
                    // the type comment says. The integer kernel's (sum + 2^13) >> 14 is
                    // ⌊sum/2^14 + ½⌋, which is sum·2^−14 + 2^−15 rounded to nearest: the fraction
                    // of sum·2^−14 is a multiple of 2^−14, so adding 2^−15 − ½ moves it strictly
                    // inside (−½, ½) and no tie is left. Both steps are exact (|sum·2^−14| < 2^35,
                    // 50 significant bits), and adding 1.5·2^52 rounds to the integer — no
                    // 64-bit arithmetic shift, which baseline x86-64 lacks in vector form.
                    let (f0, f1, f2, f3, f4, f5, f6, f7) = (
                        self.f0, self.f1, self.f2, self.f3, self.f4, self.f5, self.f6, self.f7
                    )
                    let scale = 1 / Double(1 << ColumnCoding.linearShift)
                    let half = scale / 2
                    if f4 == 0, f5 == 0, f6 == 0, f7 == 0 {
                        // Order 4 or less: the zero terms add nothing to an exact sum, so half the
                        // kernel gives the same residuals.
                        for j in 0..<count {
                            let acc = f0 * f[j &- 1] + f1 * f[j &- 2] + f2 * f[j &- 3] + f3 * f[j &- 4]
                            let prediction = Int64(bitPattern: (acc * scale + half + magicValue).bitPattern) &- magic
                            out[j] = d[j] &- prediction
                        }
                        return
                    }
                    for j in 0..<count {
                        var acc = f0 * f[j &- 1] + f1 * f[j &- 2] + f2 * f[j &- 3] + f3 * f[j &- 4]
                        acc += f4 * f[j &- 5] + f5 * f[j &- 6] + f6 * f[j &- 7] + f7 * f[j &- 8]
                        let prediction = Int64(bitPattern: (acc * scale + half + magicValue).bitPattern) &- magic
                        out[j] = d[j] &- prediction
                    }
                    return
                }
                let rounding: Int64 = 1 &<< Int64(ColumnCoding.linearShift &- 1)
                let shift = Int64(ColumnCoding.linearShift)
                let (c0, c1, c2, c3, c4, c5, c6, c7) = (self.c0, self.c1, self.c2, self.c3, self.c4, self.c5, self.c6, self.c7)
                for j in 0..<count {
                    var acc = rounding &+ c0 &* d[j &- 1] &+ c1 &* d[j &- 2] &+ c2 &* d[j &- 3] &+ c3 &* d[j &- 4]
                    acc &+= c4 &* d[j &- 5] &+ c5 &* d[j &- 6] &+ c6 &* d[j &- 7] &+ c7 &* d[j &- 8]
                    out[j] = d[j] &- (acc &>> shift)
                }
            }
        }
        index &+= count
    }
}

/// `.verbatim` on a receive column: the offset r[i] − t[i] itself.
struct ReceiveOffsetResiduals: ResidualSource {
    let receive: UnsafePointer<Int64>
    let times: UnsafePointer<Int64>
    var index: Int

    @inline(__always)
    mutating func fill(_ out: UnsafeMutablePointer<Int64>, count: Int) {
        let r = receive + index, t = times + index
        for j in 0..<count { out[j] = r[j] &- t[j] }
        index &+= count
    }
}

/// `.delta` on a receive column: the change of the offset, (r[i] − t[i]) − (r[i−1] − t[i−1]).
struct ReceiveOffsetDeltaResiduals: ResidualSource {
    let receive: UnsafePointer<Int64>
    let times: UnsafePointer<Int64>
    var index: Int

    @inline(__always)
    mutating func fill(_ out: UnsafeMutablePointer<Int64>, count: Int) {
        let r = receive + index, t = times + index
        for j in 0..<count { out[j] = (r[j] &- t[j]) &- (r[j &- 1] &- t[j &- 1]) }
        index &+= count
    }
}

/// `.heldReceive` on a receive column: r[i] − r[i−1] (the offset predicted by "received together
/// with the previous sample").
struct HeldReceiveResiduals: ResidualSource {
    let receive: UnsafePointer<Int64>
    var index: Int

    @inline(__always)
    mutating func fill(_ out: UnsafeMutablePointer<Int64>, count: Int) {
        let r = receive + index
        for j in 0..<count { out[j] = r[j] &- r[j &- 1] }
        index &+= count
    }
}
