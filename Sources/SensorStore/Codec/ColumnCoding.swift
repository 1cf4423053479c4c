import Foundation

// One column of a chunk: a predictor turns the values into small residuals, `ResidualCoding`
// stores them. The encoder tries the predictors that suit the column's role and keeps the one
// whose residuals have the smallest total magnitude (FLAC's rule of thumb). Pure functions.
//
// Section layout (a bit stream, byte-aligned at its end):
//   8 bits predictor, predictor parameters, warm-up values (varbits, zigzag), residual blocks.

/// How a column's values are predicted from what came before.
enum Predictor: UInt8 {
    /// The value itself (no prediction).
    case verbatim = 0
    /// The previous value: residuals are first differences.
    case delta = 1
    /// Linear extrapolation of the two previous values: second differences (delta-of-delta).
    case delta2 = 2
    /// Linear prediction (LPC) of the first difference from the `order` previous differences,
    /// with quantised coefficients; for smooth sampled signals under noise.
    case linear = 3
    /// A straight line t₀ + i·P fitted to the chunk (P in 1/65536 ns): residuals are the jitter
    /// around the nominal sampling grid. For sensor timestamps.
    case grid = 4
    /// The receive offset (receive − sensor time) assuming the same receive time as the previous
    /// sample: zero inside a batch read, so batched reads cost almost nothing.
    case heldReceive = 5
}

/// What a column holds, which decides the predictors worth trying.
enum ColumnRole {
    case sensorTime
    /// Receive time minus sensor time; needs the sensor times as side information.
    case receiveOffset
    case integer
    /// Float64 bit patterns; only predictors that are exact on bit patterns make sense.
    case float
}

enum ColumnCoding {
    static let maxLinearOrder = 8
    static let linearShift = 14
    static let gridFractionBits: Int64 = 16

    /// Encodes one column into its section bytes. `times` is required for `.receiveOffset`.
    static func encode(
        _ values: UnsafeBufferPointer<Int64>, role: ColumnRole,
        times: UnsafeBufferPointer<Int64>?, fast: Bool
    ) -> [UInt8] {
        let count = values.count
        var best: (predictor: Predictor, parameters: PredictorParameters, cost: Double)?
        func consider(_ predictor: Predictor, _ parameters: PredictorParameters, _ cost: Double) {
            if best == nil || cost < best!.cost { best = (predictor, parameters, cost) }
        }
        // One buffer of residuals, holding those of `buffered` (the last predictor computed in full).
        var buffer = [Int64](unsafeUninitializedCapacity: count) { memory, initialized in
            memory.initialize(repeating: 0)
            initialized = count
        }
        var buffered: Predictor?
        func computeInFull(_ predictor: Predictor, _ parameters: PredictorParameters) -> Double {
            buffered = predictor
            return buffer.withUnsafeMutableBufferPointer { out in
                residuals(values, predictor: predictor, parameters: parameters, times: times, into: out)
            }
        }

        let simple = simpleCosts(values, times: role == .receiveOffset ? times : nil)
        switch role {
        case .sensorTime:
            consider(.delta2, PredictorParameters(), simple.delta2)
            consider(.delta, PredictorParameters(), simple.delta)
            if let grid = PredictorParameters.fit(.grid, values: values, times: nil) {
                consider(.grid, grid, computeInFull(.grid, grid))
            }
        case .receiveOffset:
            consider(.verbatim, PredictorParameters(), simple.verbatim)
            consider(.heldReceive, PredictorParameters(), simple.held)
            consider(.delta, PredictorParameters(), simple.delta)
        case .integer:
            consider(.delta, PredictorParameters(), simple.delta)
            consider(.delta2, PredictorParameters(), simple.delta2)
            consider(.verbatim, PredictorParameters(), simple.verbatim)
            if !fast, let linear = PredictorParameters.fit(.linear, values: values, times: nil) {
                consider(.linear, linear, computeInFull(.linear, linear))
            }
        case .float:
            consider(.delta, PredictorParameters(), simple.delta)
            consider(.verbatim, PredictorParameters(), simple.verbatim)
        }
        let chosen = best!  // the parameter-free predictors always apply
        if buffered != chosen.predictor { _ = computeInFull(chosen.predictor, chosen.parameters) }

        var writer = BitWriter(reservingBits: count * 8)
        writer.write(UInt64(chosen.predictor.rawValue), bits: 8)
        chosen.parameters.writeHeader(chosen.predictor, into: &writer)
        let warm = min(chosen.parameters.warmUp(chosen.predictor), count)
        for index in 0..<warm {
            writer.writeVarBits(zigzag(values[index]))
        }
        buffer.withUnsafeBufferPointer { residuals in
            ResidualCoding.encode(UnsafeBufferPointer(rebasing: residuals[warm..<count]), into: &writer, fast: fast)
        }
        return writer.bytes()
    }

