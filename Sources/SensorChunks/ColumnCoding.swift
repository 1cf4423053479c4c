// One column of a chunk: a predictor turns the values into small residuals, `ResidualCoding`
// stores them. The encoder measures the predictors that suit the column's role on a sample of it
// (`ColumnSample`) and keeps the one whose residuals look cheapest; then it codes the column in
// one pass, block by block, without a column-sized residual buffer. Pure functions.
//
// Section layout (a bit stream, byte-aligned at its end):
//   8 bits predictor, predictor parameters, warm-up values (varbits, zigzag), residual blocks.
// `.receiveRuns` instead stores the run count and two nested columns (see `ReceiveRuns`).

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
    /// sample: zero inside a batch read.
    case heldReceive = 5
    /// Receive times as runs of equal values (one run per batch read): run lengths and, per run,
    /// the receive time minus the sensor time of the run's last sample (the read's latency).
    /// Format 2 and later.
    case receiveRuns = 6
}

/// What a column holds, which decides the predictors worth trying.
package enum ColumnRole {
    case sensorTime
    case integer
    /// Float64 bit patterns; only predictors that are exact on bit patterns make sense.
    case float
}

enum ColumnCoding {
    /// The highest linear order a chunk may carry (format 1 and 2 encoders fitted up to 8).
    static let maxLinearOrder = 8
    /// The highest order the encoder fits. Decoding costs one multiply per order and value, and
    /// the multiplier bounds the decode loop; each order less costs a little size. 5 is the
    /// lowest that keeps the store within its size target (a sixth of plain SQLite) with a
    /// margin: the figures per order are in docs/measurements/fetch.md.
    static let maxFittedOrder = 5
    static let linearShift = 14
    static let gridFractionBits: Int64 = 16

    /// Encodes sensor times or a value column into `writer` (the caller byte-aligns sections).
    static func encode(
        _ values: UnsafeBufferPointer<Int64>, role: ColumnRole, fast: Bool, into writer: inout BitWriter
    ) {
        let count = values.count
        guard count > 0, let x = values.baseAddress else {
            writer.write(UInt64(Predictor.verbatim.rawValue), bits: 8)
            return
        }
        let sample = ColumnSample(count: count)
        var best = (predictor: Predictor.verbatim, parameters: PredictorParameters(), bits: Int.max)
        func consider(_ predictor: Predictor, _ bits: Int, _ parameters: PredictorParameters = PredictorParameters()) {
            if bits < best.bits { best = (predictor, parameters, bits) }
        }
        switch role {
        case .sensorTime:
            consider(.delta2, sample.estimatedBits { SecondDeltaResiduals(x, from: $0) })
            consider(.delta, sample.estimatedBits { DeltaResiduals(x, from: $0) })
            if let grid = PredictorParameters.fitGrid(values, sample: sample) {
                consider(.grid, sample.estimatedBits { GridResiduals(x: x, index: $0, parameters: grid) }, grid)
            }
        case .integer:
            consider(.delta, sample.estimatedBits { DeltaResiduals(x, from: $0) })
            consider(.delta2, sample.estimatedBits { SecondDeltaResiduals(x, from: $0) })
            consider(.verbatim, sample.estimatedBits { VerbatimResiduals(x: x, index: $0) })
            if !fast, let linear = PredictorParameters.fitLinear(values, sample: sample) {
                let coefficients = linear.coefficients
                consider(.linear, sample.estimatedBits { LinearResiduals(x, from: $0, coefficients: coefficients) }, linear)
            }
        case .float:
            consider(.delta, sample.estimatedBits { DeltaResiduals(x, from: $0) })
            consider(.verbatim, sample.estimatedBits { VerbatimResiduals(x: x, index: $0) })
        }
        write(x, count: count, predictor: best.predictor, parameters: best.parameters, into: &writer)
    }

