/// Cuts a byte stream into whole scans. A real IIO fd returns whole scans per `read`, but
/// umockdev's PTY (and any pipe or socket standing in for it) returns arbitrary byte counts, so
/// the capture loop reassembles across reads and works on both (docs/iio.md §12.8).
///
/// Scans lying entirely inside one chunk are handed out in place (no copy); only a scan split
/// across chunks is copied, once. Pure; one assembler per open device, confined by its owner.
public struct ScanAssembler: Sendable {
    public let scanBytes: Int
    private var pending: [UInt8] = []

    public init(scanBytes: Int) {
        precondition(scanBytes > 0, "a scan has at least one byte")
        self.scanBytes = scanBytes
        pending.reserveCapacity(scanBytes)
    }

    /// Bytes of a scan begun but not finished.
    public var pendingByteCount: Int { pending.count }

    /// Feeds one chunk as read; calls `body` with each completed scan (exactly `scanBytes` bytes,
    /// valid only during the call), in stream order.
    public mutating func feed(_ chunk: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
        var rest = chunk[...]
        if !pending.isEmpty {
            let take = min(scanBytes - pending.count, rest.count)
            pending.append(contentsOf: rest.prefix(take))
            rest = rest.dropFirst(take)
            guard pending.count == scanBytes else { return }
            pending.withUnsafeBytes(body)
            pending.removeAll(keepingCapacity: true)
        }
        while rest.count >= scanBytes {
            body(UnsafeRawBufferPointer(rebasing: rest.prefix(scanBytes)))
            rest = rest.dropFirst(scanBytes)
        }
        pending.append(contentsOf: rest)
    }

    /// Convenience: feeds a chunk and returns copies of the completed scans.
    public mutating func feed(_ chunk: [UInt8]) -> [[UInt8]] {
        var scans: [[UInt8]] = []
        chunk.withUnsafeBytes { bytes in
            feed(bytes) { scans.append(Array($0)) }
        }
        return scans
    }

    /// Drops a partial scan, e.g. when the device is closed and reopened: the next read starts at
    /// a scan boundary again. Returns how many bytes were dropped (the caller records the gap).
    @discardableResult
    public mutating func reset() -> Int {
        defer { pending.removeAll(keepingCapacity: true) }
        return pending.count
    }
}
