/// The reader protocol's framing (docs/protocol.md §2): every frame is
///
///     u32 length (little-endian, counts the kind byte and the payload) · u8 kind · payload
///
/// `message` payloads are UTF-8 JSON objects; `batch` payloads are binary sample batches
/// (`SampleBatchFrame`); `chunk` payloads are stored chunks (`ChunkBatchFrame`). Limits are hard: a frame over the limit ends the connection.
public struct Frame: Hashable, Sendable {
    public enum Kind: UInt8, Sendable {
        case message = 1
        case batch = 2
        /// A stored chunk with its column mapping (`ChunkBatchFrame`), only to a client that asked.
        case chunk = 3
    }

    public var kind: Kind
    public var payload: [UInt8]

    public init(kind: Kind, payload: [UInt8]) {
        self.kind = kind
        self.payload = payload
    }

    /// The frame's bytes on the wire.
    public func encoded() -> [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(5 + payload.count)
        Frame.appendHeader(kind: kind, payloadCount: payload.count, to: &bytes)
        bytes.append(contentsOf: payload)
        return bytes
    }

    /// Appends a frame header for a payload of `payloadCount` bytes that the caller appends next.
    public static func appendHeader(kind: Kind, payloadCount: Int, to bytes: inout [UInt8]) {
        let length = UInt32(payloadCount + 1)
        withUnsafeBytes(of: length.littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(kind.rawValue)
    }

    public static let headerSize = 5
}

/// The protocol's fixed numbers (docs/protocol.md §6).
public enum WireLimits {
    /// The protocol version this build speaks; `hello` negotiates it.
    public static let version = 1
    /// Largest frame a client may send (requests are small JSON objects).
    public static let maxClientFrame = 64 * 1024
    /// Largest frame the daemon sends (a sample batch).
    public static let maxServerFrame = 4 * 1024 * 1024
    /// Samples per batch frame the daemon aims for (the widest layout's batch is then ≈ 459 KB):
    /// large enough that per-batch costs (a frame, an `ack`, a wakeup) vanish next to the
    /// samples, small enough that a batch's columns stay in cache and below malloc's mmap
    /// threshold on the client.
    public static let samplesPerBatch = 8_192
    /// The bytes a batch frame's fixed part may take: `samplesPerBatch` samples of eight columns
    /// (≈ 655 KB). Wider layouts (device usage's rows) get fewer samples a batch
    /// (`samplesPerBatch(columns:)`), so a fetch's frames in flight stay as large as before.
    public static let batchBytes = 16 + samplesPerBatch * (16 + 8 * 8)

    /// Samples per batch frame for a layout of `columns` columns.
    public static func samplesPerBatch(columns: Int) -> Int {
        min(samplesPerBatch, max(1, (batchBytes - 16) / (16 + 8 * max(0, columns))))
    }
    /// Largest stored chunk sent as a `chunk` frame (docs/protocol.md §5.3): such a frame is then
    /// no larger than the widest batch, so the daemon's per-connection bound holds for both.
    public static let maxChunkBytes = 448 * 1024
    /// Batch frames a fetch may have in flight before the client acknowledges (default credit).
    public static let defaultFetchWindow = 8
    /// Requests a connection may have open at once (fetches and waiting authorization requests).
    public static let maxOpenRequests = 64
    /// Fetches a connection may run at once.
    public static let maxConcurrentFetches = 16
    /// The largest fetch window (credit) a client may ask for or accumulate.
    public static let maxFetchWindow = 16
}

/// Why bytes could not be framed. Each ends the connection after an error message.
public enum FrameError: Error, Hashable, Sendable, CustomStringConvertible {
    case tooLarge(length: Int, limit: Int)
    case emptyFrame
    case unknownKind(UInt8)

    public var description: String {
        switch self {
        case .tooLarge(let length, let limit): return "frame of \(length) bytes exceeds the limit of \(limit)"
        case .emptyFrame: return "frame length 0 (a frame holds at least its kind byte)"
        case .unknownKind(let kind): return "unknown frame kind \(kind)"
        }
    }
}

/// Cuts a byte stream into frames, whatever the read sizes (one byte at a time, or many frames
/// at once). Pure: feed bytes (or let a reader fill the buffer in place), take frames. Holds at
/// most one frame plus one read of bytes.
///
/// Two ways to take a frame: `next()` returns it as an owned `Frame` (a copy of the payload), and
/// `nextFrame(_:)` lends the payload in place so a batch decodes straight from the read buffer
/// into its final arrays — the fetch path's only copy on the client side.
public struct FrameDecoder: Sendable {
    /// Bytes `start..<end` are received and not yet taken; the rest is room for the next read.
    private var storage: [UInt8] = []
    private var start = 0
    private var end = 0
    public let limit: Int

