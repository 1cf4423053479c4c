/// One complete D-Bus type (the specification's "single complete type"), as parsed from a
/// signature. Pure: no sd-bus here, so every rule is tested over bytes (docs/dbus.md §2).
public indirect enum DBusType: Hashable, Sendable, CustomStringConvertible {
    case byte, boolean, int16, uint16, int32, uint32, int64, uint64, double
    case string, objectPath, signature, unixFD
    case array(DBusType)
    /// `a{kv}`: only ever the element of an array, so it is modelled as the array itself.
    case dictionary(key: DBusType, value: DBusType)
    case structure([DBusType])
    case variant

    /// The type code of a basic type, or nil for a container.
    public var basicCode: UInt8? {
        switch self {
        case .byte: UInt8(ascii: "y")
        case .boolean: UInt8(ascii: "b")
        case .int16: UInt8(ascii: "n")
        case .uint16: UInt8(ascii: "q")
        case .int32: UInt8(ascii: "i")
        case .uint32: UInt8(ascii: "u")
        case .int64: UInt8(ascii: "x")
        case .uint64: UInt8(ascii: "t")
        case .double: UInt8(ascii: "d")
        case .string: UInt8(ascii: "s")
        case .objectPath: UInt8(ascii: "o")
        case .signature: UInt8(ascii: "g")
        case .unixFD: UInt8(ascii: "h")
        case .array, .dictionary, .structure, .variant: nil
        }
    }

    /// Basic types are the only ones allowed as dictionary keys.
    public var isBasic: Bool { basicCode != nil }

    /// The signature bytes of this type, e.g. `a{sv}`.
    public var signatureBytes: [UInt8] {
        var bytes: [UInt8] = []
        append(to: &bytes)
        return bytes
    }

    public var description: String { String(decoding: signatureBytes, as: UTF8.self) }

    func append(to bytes: inout [UInt8]) {
        if let code = basicCode { bytes.append(code); return }
        switch self {
        case let .array(element):
            bytes.append(UInt8(ascii: "a"))
            element.append(to: &bytes)
        case let .dictionary(key, value):
            bytes.append(contentsOf: [UInt8(ascii: "a"), UInt8(ascii: "{")])
            key.append(to: &bytes)
            value.append(to: &bytes)
            bytes.append(UInt8(ascii: "}"))
        case let .structure(fields):
            bytes.append(UInt8(ascii: "("))
            for field in fields { field.append(to: &bytes) }
            bytes.append(UInt8(ascii: ")"))
        case .variant:
            bytes.append(UInt8(ascii: "v"))
        default:
            break
        }
    }

    static func basic(_ code: UInt8) -> DBusType? {
        switch code {
        case UInt8(ascii: "y"): .byte
        case UInt8(ascii: "b"): .boolean
        case UInt8(ascii: "n"): .int16
        case UInt8(ascii: "q"): .uint16
        case UInt8(ascii: "i"): .int32
        case UInt8(ascii: "u"): .uint32
        case UInt8(ascii: "x"): .int64
        case UInt8(ascii: "t"): .uint64
        case UInt8(ascii: "d"): .double
        case UInt8(ascii: "s"): .string
        case UInt8(ascii: "o"): .objectPath
        case UInt8(ascii: "g"): .signature
        case UInt8(ascii: "h"): .unixFD
        default: nil
        }
    }
}
