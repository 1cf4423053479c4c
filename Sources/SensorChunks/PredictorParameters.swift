import Foundation

// What a predictor carries in its column's section header, how the encoder fits it, and where it
// looks to do so. Fitting and choosing look at a sample of the column (`ColumnSample`), not at
// every value: a chunk of a stationary sensor signal says the same thing in 4 Ki values as in
// 64 Ki, and the encoder then touches each value once more, to code it.

/// Where the encoder looks to choose and fit a predictor: up to `windowCount` runs of
/// `windowLength` consecutive indices, spread evenly over the column and all at or past
/// `firstIndex` (the longest warm-up), so every predictor is measured on the same values.
struct ColumnSample {
    static let windowCount = 8
    static let windowLength = 256
    /// Past the warm-up of every predictor (linear order 8 needs 9 values).
    static let firstIndex = ColumnCoding.maxLinearOrder + 1

    let windows: [Range<Int>]
    /// Values in all windows.
    let size: Int

    init(count: Int) {
        let first = min(Self.firstIndex, count)
        let span = count - first
        if span <= Self.windowCount * Self.windowLength {
            windows = span > 0 ? [first..<count] : []
        } else {
            let step = (span - Self.windowLength) / (Self.windowCount - 1)
            windows = (0..<Self.windowCount).map { k in
                let start = first + k * step
                return start..<start + Self.windowLength
            }
        }
        size = windows.reduce(0) { $0 + $1.count }
    }

    /// Estimated bits for the residuals a predictor gives on the sample: per block-sized piece,
    /// the cost of a Rice code with the parameter its mean magnitude suggests (what the block
    /// codes spend, give or take a bit per value). Only ranks predictors.
    @inline(__always)
    func estimatedBits<S: ResidualSource>(_ make: (Int) -> S) -> Int {
        let block = UnsafeMutablePointer<Int64>.allocate(capacity: ResidualCoding.blockLength)
        defer { block.deallocate() }
        var bits = 0
        for window in windows {
            var source = make(window.lowerBound)
            var remaining = window.count
            while remaining > 0 {
                let length = min(remaining, ResidualCoding.blockLength)
                source.fill(block, count: length)
                var sum: UInt64 = 0
                for j in 0..<length { sum &+= min(zigzag(block[j]), 1 << 40) }
                let mean = sum / UInt64(length)
                let k = mean == 0 ? 0 : 63 - mean.leadingZeroBitCount
                bits &+= length &* (k &+ 1) &+ Int(sum &>> UInt64(k))
                remaining -= length
            }
        }
        return bits
    }
}

/// The parameters a predictor carries in the section header.
struct PredictorParameters {
    /// `.grid`: the fitted value at index 0.
    var origin: Int64 = 0
    /// `.grid`: the fitted period in 1/65536 ns.
    var period: Int64 = 0
    /// `.linear`: quantised coefficients (scaled by 2^linearShift), newest difference first.
    var coefficients: [Int64] = []

    /// Values stored verbatim before the first residual.
    func warmUp(_ predictor: Predictor) -> Int {
        switch predictor {
        case .verbatim, .grid, .receiveRuns: 0
        case .delta, .heldReceive: 1
        case .delta2: 2
        case .linear: coefficients.count + 1
        }
    }

    /// Least-squares line through (i, t[i]) over the sample; nil when it does not fit in 64 bits.
    static func fitGrid(_ t: UnsafeBufferPointer<Int64>, sample: ColumnSample) -> PredictorParameters? {
        guard t.count >= 2, sample.size >= 2 else { return nil }
        let first = t[0]
        // Centred sums: mean index and mean value first, then the slope.
        var sumIndex: Double = 0, sumY: Double = 0
        for window in sample.windows {
            for i in window {
                sumIndex += Double(i)
                sumY += Double(t[i] &- first)
            }
        }
        let n = Double(sample.size)
        let meanIndex = sumIndex / n, meanY = sumY / n
        var sumXY: Double = 0, sumXX: Double = 0
        for window in sample.windows {
            for i in window {
                let dx = Double(i) - meanIndex
                sumXY += dx * (Double(t[i] &- first) - meanY)
                sumXX += dx * dx
            }
        }
        guard sumXX > 0 else { return nil }
        let slope = sumXY / sumXX
        let intercept = meanY - slope * meanIndex
        let scaledPeriod = (slope * 65536).rounded()
        guard scaledPeriod.isFinite, abs(scaledPeriod) < 9e18, intercept.isFinite, abs(intercept) < 9e18 else {
            return nil
        }
        return PredictorParameters(origin: first &+ Int64(intercept.rounded()), period: Int64(scaledPeriod))
    }

