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
struct LinearResiduals: ResidualSource {
    let x: UnsafePointer<Int64>
    var index: Int
    private let c0, c1, c2, c3, c4, c5, c6, c7: Int64

    init(_ x: UnsafePointer<Int64>, from index: Int, coefficients: [Int64]) {
        precondition(coefficients.count <= 8 && index > coefficients.count)
        self.x = x
        self.index = index
        var c = [Int64](repeating: 0, count: 8)
        for k in coefficients.indices { c[k] = coefficients[k] }
        (c0, c1, c2, c3, c4, c5, c6, c7) = (c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7])
    }

    @inline(__always)
    mutating func fill(_ out: UnsafeMutablePointer<Int64>, count: Int) {
        let (c0, c1, c2, c3, c4, c5, c6, c7) = (self.c0, self.c1, self.c2, self.c3, self.c4, self.c5, self.c6, self.c7)
        let start = index
        let x = self.x
        // A fresh buffer the compiler knows aliases nothing (what keeps this loop tight).
        withUnsafeTemporaryAllocation(of: Int64.self, capacity: count + 8) { buffer in
            let d = buffer.baseAddress! + 8
            // d[j] is the difference at index start + j; the eight before exist as far as the
            // predictor's order reaches (its warm-up), and are zero (times a zero coefficient)
            // beyond.
            for j in -8..<0 { d[j] = start &+ j &- 1 >= 0 ? x[start &+ j] &- x[start &+ j &- 1] : 0 }
            for j in 0..<count { d[j] = x[start &+ j] &- x[start &+ j &- 1] }
            let rounding: Int64 = 1 &<< Int64(ColumnCoding.linearShift &- 1)
            for j in 0..<count {
                var acc = rounding &+ c0 &* d[j &- 1] &+ c1 &* d[j &- 2] &+ c2 &* d[j &- 3] &+ c3 &* d[j &- 4]
                acc &+= c4 &* d[j &- 5] &+ c5 &* d[j &- 6] &+ c6 &* d[j &- 7] &+ c7 &* d[j &- 8]
                out[j] = d[j] &- (acc &>> Int64(ColumnCoding.linearShift))
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