    /// Writes the section of `x` under a chosen predictor.
    static func write(
        _ x: UnsafePointer<Int64>, count: Int, predictor: Predictor, parameters: PredictorParameters,
        into writer: inout BitWriter
    ) {
        writer.write(UInt64(predictor.rawValue), bits: 8)
        parameters.writeHeader(predictor, into: &writer)
        let warm = min(parameters.warmUp(predictor), count)
        for index in 0..<warm { writer.writeVarBits(zigzag(x[index])) }
        let rest = count - warm
        guard rest > 0 else { return }
        switch predictor {
        case .verbatim:
            var source = VerbatimResiduals(x: x, index: warm)
            ResidualCoding.encode(&source, count: rest, into: &writer)
        case .delta:
            var source = DeltaResiduals(x, from: warm)
            ResidualCoding.encode(&source, count: rest, into: &writer)
        case .delta2:
            var source = SecondDeltaResiduals(x, from: warm)
            ResidualCoding.encode(&source, count: rest, into: &writer)
        case .linear:
            var source = LinearResiduals(x, from: warm, coefficients: parameters.coefficients)
            ResidualCoding.encode(&source, count: rest, into: &writer)
        case .grid:
            var source = GridResiduals(x: x, index: warm, parameters: parameters)
            ResidualCoding.encode(&source, count: rest, into: &writer)
        case .heldReceive, .receiveRuns:
            preconditionFailure("receive predictors are written by encodeReceive")
        }
    }

    /// Encodes receive times, as offsets from the sensor times `times`, into `writer`.
    static func encodeReceive(
        _ receive: UnsafeBufferPointer<Int64>, times: UnsafeBufferPointer<Int64>, into writer: inout BitWriter
    ) {
        precondition(receive.count == times.count)
        let count = receive.count
        guard count > 0, let r = receive.baseAddress, let t = times.baseAddress else {
            writer.write(UInt64(Predictor.verbatim.rawValue), bits: 8)
            return
        }
        // The common case of receive = sensor time (or any constant offset): verbatim, every block
        // constant, found with one cheap pass. It ors the differences from the first offset and
        // does not stop early: that loop vectorises, and the common case looks at every value.
        let offset = r[0] &- t[0]
        var differences: Int64 = 0
        for i in 1..<count { differences |= (r[i] &- t[i]) ^ offset }
        if differences == 0 {
            writer.write(UInt64(Predictor.verbatim.rawValue), bits: 8)
            ResidualCoding.encodeConstant(offset, count: count, into: &writer)
            return
        }
        // Batch reads: few distinct receive times, each shared by a run of samples.
        if let runs = ReceiveRuns(receive: receive, times: times) {
            runs.write(into: &writer)
            return
        }
        let sample = ColumnSample(count: count)
        let verbatim = sample.estimatedBits { ReceiveOffsetResiduals(receive: r, times: t, index: $0) }
        var best = (predictor: Predictor.verbatim, bits: verbatim)
        let held = sample.estimatedBits { HeldReceiveResiduals(receive: r, index: $0) }
        if held < best.bits { best = (.heldReceive, held) }
        let delta = sample.estimatedBits { ReceiveOffsetDeltaResiduals(receive: r, times: t, index: $0) }
        if delta < best.bits { best = (.delta, delta) }

        writer.write(UInt64(best.predictor.rawValue), bits: 8)
        let warm = min(PredictorParameters().warmUp(best.predictor), count)
        if warm > 0 { writer.writeVarBits(zigzag(r[0] &- t[0])) }
        let rest = count - warm
        guard rest > 0 else { return }
        switch best.predictor {
        case .heldReceive:
            var source = HeldReceiveResiduals(receive: r, index: warm)
            ResidualCoding.encode(&source, count: rest, into: &writer)
        case .delta:
            var source = ReceiveOffsetDeltaResiduals(receive: r, times: t, index: warm)
            ResidualCoding.encode(&source, count: rest, into: &writer)
        default:
            var source = ReceiveOffsetResiduals(receive: r, times: t, index: warm)
            ResidualCoding.encode(&source, count: rest, into: &writer)
        }
    }