    /// Total residual magnitudes of the parameter-free predictors, in one pass without storing
    /// residuals (the warm-up values are counted approximately; this only ranks predictors).
    private static func simpleCosts(_ x: UnsafeBufferPointer<Int64>, times: UnsafeBufferPointer<Int64>?)
        -> (verbatim: Double, delta: Double, delta2: Double, held: Double)
    {
        let count = x.count
        var verbatim: Double = 0, delta: Double = 0, delta2: Double = 0, held: Double = 0
        for i in 0..<min(count, 2) { verbatim += abs(Double(x[i])) }
        if count >= 2 { delta += abs(Double(x[1] &- x[0])) }
        if count > 2 {
            for i in 2..<count {
                let d = x[i] &- x[i - 1]
                verbatim += abs(Double(x[i]))
                delta += abs(Double(d))
                delta2 += abs(Double(d &- (x[i - 1] &- x[i - 2])))
            }
        }
        if let t = times, count >= 2 {
            for i in 1..<count { held += abs(Double(x[i] &- (x[i - 1] &+ t[i - 1] &- t[i]))) }
        }
        return (verbatim, delta, delta2, held)
    }

    /// Computes residuals for indices ≥ warm-up (earlier entries are left untouched) and returns
    /// their total magnitude.
    private static func residuals(
        _ x: UnsafeBufferPointer<Int64>, predictor: Predictor, parameters: PredictorParameters,
        times: UnsafeBufferPointer<Int64>?, into r: UnsafeMutableBufferPointer<Int64>
    ) -> Double {
        let count = x.count
        let warm = min(parameters.warmUp(predictor), count)
        var magnitude: Double = 0
        @inline(__always) func put(_ index: Int, _ value: Int64) {
            r[index] = value
            magnitude += abs(Double(value))
        }
        switch predictor {
        case .verbatim:
            for i in warm..<count { put(i, x[i]) }
        case .delta:
            for i in warm..<count { put(i, x[i] &- x[i - 1]) }
        case .delta2:
            for i in warm..<count { put(i, x[i] &- 2 &* x[i - 1] &+ x[i - 2]) }
        case .linear:
            let order = parameters.coefficients.count
            let shift = Int64(linearShift)
            let rounding: Int64 = 1 << (shift - 1)
            parameters.coefficients.withUnsafeBufferPointer { c in
                for i in warm..<count {
                    var acc: Int64 = rounding
                    for k in 0..<order {
                        acc &+= c[k] &* (x[i - 1 - k] &- x[i - 2 - k])
                    }
                    put(i, (x[i] &- x[i - 1]) &- (acc &>> shift))
                }
            }
        case .grid:
            for i in warm..<count { put(i, x[i] &- gridPrediction(i, parameters)) }
        case .heldReceive:
            let t = times!
            for i in warm..<count { put(i, x[i] &- (x[i - 1] &+ t[i - 1] &- t[i])) }
        }
        return magnitude
    }

    @inline(__always)
    static func gridPrediction(_ index: Int, _ parameters: PredictorParameters) -> Int64 {
        parameters.origin &+ ((Int64(index) &* parameters.period &+ (1 << (gridFractionBits - 1))) &>> gridFractionBits)
    }

    /// Decodes a section of `count` values into `output`.
    static func decode(
        section: UnsafeRawBufferPointer, count: Int, times: UnsafePointer<Int64>?,
        into x: UnsafeMutablePointer<Int64>
    ) throws(ChunkCodecError) {
        guard let base = section.baseAddress else {
            if count == 0 { return }
            throw .malformed("empty column section")
        }
        var reader = BitReader(base: base, limit: section.count * 8)
        guard let predictor = Predictor(rawValue: UInt8(reader.read(bits: 8))) else {
            throw .malformed("unknown predictor")
        }
        let parameters = try PredictorParameters.read(predictor, from: &reader)
        let warm = min(parameters.warmUp(predictor), count)
        if reader.overran { throw .malformed("column header runs past its section") }
        for index in 0..<warm {
            x[index] = unzigzag(reader.readVarBits())
            if reader.overran { throw .malformed("column header runs past its section") }
        }
        try ResidualCoding.decode(count: count - warm, from: &reader, into: x + warm)

        switch predictor {
        case .verbatim:
            break
        case .delta:
            if warm < count {
                var previous = x[warm - 1]
                for i in warm..<count {
                    previous &+= x[i]
                    x[i] = previous
                }
            }
        case .delta2:
            for i in warm..<count { x[i] = x[i] &+ 2 &* x[i - 1] &- x[i - 2] }
        case .linear:
            reconstructLinear(x, count: count, warm: warm, coefficients: parameters.coefficients)
        case .grid:
            for i in 0..<count { x[i] = x[i] &+ gridPrediction(i, parameters) }
        case .heldReceive:
            guard let t = times else { throw .malformed("receive column without times") }
            for i in warm..<count { x[i] = x[i] &+ x[i - 1] &+ t[i - 1] &- t[i] }
        }
    }

