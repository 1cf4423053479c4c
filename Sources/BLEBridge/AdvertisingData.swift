/// What a scan saw of one peripheral: its advertising data followed by its scan-response data, as
/// raw AD structures (`length, type, value…`; Core Supplement Part A §1). A parse is a pure
/// function over the bytes; a structure whose length runs past the end ends the parse and is
/// counted, the structures before it are kept.
public struct AdvertisingData: Equatable, Sendable {
    public struct Structure: Equatable, Sendable {
        public var type: UInt8
        public var value: [UInt8]
        public init(type: UInt8, value: [UInt8]) {
            self.type = type
            self.value = value
        }
    }

    /// Legacy advertising data (31 bytes) plus scan response (31 bytes).
    public static let maximumLength = 62

    public static let incompleteServiceUUIDs16: UInt8 = 0x02
    public static let completeServiceUUIDs16: UInt8 = 0x03
    public static let shortenedLocalName: UInt8 = 0x08
    public static let completeLocalName: UInt8 = 0x09

    public private(set) var structures: [Structure]
    /// True when the input ended inside a structure (or was longer than 62 bytes and was cut).
    public private(set) var isTruncated: Bool

    public init(structures: [Structure]) {
        self.structures = structures
        self.isTruncated = false
    }

    public init(parsing bytes: [UInt8]) {
        structures = []
        isTruncated = bytes.count > Self.maximumLength
        var index = 0
        let end = min(bytes.count, Self.maximumLength)
        while index < end {
            let length = Int(bytes[index])
            // A zero length is padding: the significant part has ended (Core Vol 3 Part C §11).
            if length == 0 { break }
            guard index + 1 + length <= end else {
                isTruncated = true
                break
            }
            structures.append(Structure(type: bytes[index + 1], value: Array(bytes[index + 2..<index + 1 + length])))
            index += 1 + length
        }
    }

    /// Advertising data, then the scan response: one view of the peripheral.
    public func merged(with scanResponse: AdvertisingData) -> AdvertisingData {
        var result = AdvertisingData(structures: structures + scanResponse.structures)
        result.isTruncated = isTruncated || scanResponse.isTruncated
        return result
    }

    /// The Complete Local Name if present, else the Shortened Local Name (the rule `name =` in
    /// the `[wearable]` configuration matches against). Invalid UTF-8 is repaired, not rejected.
    public var localName: String? {
        for type in [Self.completeLocalName, Self.shortenedLocalName] {
            if let structure = structures.first(where: { $0.type == type }) {
                return String(decoding: structure.value, as: UTF8.self)
            }
        }
        return nil
    }

    /// Every 16-bit service UUID listed (complete or incomplete lists), in order; an odd trailing
    /// byte is ignored.
    public var serviceUUIDs16: [UInt16] {
        structures.filter { $0.type == Self.completeServiceUUIDs16 || $0.type == Self.incompleteServiceUUIDs16 }
            .flatMap { structure in
                stride(from: 0, to: structure.value.count - 1, by: 2).map {
                    UInt16(structure.value[$0]) | UInt16(structure.value[$0 + 1]) << 8
                }
            }
    }

    public func encoded() -> [UInt8] {
        structures.flatMap { [UInt8(truncatingIfNeeded: $0.value.count + 1), $0.type] + $0.value }
    }
}
