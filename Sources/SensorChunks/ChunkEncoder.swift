/// Encodes chunks (`ChunkCodec`'s format) keeping its working memory — the bit buffer and the
/// body — from one chunk to the next, so sealing chunk after chunk does not fault in fresh pages
/// for them every time. The output is exactly `ChunkCodec.encode`'s. One per writer queue.
package struct ChunkEncoder {
    private var writer = BitWriter()
    private var body: [UInt8] = []

    package init() {}

    /// Encodes the samples in `range` (no copy of the columns is made).
    package mutating func encode(_ samples: ChunkSamples, range: Range<Int>, roles: [ColumnRole], effort: ChunkCodec.Effort)
        -> [UInt8]
    {
        precondition(roles.count == samples.columns.count, "one role per value column")
        precondition(samples.receiveTimes.count == samples.count && samples.columns.allSatisfy { $0.count == samples.count })
        precondition(range.lowerBound >= 0 && range.upperBound <= samples.count)
        let count = range.count
        let fast = effort == .fast

        // Worked on as locals (moved out and back), so the helpers below need not capture self.
        var body: [UInt8] = []
        var writer = BitWriter()
        swap(&body, &self.body)
        swap(&writer, &self.writer)
        defer {
            swap(&body, &self.body)
            swap(&writer, &self.writer)
        }
        body.removeAll(keepingCapacity: true)
        body.reserveCapacity(count * 5 + 64)
        writer.removeAll()
        func appendSection() {
            ByteVarint.append(UInt64((writer.bitCount + 7) / 8), to: &body)
            writer.append(to: &body)
            writer.removeAll()
        }
        var nonDecreasing = true
        samples.times.withUnsafeBufferPointer { allTimes in
            let times = UnsafeBufferPointer(rebasing: allTimes[range])
            var index = 1
            while index < times.count, times[index - 1] <= times[index] { index += 1 }
            nonDecreasing = index >= times.count
            ColumnCoding.encode(times, role: .sensorTime, fast: fast, into: &writer)
            appendSection()
            samples.receiveTimes.withUnsafeBufferPointer { receive in
                ColumnCoding.encodeReceive(UnsafeBufferPointer(rebasing: receive[range]), times: times, into: &writer)
            }
            appendSection()
        }
        for (column, role) in zip(samples.columns, roles) {
            column.withUnsafeBufferPointer { values in
                ColumnCoding.encode(UnsafeBufferPointer(rebasing: values[range]), role: role, fast: fast, into: &writer)
            }
            appendSection()
        }

        var flags: UInt8 = nonDecreasing ? ChunkCodec.nonDecreasingFlag : 0
        var compressed: [UInt8]?
        if !fast, body.count >= 64, ChunkCodec.worthCompressing(body),
            let packed = body.withUnsafeBytes({ Zstd.compress($0, level: ChunkCodec.zstdLevel) }),
            packed.count + 4 < body.count - body.count / 32
        {
            compressed = packed
            flags |= ChunkCodec.compressedFlag
        }

        var out: [UInt8] = [ChunkCodec.formatVersion, flags]
        out.reserveCapacity((compressed?.count ?? body.count) + 24)
        ByteVarint.append(UInt64(count), to: &out)
        ByteVarint.append(UInt64(samples.columns.count), to: &out)
        if let compressed {
            ByteVarint.append(UInt64(body.count), to: &out)
            out += compressed
        } else {
            out += body
        }
        let crc = CRC32C.checksum(out)
        withUnsafeBytes(of: crc.littleEndian) { out += $0 }
        return out
    }
}