    /// Undoes `.linear`: x[i] = x[i−1] + d[i], d[i] = r[i] + (Σ c[k]·d[i−1−k] + ½) >> shift.
    private static func reconstructLinear(
        _ x: UnsafeMutablePointer<Int64>, count: Int, warm: Int, coefficients: [Int64]
    ) {
        guard warm < count else { return }
        let order = coefficients.count
        let shift = Int64(linearShift)
        let rounding: Int64 = 1 << (shift - 1)
        // The last `order` differences, newest first, kept in registers for the common order 8.
        coefficients.withUnsafeBufferPointer { c in
            if order == 8 {
                let (c0, c1, c2, c3, c4, c5, c6, c7) = (c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7])
                var d0 = x[warm - 1] &- x[warm - 2], d1 = x[warm - 2] &- x[warm - 3]
                var d2 = x[warm - 3] &- x[warm - 4], d3 = x[warm - 4] &- x[warm - 5]
                var d4 = x[warm - 5] &- x[warm - 6], d5 = x[warm - 6] &- x[warm - 7]
                var d6 = x[warm - 7] &- x[warm - 8], d7 = x[warm - 8] &- x[warm - 9]
                var previous = x[warm - 1]
                for i in warm..<count {
                    var acc = rounding &+ c0 &* d0 &+ c1 &* d1 &+ c2 &* d2 &+ c3 &* d3
                    acc &+= c4 &* d4 &+ c5 &* d5 &+ c6 &* d6 &+ c7 &* d7
                    let d = x[i] &+ (acc &>> shift)
                    (d7, d6, d5, d4, d3, d2, d1) = (d6, d5, d4, d3, d2, d1, d0)
                    d0 = d
                    previous &+= d
                    x[i] = previous
                }
                return
            }
            for i in warm..<count {
                var acc = rounding
                for k in 0..<order { acc &+= c[k] &* (x[i - 1 - k] &- x[i - 2 - k]) }
                x[i] = x[i - 1] &+ (x[i] &+ (acc &>> shift))
            }
        }
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
        case .verbatim, .grid: 0
        case .delta, .heldReceive: 1
        case .delta2: 2
        case .linear: coefficients.count + 1
        }
    }

    /// Fits the parameters of `predictor` to the values; nil when the predictor does not apply.
    static func fit(
        _ predictor: Predictor, values: UnsafeBufferPointer<Int64>, times: UnsafeBufferPointer<Int64>?
    ) -> PredictorParameters? {
        switch predictor {
        case .verbatim, .delta, .delta2:
            return PredictorParameters()
        case .heldReceive:
            return times == nil ? nil : PredictorParameters()
        case .grid:
            return fitGrid(values)
        case .linear:
            return fitLinear(values)
        }
    }

    /// Least-squares line through (i, t[i]).
    private static func fitGrid(_ t: UnsafeBufferPointer<Int64>) -> PredictorParameters? {
        let count = t.count
        guard count >= 2 else { return nil }
        let first = t[0]
        let n = Double(count)
        let meanIndex = (n - 1) / 2
        var sumY: Double = 0, sumXY: Double = 0
        for i in 0..<count {
            let y = Double(t[i] &- first)
            sumY += y
            sumXY += (Double(i) - meanIndex) * y
        }
        let sumXX = n * (n * n - 1) / 12
        let slope = sumXY / sumXX
        let intercept = sumY / n - slope * meanIndex
        let scaledPeriod = (slope * 65536).rounded()
        guard scaledPeriod.isFinite, abs(scaledPeriod) < 9e18, intercept.isFinite, abs(intercept) < 9e18 else {
            return nil
        }
        return PredictorParameters(origin: first &+ Int64(intercept.rounded()), period: Int64(scaledPeriod))
    }

    /// Linear prediction of first differences: autocorrelation, Levinson–Durbin, order chosen by
    /// estimated bits, coefficients quantised to `linearShift` fractional bits.
    private static func fitLinear(_ x: UnsafeBufferPointer<Int64>) -> PredictorParameters? {
        let count = x.count
        let maxOrder = ColumnCoding.maxLinearOrder
        guard count >= 16 * (maxOrder + 2) else { return nil }
        // The autocorrelation of the first 16 Ki differences is estimate enough (and cheap).
        let used = min(count - 1, 16_384)
        var d = [Double](repeating: 0, count: used)
        for i in 1...used { d[i - 1] = Double(x[i] &- x[i - 1]) }
        var r = [Double](repeating: 0, count: maxOrder + 1)
        d.withUnsafeBufferPointer { d in
            for lag in 0...maxOrder {
                var sum: Double = 0
                for i in lag..<d.count { sum += d[i] * d[i - lag] }
                r[lag] = sum
            }
        }
        guard r[0].isFinite, r[0] > 0 else { return nil }
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
