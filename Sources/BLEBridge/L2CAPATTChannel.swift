import Glibc
import SensorSystem

/// The security a link must reach before ATT runs over it (`BT_SECURITY`): low is none (the
/// wearables served here need no pairing); medium asks the kernel for an encrypted link.
public enum L2CAPSecurityLevel: UInt8, Sendable, CustomStringConvertible {
    case low = 1, medium = 2, high = 3

    public var description: String {
        switch self {
        case .low: "low"
        case .medium: "medium"
        case .high: "high"
        }
    }
}

/// One end of an LE L2CAP fixed channel, as `sockaddr_l2` holds it.
struct L2CAPEndpoint: Equatable, CustomStringConvertible {
    /// `l2_bdaddr_type` (BDADDR_LE_PUBLIC, BDADDR_LE_RANDOM).
    enum AddressType: UInt8 {
        case lePublic = 1, leRandom = 2

        init(_ type: BLEScanReport.AddressType) {
            self = type == .public ? .lePublic : .leRandom
        }
    }

    /// The LE fixed channel that carries ATT (Core Vol 3 Part A §2.1).
    static let attChannel: UInt16 = 0x0004

    /// Six bytes, least significant first.
    var address: [UInt8]
    var addressType: AddressType
    var channel: UInt16 = attChannel

    var description: String {
        "\(BluetoothAddress.text(wireOrder: address[...]))/\(addressType == .lePublic ? "public" : "random") cid \(channel)"
    }
}

/// Opens the ATT bearer over the radio: an L2CAP LE `SOCK_SEQPACKET` socket bound to the adapter
/// on the ATT channel, at the asked security level, connected without blocking for longer than
/// the timeout. The kernel creates the LE link itself. Each packet is one ATT PDU, as on the
/// emulated transport, so the same `SeqPacketATTBearer` carries both.
enum L2CAPATTChannel {
    static func connect(
        adapterAddress: String, to report: BLEScanReport, security: L2CAPSecurityLevel,
        timeoutMilliseconds: Int32
    ) throws(ATTBearerError) -> SeqPacketATTBearer {
        guard let local = BluetoothAddress.wireOrder(adapterAddress), let peer = BluetoothAddress.wireOrder(report.address) else {
            throw .outOfRange("not a device address: \(report.address)")
        }
        let fd: Int32
        do { fd = try HCILibrary.l2capSocket() } catch { throw bearerError(error, security: security) }
        do throws(SystemError) {
            try HCILibrary.bind(fd, L2CAPEndpoint(address: local, addressType: .lePublic))
            try HCILibrary.setSecurity(fd, security)
            let remote = L2CAPEndpoint(address: peer, addressType: L2CAPEndpoint.AddressType(report.addressType))
            if case .wouldBlock = try HCILibrary.connect(fd, remote) {
                let ready = try SystemCalls.poll(fd, events: Int16(POLLOUT), timeoutMilliseconds: timeoutMilliseconds)
                guard ready != 0 else {
                    throw SystemError("connect(L2CAP \(remote)): no link within \(timeoutMilliseconds) ms", errno: ETIMEDOUT)
                }
                let pending = try HCILibrary.pendingError(fd)
                if pending != 0 { throw SystemError("connect(L2CAP \(remote))", errno: pending) }
            }
        } catch {
            SystemCalls.close(fd)
            throw bearerError(error, security: security)
        }
        return SeqPacketATTBearer(fileDescriptor: fd)
    }

    /// What a failed socket, bind or connect means for the driver: a wearable that is not there is
    /// out of range (retry later); a link another ATT client holds, or a security level the link
    /// did not reach, is said in words.
    static func bearerError(_ error: SystemError, security: L2CAPSecurityLevel) -> ATTBearerError {
        switch error.errno {
        case ETIMEDOUT, EHOSTDOWN, EHOSTUNREACH, ECONNREFUSED, ECONNRESET, ECONNABORTED:
            return .outOfRange(error.description)
        case EBUSY:
            return .system(
                SystemError(
                    error.call + " (another ATT client, usually bluetoothd for a paired wearable, holds this link:"
                        + " unpair it with `bluetoothctl remove ADDRESS` or stop bluetoothd)", errno: EBUSY))
        case EACCES, EPERM:
            return .system(
                SystemError(
                    error.call + " (the link did not reach security level \(security): the wearable wants pairing,"
                        + " which this transport does not do)", errno: error.errno))
        default:
            return .system(error)
        }
    }
}
