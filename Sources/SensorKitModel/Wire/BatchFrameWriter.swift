/// Builds a whole `batch` frame (docs/protocol.md §2, §5.1) in one allocation, its sections
/// written in place: the daemon maps stored counts straight into the bytes it sends, with no
/// intermediate arrays. The layout is the one `SampleBatchFrame.appendFrame` writes; this is
/// the fast path for producers that have the values in some other shape.
public enum BatchFrameWriter {
    /// The frame's size in bytes (frame header included).
    public static func frameSize(columns: Int, count: Int, raggedCount: Int = 0) -> Int {
        Frame.headerSize + SampleBatchFrame.fixedHeaderSize + count * 16 + columns * count * 8 + 4 + raggedCount * 8
    }

    /// The most samples of a layout that fit one frame under `WireLimits.maxServerFrame`.
    public static func maxSamples(columns: Int) -> Int {
        (WireLimits.maxServerFrame + 4 - frameSize(columns: columns, count: 0)) / (16 + 8 * columns)
    }

    /// Writes the frame into `storage` (bytes `0..<size`, growing it if needed) and returns its
    /// size. Reusing one `storage` from frame to frame keeps its pages mapped and warm: a fresh
    /// megabyte per frame costs page faults to write and TLB misses to send.
    ///
    /// `fill` must write every value of every section it is given (each `WireColumn` has exactly
    /// the values the frame carries): the bytes are not cleared first, since that would cost a
    /// pass over every byte of every fetch.
    @discardableResult
    public static func write(
        into storage: inout [UInt8], requestID: UInt32, layout: BatchLayout, count: Int, raggedCount: Int = 0,
        fill: (BatchFrameSections) throws -> Void
    ) rethrows -> Int {
        precondition(count >= 0 && raggedCount >= 0 && count <= UInt32.max && raggedCount <= UInt32.max)
        let columns = layout.columns.count
        let size = frameSize(columns: columns, count: count, raggedCount: raggedCount)
        precondition(size - 4 <= WireLimits.maxServerFrame, "a batch of \(count) samples exceeds the frame limit")
        if storage.count < size { storage = [UInt8](repeating: 0, count: size) }
        try storage.withUnsafeMutableBytes { buffer in
            let raw = buffer.baseAddress!
            raw.storeBytes(of: UInt32(size - 4).littleEndian, as: UInt32.self)
            raw.storeBytes(of: Frame.Kind.batch.rawValue, toByteOffset: 4, as: UInt8.self)
            let payload = raw + Frame.headerSize
            payload.storeBytes(of: requestID.littleEndian, as: UInt32.self)
            payload.storeBytes(of: layout.rawValue, toByteOffset: 4, as: UInt8.self)
            payload.storeBytes(of: 0, toByteOffset: 5, as: UInt8.self)
            payload.storeBytes(of: UInt16(columns).littleEndian, toByteOffset: 6, as: UInt16.self)
            payload.storeBytes(of: UInt32(count).littleEndian, toByteOffset: 8, as: UInt32.self)
            let raggedAt = SampleBatchFrame.fixedHeaderSize + count * 16 + columns * count * 8
            payload.storeBytes(of: UInt32(raggedCount).littleEndian, toByteOffset: raggedAt, as: UInt32.self)
            try fill(BatchFrameSections(payload: payload, count: count, columnCount: columns, raggedCount: raggedCount))
        }
        return size
    }

    /// The frame as a new array of exactly its size.
    public static func frame(
        requestID: UInt32, layout: BatchLayout, count: Int, raggedCount: Int = 0,
        fill: (BatchFrameSections) throws -> Void
    ) rethrows -> [UInt8] {
        var storage: [UInt8] = []
        try write(into: &storage, requestID: requestID, layout: layout, count: count, raggedCount: raggedCount, fill: fill)
        return storage
    }
}

/// The writable sections of a batch frame being built (valid only inside
/// `BatchFrameWriter.frame`'s `fill`).
public struct BatchFrameSections {
    @usableFromInline let payload: UnsafeMutableRawPointer
    /// Samples in the batch (`n`).
    public let count: Int
    /// The layout's column count (`k`).
    public let columnCount: Int
    /// Ragged values (`m`).
    public let raggedCount: Int

    init(payload: UnsafeMutableRawPointer, count: Int, columnCount: Int, raggedCount: Int) {
        self.payload = payload
        self.count = count
        self.columnCount = columnCount
        self.raggedCount = raggedCount
    }

    /// `i64[n]` sensor times (SR ns).
    @inlinable public var sensorTimes: WireColumn<Int64> {
        WireColumn(payload + SampleBatchFrame.fixedHeaderSize, count: count)
    }

    /// `i64[n]` write times (SR ns).
    @inlinable public var writeTimes: WireColumn<Int64> {
        WireColumn(payload + SampleBatchFrame.fixedHeaderSize + 8 * count, count: count)
    }

    /// `f64[n]` column `index` of the layout.
    @inlinable public func column(_ index: Int) -> WireColumn<Double> {
        precondition(index >= 0 && index < columnCount, "column \(index) of \(columnCount)")
        return WireColumn(payload + SampleBatchFrame.fixedHeaderSize + 16 * count + 8 * count * index, count: count)
    }

    /// `f64[m]` ragged values.
    @inlinable public var ragged: WireColumn<Double> {
        WireColumn(payload + SampleBatchFrame.fixedHeaderSize + (16 + 8 * columnCount) * count + 4, count: raggedCount)
    }
}

/// One section of a batch frame being built: `count` little-endian values at an address with no
/// particular alignment (the frame packs its sections back to back), so values are stored
/// byte-wise (`storeBytes`), which compiles to plain unaligned stores.
public struct WireColumn<Scalar: BitwiseCopyable> {
    @usableFromInline let base: UnsafeMutableRawPointer
    public let count: Int

    @inlinable init(_ base: UnsafeMutableRawPointer, count: Int) {
        self.base = base
        self.count = count
    }

    /// The section's first byte (values are unaligned little-endian scalars).
    @inlinable public var baseAddress: UnsafeMutableRawPointer { base }

    /// Stores value `index` (the host is little-endian, as the wire: see SampleBatchFrame.swift).
    @inlinable public subscript(index: Int) -> Scalar {
        get {
            precondition(index >= 0 && index < count, "index \(index) of \(count)")
            return base.loadUnaligned(fromByteOffset: index * MemoryLayout<Scalar>.stride, as: Scalar.self)
        }
        nonmutating set {
            precondition(index >= 0 && index < count, "index \(index) of \(count)")
            base.storeBytes(of: newValue, toByteOffset: index * MemoryLayout<Scalar>.stride, as: Scalar.self)
        }
    }

    /// Copies all `count` values at once.
    @inlinable public func copy(from values: UnsafeBufferPointer<Scalar>) {
        precondition(values.count == count, "\(values.count) values for a section of \(count)")
        guard count > 0 else { return }
        base.copyMemory(from: values.baseAddress!, byteCount: count * MemoryLayout<Scalar>.stride)
    }

    /// Copies all `count` values at once from an array or a slice of one.
    @inlinable public func copy<Values: Collection>(from values: Values) where Values.Element == Scalar {
        let copied: Void? = values.withContiguousStorageIfAvailable { copy(from: $0) }
        if copied == nil {
            precondition(values.count == count, "\(values.count) values for a section of \(count)")
            for (index, value) in values.enumerated() { self[index] = value }
        }
    }

    /// Sets every value to `value`.
    @inlinable public func fill(_ value: Scalar) {
        for index in 0..<count { self[index] = value }
    }
}
