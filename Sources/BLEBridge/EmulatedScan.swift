import Glibc
import SensorSystem

/// The scan of an emulated transport directory: each peripheral `ADDR` is `ADDR.adv` (what a
/// scan sees: advertising data then scan response, raw AD structures, ≤ 62 bytes) beside the
/// listening socket `ADDR.att`. A peripheral is in range while both exist (docs/ble.md).
public enum EmulatedScan {
    public struct Report: Equatable, Sendable {
        /// Upper-case `AA:BB:CC:DD:EE:FF`.
        public var address: String
        public var data: AdvertisingData
        /// The path to connect the ATT bearer to.
        public var attPath: String
    }

    /// One pass over `directory`. Names that are not addresses, `.adv` files without their
    /// `.att` socket and unreadable files are skipped; a file over 62 bytes is cut and marked.
    public static func scan(directory: String) -> [Report] {
        guard let names = try? Set(SystemCalls.directoryEntries(directory)) else { return [] }
        var reports: [Report] = []
        for name in names.sorted() where name.hasSuffix(".adv") {
            let address = String(name.dropLast(4))
            guard isAddress(address), names.contains(address + ".att") else { continue }
            guard let bytes = readPrefix(directory + "/" + name, limit: AdvertisingData.maximumLength + 1) else { continue }
            reports.append(
                Report(
                    address: address.uppercased(), data: AdvertisingData(parsing: bytes),
                    attPath: directory + "/" + address + ".att"))
        }
        return reports
    }

    /// `AA:BB:CC:DD:EE:FF`, hex digits of either case.
    public static func isAddress(_ text: String) -> Bool {
        BluetoothAddress.wireOrder(text) != nil
    }

    private static func readPrefix(_ path: String, limit: Int) -> [UInt8]? {
        guard let fd = try? SystemCalls.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) else { return nil }
        defer { SystemCalls.close(fd) }
        var buffer = [UInt8](repeating: 0, count: limit)
        var filled = 0
        while filled < limit {
            let count = buffer.withUnsafeMutableBytes { raw in
                try? SystemCalls.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: raw[filled...]), path)
            }
            guard let count else { return nil }
            if count == 0 { break }
            filled += count
        }
        return Array(buffer[..<filled])
    }
}
