import IIOBridge

/// A `scan_elements/*_type` file's text, as a device (or a remote iiod) reports it.
enum ScanTypeTarget {
    static func run(_ bytes: [UInt8]) {
        guard let type = try? ScanType(parsing: String(decoding: bytes, as: UTF8.self)) else { return }
        _ = type.description
        // A type that parsed must lay out and decode a scan of its size.
        guard let layout = try? ScanLayout(elements: [ScanElementSpec(channel: "in_x", index: 0, type: type)]) else { return }
        let scan = [UInt8](repeating: 0xA5, count: layout.scanBytes)
        _ = ScanDecoder(layout: layout).decode(scan)
    }
}