    /// Reads aim for at least this much room, so small frames arrive many to a read.
    public static let minimumRead = 65_536

    public init(limit: Int) { self.limit = limit }

    /// Bytes received and not yet returned as frames.
    public var bufferedCount: Int { end - start }

    public mutating func feed<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        let count = bytes.count
        makeRoom(count)
        storage.withUnsafeMutableBufferPointer { buffer in
            _ = UnsafeMutableBufferPointer(rebasing: buffer[end..<(end + count)]).initialize(from: bytes)
        }
        end += count
    }

    /// Lets `read` write received bytes straight into the buffer (no intermediate copy): it gets
    /// the free room — at least `minimumRead` bytes, or the rest of the frame being received if
    /// that is larger, so a big frame arrives contiguously and the buffer empties exactly when it
    /// is taken — and returns how many bytes it wrote, or ≤ 0 for end of stream or an error,
    /// which is returned unchanged.
    public mutating func fill(_ read: (UnsafeMutableRawBufferPointer) -> Int) -> Int {
        var wanted = Self.minimumRead
        if let length = announcedLength, length <= limit {
            wanted = max(wanted, 4 + length - bufferedCount)
        }
        makeRoom(wanted)
        let end = self.end
        let n = storage.withUnsafeMutableBytes { raw in
            read(UnsafeMutableRawBufferPointer(rebasing: raw[end..<(end + wanted)]))
        }
        if n > 0 {
            precondition(n <= wanted, "the reader claims more bytes than the room it was given")
            self.end += n
        }
        return n
    }

    /// The next whole frame, nil when more bytes are needed.
    public mutating func next() throws(FrameError) -> Frame? {
        try nextFrame { kind, payload in Frame(kind: kind, payload: Array(payload)) }
    }

    /// Calls `body` with the next whole frame's kind and payload, borrowed from the buffer (valid
    /// only during the call); nil when more bytes are needed.
    public mutating func nextFrame<Result>(
        _ body: (Frame.Kind, UnsafeRawBufferPointer) throws(FrameError) -> Result
    ) throws(FrameError) -> Result? {
        guard let length = announcedLength else { return nil }
        guard length > 0 else { throw .emptyFrame }
        guard length <= limit else { throw .tooLarge(length: length, limit: limit) }
        guard bufferedCount >= 4 + length else { return nil }
        guard let kind = Frame.Kind(rawValue: storage[start + 4]) else { throw .unknownKind(storage[start + 4]) }
        let first = start + 5, last = start + 4 + length
        start += 4 + length
        defer {
            if start == end {  // all taken: the next read starts at the front again, no copying
                start = 0
                end = 0
            }
        }
        let result = storage.withUnsafeBytes { raw in
            Swift.Result { () throws(FrameError) in try body(kind, UnsafeRawBufferPointer(rebasing: raw[first..<last])) }
        }
        return try result.get()
    }

    /// The length field of the frame at the front, once its 4 bytes are in.
    private var announcedLength: Int? {
        guard bufferedCount >= 4 else { return nil }
        return Int(storage[start]) | Int(storage[start + 1]) << 8 | Int(storage[start + 2]) << 16
            | Int(storage[start + 3]) << 24
    }

    /// Ensures `count` free bytes after `end`: moves the unread bytes to the front (at most one
    /// frame plus one read) or grows the buffer.
    private mutating func makeRoom(_ count: Int) {
        if storage.count - end >= count { return }
        if start > 0 {
            let unread = end - start
            let from = start
            storage.withUnsafeMutableBytes { raw in
                raw.baseAddress!.copyMemory(from: raw.baseAddress! + from, byteCount: unread)
            }
            start = 0
            end = unread
        }
        if storage.count - end < count {
            // An array of zeros, not `repeatElement`: appended element by element, 64 KiB of
            // those cost an unoptimized build 5 ms of CPU per connection, and a churn of
            // connections became a test of the compiler's optimizer.
            storage.append(contentsOf: [UInt8](repeating: 0, count: end + count - storage.count))
        }
    }
}
