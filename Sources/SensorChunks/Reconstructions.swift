// The decoder's side of the predictors: each takes a column's residuals in index order, as the
// block decoder reads them, and writes the values they stand for. The block decoder is
// specialised for each (no closure or existential per value), so a predictor's arithmetic runs
// in the same loop as the bit reading. That matters for speed: reading a Rice code is one long
// dependency chain (position → load → count zeros → position) that leaves most of the core idle,
// and the linear prediction is a multiply per order and value that needs no result of the
// reader's chain but the residual. In one loop the two overlap; in two passes they add up.
// The encoder's side is `ResidualSource` (ResidualSources.swift); round-trip tests hold the two
// together.

/// Takes the residuals of consecutive indices from the first one after the warm-up, and writes
/// each index's value to the column.
protocol Reconstruction {
    /// The residual of index `index` (counted from the first residual): writes that value.
    mutating func take(_ residual: Int64, at index: Int)
}

/// `.verbatim`: the residual is the value.
struct VerbatimValues: Reconstruction {
    let out: UnsafeMutablePointer<Int64>

    @inline(__always)
    func take(_ residual: Int64, at index: Int) { out[index] = residual }
}

/// `.delta`: x[i] = x[i−1] + r.
struct DeltaValues: Reconstruction {
    let out: UnsafeMutablePointer<Int64>
    var previous: Int64

    @inline(__always)
    mutating func take(_ residual: Int64, at index: Int) {
        previous &+= residual
        out[index] = previous
    }
}

/// `.delta2`: x[i] = r + 2x[i−1] − x[i−2].
struct SecondDeltaValues: Reconstruction {
    let out: UnsafeMutablePointer<Int64>
    var previous: Int64
    var beforePrevious: Int64

    @inline(__always)
    mutating func take(_ residual: Int64, at index: Int) {
        let value = residual &+ 2 &* previous &- beforePrevious
        (beforePrevious, previous) = (previous, value)
        out[index] = value
    }
}

/// `.grid`: x[i] = r + the grid line at i (the grid has no warm-up, so indices are the column's).
struct GridValues: Reconstruction {
    let out: UnsafeMutablePointer<Int64>
    let parameters: PredictorParameters

    @inline(__always)
    func take(_ residual: Int64, at index: Int) {
        out[index] = residual &+ ColumnCoding.gridPrediction(index, parameters)
    }
}

/// `.heldReceive`: the previous receive time held, x[i] = r + x[i−1] + t[i−1] − t[i], with `times`
/// the sensor times from the same index as `out`.
struct HeldReceiveValues: Reconstruction {
    let out: UnsafeMutablePointer<Int64>
    let times: UnsafePointer<Int64>
    var previous: Int64

    @inline(__always)
    mutating func take(_ residual: Int64, at index: Int) {
        previous = residual &+ previous &+ times[index &- 1] &- times[index]
        out[index] = previous
    }
}

/// `.linear`: x[i] = x[i−1] + d[i], d[i] = r[i] + (Σ c[k]·d[i−1−k] + ½) >> shift over the
/// previous differences d. Written over values, not differences: Σ c[k]·(x[i−1−k] − x[i−2−k]) is
/// Σ e[j]·x[i−1−j] with e[0] = c[0], e[j] = c[j] − c[j−1], e[order] = −c[order−1] — equal in
/// wrapping arithmetic, and it needs no history but the column already written. That keeps the
/// loop's state to the previous value (eight differences kept in registers beside the bit
/// reader's state spill, and the spills cost more than the multiplies).
struct LinearValues: Reconstruction {
    let out: UnsafeMutablePointer<Int64>
    /// e[0…order] as above.
    let weights: UnsafeBufferPointer<Int64>
    var previous: Int64

    /// `out` is the index after the warm-up (`weights.count` values before it).
    init(out: UnsafeMutablePointer<Int64>, weights: UnsafeBufferPointer<Int64>) {
        self.out = out
        self.weights = weights
        previous = out[-1]
    }

    /// e[0…order] for quantised coefficients c[0…order−1] (newest difference first).
    static func weights(_ coefficients: [Int64], into weights: UnsafeMutableBufferPointer<Int64>) {
        let order = coefficients.count
        precondition(weights.count == order + 1)
        for j in 0...order {
            weights[j] = (j < order ? coefficients[j] : 0) &- (j > 0 ? coefficients[j - 1] : 0)
        }
    }

    @inline(__always)
    mutating func take(_ residual: Int64, at index: Int) {
        var acc: Int64 = 1 &<< Int64(ColumnCoding.linearShift - 1)
        // Order 4 and the order earlier encoders fitted (8) unrolled (order 5 has a type of its
        // own, `LinearValuesOrder5`); the newest value's product comes last, as the rest need
        // nothing from the previous value.
        if weights.count == 9 {
            let w = weights.baseAddress!, x = out + index
            acc &+= w[1] &* x[-2] &+ w[2] &* x[-3] &+ w[3] &* x[-4] &+ w[4] &* x[-5]
            acc &+= w[5] &* x[-6] &+ w[6] &* x[-7] &+ w[7] &* x[-8] &+ w[8] &* x[-9]
        } else if weights.count == 5 {
            let w = weights.baseAddress!, x = out + index
            acc &+= w[1] &* x[-2] &+ w[2] &* x[-3] &+ w[3] &* x[-4] &+ w[4] &* x[-5]
        } else {
            for j in 1..<weights.count { acc &+= weights[j] &* out[index &- 1 &- j] }
        }
        let value = previous &+ residual &+ ((acc &+ weights[0] &* previous) &>> Int64(ColumnCoding.linearShift))
        out[index] = value
        previous = value
    }
}

/// `.linear` of order 5 — the highest the encoder fits, and what motion columns get — with the
/// same arithmetic as `LinearValues` but the weights held by value. The decoder's loop then
/// neither tests the order per value nor reloads the weights through a pointer (which every
/// store to the column might alias), and its state spills less (`sensorkit-bench decode`;
/// docs/measurements/fetch.md).
struct LinearValuesOrder5: Reconstruction {
    let out: UnsafeMutablePointer<Int64>
    let w0: Int64, w1: Int64, w2: Int64, w3: Int64, w4: Int64, w5: Int64
    var previous: Int64

    /// `out` is the index after the warm-up (six values before it); `weights` is e[0…5].
    init(out: UnsafeMutablePointer<Int64>, weights: UnsafeBufferPointer<Int64>) {
        precondition(weights.count == 6)
        self.out = out
        (w0, w1, w2, w3, w4, w5) = (weights[0], weights[1], weights[2], weights[3], weights[4], weights[5])
        previous = out[-1]
    }

    @inline(__always)
    mutating func take(_ residual: Int64, at index: Int) {
        let x = out + index
        let older =
            (1 &<< Int64(ColumnCoding.linearShift - 1))
            &+ w1 &* x[-2] &+ w2 &* x[-3] &+ w3 &* x[-4] &+ w4 &* x[-5] &+ w5 &* x[-6]
        let value = previous &+ residual &+ ((older &+ w0 &* previous) &>> Int64(ColumnCoding.linearShift))
        x[0] = value
        previous = value
    }
}
