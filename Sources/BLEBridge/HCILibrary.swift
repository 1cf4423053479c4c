import CBluetooth
import Glibc
import SensorSystem

/// The kernel's HCI socket (BlueZ's headers through `CBluetooth`): the one file that imports it.
/// Calls go through the syscall funnel, so a failure names the call and its errno, which
/// `HCITransport` turns into what to do about it (docs/ble.md §5).
enum HCILibrary {
    /// `socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI)` bound to adapter `index` on the user channel
    /// (`HCI_CHANNEL_USER`): the adapter is ours alone, the kernel's Bluetooth stack lets go of it.
    /// Needs CAP_NET_ADMIN and an adapter that is down and unused (EBUSY otherwise).
    static func openUserChannel(_ index: UInt16) throws(SystemError) -> Int32 {
        let type = Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        let fd = try syscall("socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI)") { socket(AF_BLUETOOTH, type, BTPROTO_HCI) }
        var address = userChannelAddress(index)
        do {
            _ = try syscall("bind(hci\(index), HCI_CHANNEL_USER)") {
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_hci>.size))
                    }
                }
            }
        } catch {
            SystemCalls.close(fd)
            throw error
        }
        return fd
    }

    static func userChannelAddress(_ index: UInt16) -> sockaddr_hci {
        sockaddr_hci(hci_family: sa_family_t(AF_BLUETOOTH), hci_dev: index, hci_channel: UInt16(HCI_CHANNEL_USER))
    }

    /// The bytes `bind` hands the kernel (what the tests check).
    static func userChannelAddressBytes(_ index: UInt16) -> [UInt8] {
        withUnsafeBytes(of: userChannelAddress(index)) { Array($0) }
    }
}