    /// Linear prediction of first differences: autocorrelation over the sample's windows,
    /// Levinson–Durbin, order chosen by estimated bits over the whole column, coefficients
    /// quantised to `linearShift` fractional bits. Nil when prediction does not pay.
    static func fitLinear(_ x: UnsafeBufferPointer<Int64>, sample: ColumnSample) -> PredictorParameters? {
        let count = x.count
        let maxOrder = ColumnCoding.maxFittedOrder
        guard count >= 16 * (maxOrder + 2), sample.size > 4 * maxOrder else { return nil }
        var r = [Double](repeating: 0, count: maxOrder + 1)
        var d = [Double](repeating: 0, count: sample.windows.map(\.count).max() ?? 0)
        var used = 0
        d.withUnsafeMutableBufferPointer { d in
            for window in sample.windows {
                // Differences of the window (its first index is past the warm-up, so i − 1 ≥ 0).
                let length = window.count
                for i in window { d[i - window.lowerBound] = Double(x[i] &- x[i - 1]) }
                used += length
                for lag in 0...maxOrder where lag < length {
                    var sum: Double = 0
                    for i in lag..<length { sum += d[i] * d[i - lag] }
                    r[lag] += sum
                }
            }
        }
        guard used > 0, r[0].isFinite, r[0] > 0 else { return nil }
        r[0] *= 1 + 1e-9
        var a = [Double](repeating: 0, count: maxOrder + 1)
        var error = r[0]
        var bestOrder = 0
        var bestCost = Double(count) / 2 * log2(error / Double(used))
        var bestA = a
        for m in 1...maxOrder {
            var acc = r[m]
            for j in 1..<m { acc -= a[j] * r[m - j] }
            let k = acc / error
            guard k.isFinite, abs(k) < 1 else { break }
            var next = a
            next[m] = k
            for j in 1..<m { next[j] = a[j] - k * a[m - j] }
            a = next
            error *= 1 - k * k
            guard error > 0 else { break }
            let cost = Double(count) / 2 * log2(error / Double(used)) + Double(m) * 24
            if cost < bestCost {
                bestCost = cost
                bestOrder = m
                bestA = a
            }
        }
        guard bestOrder > 0 else { return nil }
        let scale = Double(1 << ColumnCoding.linearShift)
        var coefficients: [Int64] = []
        for j in 1...bestOrder {
            let c = (bestA[j] * scale).rounded()
            guard c.isFinite, abs(c) < Double(1 << 24) else { return nil }
            coefficients.append(Int64(c))
        }
        return PredictorParameters(coefficients: coefficients)
    }

    func writeHeader(_ predictor: Predictor, into writer: inout BitWriter) {
        switch predictor {
        case .grid:
            writer.writeVarBits(zigzag(origin))
            writer.writeVarBits(zigzag(period))
        case .linear:
            writer.write(UInt64(coefficients.count), bits: 5)
            for c in coefficients { writer.writeVarBits(zigzag(c)) }
        default:
            break
        }
    }

    static func read(_ predictor: Predictor, from reader: inout BitReader) throws(ChunkCodecError) -> PredictorParameters {
        switch predictor {
        case .grid:
            let origin = unzigzag(reader.readVarBits())
            let period = unzigzag(reader.readVarBits())
            return PredictorParameters(origin: origin, period: period)
        case .linear:
            let order = Int(reader.read(bits: 5))
            guard order >= 1, order <= ColumnCoding.maxLinearOrder else { throw .malformed("linear order \(order)") }
            var coefficients: [Int64] = []
            for _ in 0..<order {
                coefficients.append(unzigzag(reader.readVarBits()))
                if reader.overran { throw .malformed("coefficients run past their section") }
            }
            return PredictorParameters(coefficients: coefficients)
        default:
            return PredictorParameters()
        }
    }
}
