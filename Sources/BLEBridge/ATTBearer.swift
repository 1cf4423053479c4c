import Glibc
import SensorSystem

/// The link that carries ATT PDUs, one per packet in each direction: a Unix SEQPACKET socket, to
/// the emulated peripheral, or to the radio transport's bridge of the link's L2CAP ATT channel. Everything
/// above it (GATT, profiles, clock mapping) is the same for both. The fd is non-blocking: the
/// owner waits for readability (a `DispatchSourceRead`) and then drains `receive()`.
public protocol ATTBearer: AnyObject {
    /// The fd to watch for readability.
    var fileDescriptor: Int32 { get }
    /// Sends one whole PDU.
    func send(_ pdu: [UInt8]) throws(ATTBearerError)
    /// The next PDU, or nil when none is waiting.
    func receive() throws(ATTBearerError) -> [UInt8]?
    /// Closes the link (a disconnection). Idempotent.
    func close()
}

public enum ATTBearerError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The peripheral is not there: no such socket, or nobody listening (ENOENT, ECONNREFUSED).
    case outOfRange(String)
    /// The link went down (the peer closed it, or the kernel reported a reset).
    case disconnected
    /// A packet longer than the largest ATT MTU: its bytes are not a PDU.
    case oversizedPDU(length: Int)
    /// The link's buffer is full; the PDU was not sent.
    case congested
    /// Any other failure of a call, with its errno.
    case system(SystemError)

    public var description: String {
        switch self {
        case .outOfRange(let why): "out of range (\(why))"
        case .disconnected: "disconnected"
        case .oversizedPDU(let length): "oversized PDU (\(length) bytes)"
        case .congested: "link congested"
        case .system(let error): error.description
        }
    }
}

/// The bearer over any connected `SOCK_SEQPACKET` socket, one packet per ATT PDU: an `AF_UNIX`
/// socket to `DIR/ADDR.att` on the emulated transport, or one end of the socket pair
/// `HCITransport` bridges to a link's ATT channel. Only the connecting differs (docs/ble.md).
public final class SeqPacketATTBearer: ATTBearer {
    public private(set) var fileDescriptor: Int32

    /// Takes ownership of a connected SEQPACKET fd.
    public init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    /// Connects to the peripheral's `.att` socket.
    public convenience init(connectingTo path: String) throws(ATTBearerError) {
        do {
            self.init(fileDescriptor: try SeqPacketSocket.connect(path: path))
        } catch {
            if error.errno == ENOENT || error.errno == ECONNREFUSED { throw .outOfRange(error.description) }
            throw .system(error)
        }
    }

    deinit { close() }

    public func send(_ pdu: [UInt8]) throws(ATTBearerError) {
        guard fileDescriptor >= 0 else { throw .disconnected }
        do {
            switch try SeqPacketSocket.send(fileDescriptor, pdu) {
            case .done: return
            case .wouldBlock: throw ATTBearerError.congested
            }
        } catch let error as ATTBearerError {
            throw error
        } catch let error as SystemError {
            throw Self.map(error)
        } catch {
            throw .disconnected
        }
    }

    public func receive() throws(ATTBearerError) -> [UInt8]? {
        guard fileDescriptor >= 0 else { throw .disconnected }
        let result: IOResult<SeqPacketSocket.Received>
        do {
            result = try SeqPacketSocket.receive(fileDescriptor, capacity: ATTPDU.maximumMTU)
        } catch {
            throw Self.map(error)
        }
        switch result {
        case .wouldBlock: return nil
        case .done(.closed): throw .disconnected
        case .done(.truncated(_, let length)): throw .oversizedPDU(length: length)
        case .done(.packet(let bytes)): return bytes
        }
    }

    public func close() {
        guard fileDescriptor >= 0 else { return }
        SystemCalls.close(fileDescriptor)
        fileDescriptor = -1
    }

    private static func map(_ error: SystemError) -> ATTBearerError {
        switch error.errno {
        case EPIPE, ECONNRESET, ENOTCONN, ETIMEDOUT, ECONNABORTED: .disconnected
        default: .system(error)
        }
    }
}