    @inline(__always)
    static func gridPrediction(_ index: Int, _ parameters: PredictorParameters) -> Int64 {
        parameters.origin &+ ((Int64(index) &* parameters.period &+ (1 << (gridFractionBits - 1))) &>> gridFractionBits)
    }

    /// Decodes a section of `count` values into `x`; `times` (the decoded sensor times) is
    /// required for the receive column.
    static func decode(
        section: UnsafeRawBufferPointer, count: Int, times: UnsafePointer<Int64>?,
        into x: UnsafeMutablePointer<Int64>
    ) throws(ChunkCodecError) {
        guard let base = section.baseAddress else {
            if count == 0 { return }
            throw .malformed("empty column section")
        }
        var reader = BitReader(base: base, limit: section.count * 8)
        try read(count: count, from: &reader, times: times, nested: false, into: x)
    }

    /// Reads one column from `reader`. Nested columns (inside `.receiveRuns`) may not nest again.
    static func read(
        count: Int, from reader: inout BitReader, times: UnsafePointer<Int64>?, nested: Bool,
        into x: UnsafeMutablePointer<Int64>
    ) throws(ChunkCodecError) {
        guard let predictor = Predictor(rawValue: UInt8(reader.read(bits: 8))) else {
            throw .malformed("unknown predictor")
        }
        if predictor == .receiveRuns {
            guard !nested, let times else { throw .malformed("receive runs outside a receive column") }
            try ReceiveRuns.read(count: count, from: &reader, times: times, into: x)
            return
        }
        let parameters = try PredictorParameters.read(predictor, from: &reader)
        let warm = min(parameters.warmUp(predictor), count)
        if reader.overran { throw .malformed("column header runs past its section") }
        for index in 0..<warm {
            x[index] = unzigzag(reader.readVarBits())
            if reader.overran { throw .malformed("column header runs past its section") }
        }
        let rest = count - warm
        guard rest > 0 else { return }
        // Each predictor's reconstruction runs inside the residual decoder's loop (see
        // Reconstructions.swift).
        let out = x + warm
        switch predictor {
        case .verbatim, .receiveRuns:
            var values = VerbatimValues(out: out)
            try ResidualCoding.decode(count: rest, from: &reader, into: &values)
        case .delta:
            var values = DeltaValues(out: out, previous: x[warm - 1])
            try ResidualCoding.decode(count: rest, from: &reader, into: &values)
        case .delta2:
            var values = SecondDeltaValues(out: out, previous: x[warm - 1], beforePrevious: x[warm - 2])
            try ResidualCoding.decode(count: rest, from: &reader, into: &values)
        case .linear:
            let order = parameters.coefficients.count
            try withUnsafeTemporaryAllocation(of: Int64.self, capacity: order + 1) { (weights) throws(ChunkCodecError) in
                LinearValues.weights(parameters.coefficients, into: weights)
                if order == 5 {
                    var values = LinearValuesOrder5(out: out, weights: UnsafeBufferPointer(weights))
                    try ResidualCoding.decode(count: rest, from: &reader, into: &values)
                } else {
                    var values = LinearValues(out: out, weights: UnsafeBufferPointer(weights))
                    try ResidualCoding.decode(count: rest, from: &reader, into: &values)
                }
            }
        case .grid:
            var values = GridValues(out: out, parameters: parameters)
            try ResidualCoding.decode(count: rest, from: &reader, into: &values)
        case .heldReceive:
            guard let t = times, !nested else { throw .malformed("receive column without times") }
            var values = HeldReceiveValues(out: out, times: t + warm, previous: x[warm - 1])
            try ResidualCoding.decode(count: rest, from: &reader, into: &values)
        }
    }
}
