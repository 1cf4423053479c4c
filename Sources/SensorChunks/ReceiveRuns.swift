// Receive times of batched reads (`Predictor.receiveRuns`, chunk format 2). An IIO buffer read,
// a BLE notification or a polled batch hands the pipeline many samples at one receive time, so
// the column is a few runs of equal receive times. Stored per run: its length, and the receive
// time minus the sensor time of the run's last sample, i.e. how long after the newest sample of
// the read the read returned (exactly 0 when the pipeline derives sensor times from the receive
// time). Both are nested columns with their own predictor and residual blocks, so regular batch
// sizes cost next to nothing and latencies cost about their entropy.
//
// Section layout after the predictor byte:
//   varbits m (runs, 1…n) | nested column: m run lengths − 1 | nested column: m latencies
// Nested columns use the ordinary layout and may not be `.receiveRuns` or `.heldReceive`.

struct ReceiveRuns {
    /// Run length − 1, per run.
    private(set) var extraLengths: [Int64] = []
    /// Receive time − sensor time of the run's last sample, per run.
    private(set) var latencies: [Int64] = []

    /// The runs of `receive`, or nil when runs would not pay: more than one run per
    /// `minimumMeanRun` samples (then every sample is nearly its own read and the offset
    /// predictors do as well).
    static let minimumMeanRun = 2

    init?(receive: UnsafeBufferPointer<Int64>, times: UnsafeBufferPointer<Int64>) {
        let count = receive.count
        guard count >= 2, times.count == count else { return nil }
        // Count first, so an unbatched column costs one cheap pass and no allocation.
        var runs = 1
        for i in 1..<count where receive[i] != receive[i - 1] { runs &+= 1 }
        guard runs * Self.minimumMeanRun <= count else { return nil }
        extraLengths.reserveCapacity(runs)
        latencies.reserveCapacity(runs)
        var start = 0
        for i in 1...count where i == count || receive[i] != receive[i - 1] {
            extraLengths.append(Int64(i - 1 - start))
            latencies.append(receive[i - 1] &- times[i - 1])
            start = i
        }
    }

    func write(into writer: inout BitWriter) {
        writer.write(UInt64(Predictor.receiveRuns.rawValue), bits: 8)
        writer.writeVarBits(UInt64(extraLengths.count))
        extraLengths.withUnsafeBufferPointer { ColumnCoding.encode($0, role: .integer, fast: true, into: &writer) }
        latencies.withUnsafeBufferPointer { ColumnCoding.encode($0, role: .integer, fast: true, into: &writer) }
    }

    /// Reads the runs (after the predictor byte) and writes the receive offsets
    /// (receive − sensor time) of all `count` samples into `x`.
    static func read(
        count: Int, from reader: inout BitReader, times: UnsafePointer<Int64>, into x: UnsafeMutablePointer<Int64>
    ) throws(ChunkCodecError) {
        let runCount = reader.readVarBits()
        guard !reader.overran, runCount >= 1, runCount <= UInt64(count) else { throw .malformed("receive run count") }
        let m = Int(runCount)
        let extraLengths = UnsafeMutablePointer<Int64>.allocate(capacity: m)
        defer { extraLengths.deallocate() }
        let latencies = UnsafeMutablePointer<Int64>.allocate(capacity: m)
        defer { latencies.deallocate() }
        try ColumnCoding.read(count: m, from: &reader, times: nil, nested: true, into: extraLengths)
        try ColumnCoding.read(count: m, from: &reader, times: nil, nested: true, into: latencies)
        var start = 0
        for run in 0..<m {
            let extra = UInt64(bitPattern: extraLengths[run])
            guard extra < UInt64(count - start) else { throw .malformed("receive runs exceed the chunk") }
            let last = start + Int(extra)
            let received = latencies[run] &+ times[last]
            for i in start...last { x[i] = received &- times[i] }
            start = last + 1
        }
        guard start == count else { throw .malformed("receive runs do not cover the chunk") }
    }
}
