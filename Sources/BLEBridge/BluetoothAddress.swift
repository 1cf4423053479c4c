/// A device address (BD_ADDR) as text and as the controller sends it. HCI events, `bdaddr_t` and
/// `sockaddr_l2` carry its six bytes least significant first, so `C0:11:22:33:44:55` is
/// `55 44 33 22 11 C0` on the wire.
enum BluetoothAddress {
    /// Upper-case `AA:BB:CC:DD:EE:FF` from six wire-order bytes.
    static func text(wireOrder bytes: ArraySlice<UInt8>) -> String {
        bytes.reversed().map { byte in
            let digits = String(byte, radix: 16, uppercase: true)
            return byte < 0x10 ? "0" + digits : digits
        }.joined(separator: ":")
    }

    /// The six wire-order bytes of `AA:BB:CC:DD:EE:FF` (hex of either case); nil for anything else.
    static func wireOrder(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6 else { return nil }
        var bytes: [UInt8] = []
        for part in parts.reversed() {
            guard part.count == 2, part.allSatisfy(\.isHexDigit), part.allSatisfy(\.isASCII), let byte = UInt8(part, radix: 16)
            else { return nil }
            bytes.append(byte)
        }
        return bytes
    }
}
