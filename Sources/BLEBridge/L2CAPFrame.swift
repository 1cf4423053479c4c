/// L2CAP basic frames over LE ACL (Core Vol 3 Part A §3.1): a 4-byte header (payload length,
/// channel id) and the payload, carried in one or more ACL packets. Only the fixed LE channels are
/// used here: ATT (4), LE signaling (5), SMP (6).
public enum L2CAPChannel {
    public static let att: UInt16 = 0x0004
    public static let leSignaling: UInt16 = 0x0005
    public static let securityManager: UInt16 = 0x0006
}

/// One L2CAP frame's channel and payload.
public struct L2CAPFrame: Equatable, Sendable {
    public var channel: UInt16
    public var payload: [UInt8]

    public init(channel: UInt16, payload: [UInt8]) {
        self.channel = channel
        self.payload = payload
    }

    /// The frame cut into ACL packets of at most `bufferSize` data bytes (the controller's LE ACL
    /// buffer length): the first marked as a first non-flushable fragment, the rest continuations.
    public func fragments(handle: UInt16, bufferSize: Int) -> [HCIACLPacket] {
        let size = max(1, bufferSize)
        var bytes: [UInt8] = []
        LittleEndianInteger.append(UInt16(clamping: payload.count), to: &bytes)
        LittleEndianInteger.append(channel, to: &bytes)
        bytes += payload
        return stride(from: 0, to: bytes.count, by: size).map { start in
            HCIACLPacket(
                handle: handle, boundary: start == 0 ? .firstNonFlushable : .continuation,
                data: Array(bytes[start..<min(start + size, bytes.count)]))
        }
    }
}

/// Joins one connection's ACL fragments into L2CAP frames. Bounded: a frame that declares more
/// than `maximumPayload` bytes (517, the largest ATT MTU, for every channel used here) is dropped
/// with its continuations and counted, so a hostile peer cannot make the host buffer more than
/// one frame per link.
public struct L2CAPReassembler: Sendable {
    public static let maximumPayload = ATTPDU.maximumMTU

    public enum Outcome: Equatable, Sendable {
        case frame(L2CAPFrame)
        /// More fragments are needed.
        case pending
        /// The fragment (and the frame it belongs to) was dropped, with why.
        case dropped(String)
    }

    public let maximumPayload: Int
    public private(set) var droppedFrames = 0
    private var partial: [UInt8] = []
    /// The whole frame's length (header included) while a frame is being joined.
    private var expected: Int?
    /// Continuations of a dropped frame are skipped until the next first fragment.
    private var skipping = false

    public init(maximumPayload: Int = maximumPayload) { self.maximumPayload = maximumPayload }

    public mutating func add(_ packet: HCIACLPacket) -> Outcome {
        switch packet.boundary {
        case .firstFlushable, .firstNonFlushable, .complete:
            let lost = expected != nil
            partial = []
            expected = nil
            skipping = false
            if lost { droppedFrames += 1 }
            guard packet.data.count >= 2 else {
                partial = packet.data
                expected = -1  // length not known yet
                return lost ? .dropped("a new frame began before the last one was complete") : .pending
            }
            return start(packet.data)
        case .continuation:
            if skipping { return .dropped("continuation of a dropped frame") }
            guard let expected else { return drop("a continuation without a first fragment") }
            partial += packet.data
            if expected < 0 {
                guard partial.count >= 2 else { return .pending }
                let head = partial
                partial = []
                self.expected = nil
                return start(head)
            }
            return finishIfComplete()
        }
    }

    private mutating func start(_ head: [UInt8]) -> Outcome {
        let length = Int(UInt16(head[0]) | UInt16(head[1]) << 8)
        guard length <= maximumPayload else {
            skipping = true
            return drop("an L2CAP frame of \(length) bytes, over the \(maximumPayload)-byte bound")
        }
        partial = head
        expected = length + 4
        return finishIfComplete()
    }

    private mutating func finishIfComplete() -> Outcome {
        guard let expected, expected >= 0 else { return .pending }
        if partial.count < expected { return .pending }
        defer {
            partial = []
            self.expected = nil
        }
        guard partial.count == expected else {
            return drop("fragments carried \(partial.count) bytes for a frame of \(expected)")
        }
        let channel = UInt16(partial[2]) | UInt16(partial[3]) << 8
        return .frame(L2CAPFrame(channel: channel, payload: Array(partial[4...])))
    }

    private mutating func drop(_ why: String) -> Outcome {
        droppedFrames += 1
        partial = []
        expected = nil
        return .dropped(why)
    }
}
