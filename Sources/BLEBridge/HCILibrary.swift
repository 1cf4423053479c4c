import CBluetooth
import Glibc
import SensorSystem

/// libbluetooth (BlueZ's HCI and L2CAP headers and `hci_lib`): the one file that imports it. Every
/// call goes through the syscall funnel, so a failure names the call and its errno, which
/// `HCITransport` and `L2CAPATTChannel` turn into what to do about it (docs/ble.md).
enum HCILibrary {
    struct AdapterInfo: Equatable {
        /// Upper-case `AA:BB:CC:DD:EE:FF`.
        var address: String
        var isUp: Bool
    }

    // MARK: HCI

    /// `hci_open_dev`: a raw HCI socket (close-on-exec) bound to adapter `id`. EAFNOSUPPORT: the
    /// kernel has no Bluetooth; ENODEV: no such adapter.
    static func openAdapter(_ id: Int32) throws(SystemError) -> Int32 {
        try syscall("hci_open_dev(hci\(id))") { hci_open_dev(id) }
    }

    static func closeAdapter(_ fd: Int32) {
        _ = hci_close_dev(fd)
    }

    /// `hci_devinfo`: the adapter's address and whether it is up.
    static func adapterInfo(_ id: Int32) throws(SystemError) -> AdapterInfo {
        var info = hci_dev_info()
        _ = try syscall("hci_devinfo(hci\(id))") { hci_devinfo(id, &info) }
        let address = withUnsafeBytes(of: info.bdaddr.b) { BluetoothAddress.text(wireOrder: Array($0)[...]) }
        return AdapterInfo(address: address, isUp: info.flags & (1 << UInt32(HCI_UP)) != 0)
    }

    /// HCI LE Set Scan Parameters (OGF 0x08, OCF 0x000B), own address public, accept every advertiser.
    /// A controller that refuses (Command Disallowed while a scan runs) comes back as EIO.
    static func setScanParameters(_ fd: Int32, _ parameters: HCIScanParameters, timeoutMilliseconds: Int32) throws(SystemError) {
        _ = try syscall("hci_le_set_scan_parameters") {
            hci_le_set_scan_parameters(
                fd, parameters.active ? 0x01 : 0x00, parameters.intervalUnits.littleEndian,
                parameters.windowUnits.littleEndian, 0x00, 0x00, timeoutMilliseconds)
        }
    }

    /// HCI LE Set Scan Enable (OGF 0x08, OCF 0x000C).
    static func setScanEnable(_ fd: Int32, _ enable: Bool, filterDuplicates: Bool, timeoutMilliseconds: Int32) throws(SystemError)
    {
        _ = try syscall("hci_le_set_scan_enable(\(enable ? "on" : "off"))") {
            hci_le_set_scan_enable(fd, enable ? 0x01 : 0x00, filterDuplicates ? 0x01 : 0x00, timeoutMilliseconds)
        }
    }

    /// Runs `body` with the socket passing only LE Meta events, then puts the old filter back
    /// (libbluetooth's own command calls swap filters the same way).
    static func withLEMetaEventFilter<T>(_ fd: Int32, _ body: () throws(SystemError) -> T) throws(SystemError) -> T {
        var saved = hci_filter()
        var length = socklen_t(MemoryLayout<hci_filter>.size)
        _ = try syscall("getsockopt(HCI_FILTER)") { getsockopt(fd, Int32(SOL_HCI), HCI_FILTER, &saved, &length) }
        var filter = hci_filter()
        hci_filter_clear(&filter)
        hci_filter_set_ptype(HCI_EVENT_PKT, &filter)
        hci_filter_set_event(EVT_LE_META_EVENT, &filter)
        _ = try syscall("setsockopt(HCI_FILTER)") {
            setsockopt(fd, Int32(SOL_HCI), HCI_FILTER, &filter, socklen_t(MemoryLayout<hci_filter>.size))
        }
        defer { _ = try? syscall("setsockopt(HCI_FILTER)") { setsockopt(fd, Int32(SOL_HCI), HCI_FILTER, &saved, length) } }
        return try body()
    }

    /// The largest HCI event packet a read returns (indicator, header, 255 parameter bytes).
    static let maximumEventSize = Int(HCI_MAX_EVENT_SIZE)

    // MARK: L2CAP

    /// `socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP)`, non-blocking and close-on-exec.
    static func l2capSocket() throws(SystemError) -> Int32 {
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        return try syscall("socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP)") { socket(AF_BLUETOOTH, type, BTPROTO_L2CAP) }
    }

    /// The `sockaddr_l2` of an LE fixed channel: no PSM, the channel id, the address and its LE type.
    static func l2capAddress(_ endpoint: L2CAPEndpoint) -> sockaddr_l2 {
        var address = sockaddr_l2()
        address.l2_family = sa_family_t(AF_BLUETOOTH)
        address.l2_psm = 0
        let b = endpoint.address
        address.l2_bdaddr = bdaddr_t(b: (b[0], b[1], b[2], b[3], b[4], b[5]))
        address.l2_cid = endpoint.channel.littleEndian
        address.l2_bdaddr_type = endpoint.addressType.rawValue
        return address
    }

    /// The bytes `bind`/`connect` hand the kernel for `endpoint` (what the tests check).
    static func l2capAddressBytes(_ endpoint: L2CAPEndpoint) -> [UInt8] {
        withUnsafeBytes(of: l2capAddress(endpoint)) { Array($0) }
    }

    static func bind(_ fd: Int32, _ endpoint: L2CAPEndpoint) throws(SystemError) {
        var address = l2capAddress(endpoint)
        _ = try syscall("bind(L2CAP \(endpoint))") {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_l2>.size))
                }
            }
        }
    }

    /// `setsockopt(SOL_BLUETOOTH, BT_SECURITY)`: the level the link must reach before ATT runs.
    static func setSecurity(_ fd: Int32, _ level: L2CAPSecurityLevel) throws(SystemError) {
        var security = bt_security(level: level.rawValue, key_size: 0)
        _ = try syscall("setsockopt(BT_SECURITY \(level))") {
            setsockopt(fd, SOL_BLUETOOTH, BT_SECURITY, &security, socklen_t(MemoryLayout<bt_security>.size))
        }
    }

    /// A non-blocking `connect`: `.wouldBlock` when it is under way (EINPROGRESS).
    static func connect(_ fd: Int32, _ endpoint: L2CAPEndpoint) throws(SystemError) -> IOResult<Void> {
        var address = l2capAddress(endpoint)
        do {
            _ = try syscall("connect(L2CAP \(endpoint))") {
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_l2>.size))
                    }
                }
            }
            return .done(())
        } catch  where error.errno == EINPROGRESS {
            return .wouldBlock
        }
    }

    /// `getsockopt(SO_ERROR)`: how a non-blocking connect ended (0: connected).
    static func pendingError(_ fd: Int32) throws(SystemError) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = try syscall("getsockopt(SO_ERROR)") { getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length) }
        return value
    }
}
