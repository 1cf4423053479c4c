import IIOBridge

/// A device's scan bytes over a layout from its scan types. Input: type lines (`le:s12/16>>4`, …)
/// up to a zero byte; the last type is the timestamp when it is 64 bits wide; the rest are scan
/// bytes, fed to the assembler in read-sized pieces and decoded.
enum ScanTarget {
    static func run(_ bytes: [UInt8]) {
        guard let split = bytes.firstIndex(of: 0) else { return }
        let lines = String(decoding: bytes[..<split], as: UTF8.self).split(separator: "\n").prefix(16)
        var types: [ScanType] = []
        for line in lines {
            guard let type = try? ScanType(parsing: line) else { return }
            types.append(type)
        }
        guard !types.isEmpty else { return }
        var timestamp: ScanElementSpec?
        if types.count > 1, types.last!.storageBits == 64 {
            timestamp = ScanElementSpec(channel: "in_timestamp", index: types.count - 1, type: types.removeLast())
        }
        let elements = types.enumerated().map { ScanElementSpec(channel: "in_c\($0.offset)", index: $0.offset, type: $0.element) }
        guard let layout = try? ScanLayout(elements: elements, timestamp: timestamp) else { return }
        let decoder = ScanDecoder(layout: layout)
        var assembler = ScanAssembler(scanBytes: layout.scanBytes)
        var values = [Int64](repeating: 0, count: layout.valueCount)
        var rest = bytes[(split + 1)...]
        while !rest.isEmpty {
            let piece = Int(rest.first! % 61) + 1
            let chunk = Array(rest.prefix(piece))
            rest = rest.dropFirst(piece)
            chunk.withUnsafeBytes { raw in
                assembler.feed(raw) { scan in
                    values.withUnsafeMutableBufferPointer { _ = decoder.decode(scan, into: $0) }
                }
            }
        }
        _ = assembler.reset()
    }
}
