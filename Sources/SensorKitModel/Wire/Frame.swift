/// The reader protocol's framing (docs/protocol.md §2): every frame is
///
///     u32 length (little-endian, counts the kind byte and the payload) · u8 kind · payload
///
/// `message` payloads are UTF-8 JSON objects; `batch` payloads are binary sample batches
/// (`SampleBatchFrame`). Limits are hard: a frame over the limit ends the connection.
public struct Frame: Hashable, Sendable {
    public enum Kind: UInt8, Sendable {
        case message = 1
        case batch = 2
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
    /// Samples per batch frame the daemon aims for.
    public static let samplesPerBatch = 4096
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
/// at once). Pure: feed bytes, take frames. Holds at most one frame plus one read of bytes.
public struct FrameDecoder: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0
    public let limit: Int

    public init(limit: Int) { self.limit = limit }

    /// Bytes received and not yet returned as frames.
    public var bufferedCount: Int { buffer.count - start }

    public mutating func feed<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole frame, nil when more bytes are needed.
    public mutating func next() throws(FrameError) -> Frame? {
        let available = buffer.count - start
        guard available >= 4 else { return nil }
        let length = Int(buffer[start]) | Int(buffer[start + 1]) << 8 | Int(buffer[start + 2]) << 16
            | Int(buffer[start + 3]) << 24
        guard length > 0 else { throw .emptyFrame }
        guard length <= limit else { throw .tooLarge(length: length, limit: limit) }
        guard available >= 4 + length else { return nil }
        guard let kind = Frame.Kind(rawValue: buffer[start + 4]) else { throw .unknownKind(buffer[start + 4]) }
        let payload = Array(buffer[(start + 5)..<(start + 4 + length)])
        start += 4 + length
        if start > 65_536 && start * 2 > buffer.count {  // compact now and then, not per frame
            buffer.removeFirst(start)
            start = 0
        }
        return Frame(kind: kind, payload: payload)
    }
}
