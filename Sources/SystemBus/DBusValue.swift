/// A value on the bus, with its D-Bus type. Containers carry their element types so that an
/// empty array still has a signature. Values decoded from the bus were checked against the
/// limits of `DBusLimits` as they were read; values a caller builds are checked by
/// `checkWellFormed()` before they are sent.
public indirect enum DBusValue: Sendable, Equatable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(DBusObjectPath)
    case signature(DBusSignature)
    case unixFD(DBusFileDescriptor)
    case array(DBusType, [DBusValue])
    case dictionary(key: DBusType, value: DBusType, [DBusDictionaryEntry])
    case structure([DBusValue])
    case variant(DBusValue)

    public var type: DBusType {
        switch self {
        case .byte: .byte
        case .boolean: .boolean
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        case .int64: .int64
        case .uint64: .uint64
        case .double: .double
        case .string: .string
        case .objectPath: .objectPath
        case .signature: .signature
        case .unixFD: .unixFD
        case let .array(element, _): .array(element)
        case let .dictionary(key, value, _): .dictionary(key: key, value: value)
        case let .structure(fields): .structure(fields.map(\.type))
        case .variant: .variant
        }
    }

    /// Throws when the value could not be marshalled as it says: an element whose type is not its
    /// array's, a key that is not basic, a string with a NUL, an empty structure, a signature
    /// that breaks the specification's length or depth rules.
    public func checkWellFormed() throws(DBusError) {
        do {
            _ = try DBusSignature([type])
        } catch {
            throw .invalidArgument("value of type \(DBusText.escaped(type.description)): \(error)")
        }
        try checkContents()
    }

    private func checkContents() throws(DBusError) {
        switch self {
        case let .string(text):
            if text.utf8.contains(0) { throw .invalidArgument("string with a NUL byte") }
        case let .array(element, values):
            for value in values {
                guard value.type == element else {
                    throw .invalidArgument("array of \(element) holds a \(DBusText.escaped(value.type.description))")
                }
                try value.checkContents()
            }
        case let .dictionary(key, value, entries):
            for entry in entries {
                guard entry.key.type == key, entry.value.type == value else {
                    throw .invalidArgument("dictionary a{\(key)\(value)} holds an entry of another type")
                }
                try entry.key.checkContents()
                try entry.value.checkContents()
            }
        case let .structure(fields):
            for field in fields { try field.checkContents() }
        case let .variant(inner):
            try inner.checkWellFormed()
        default:
            break
        }
    }
}

public struct DBusDictionaryEntry: Sendable, Equatable {
    public var key: DBusValue
    public var value: DBusValue

    public init(_ key: DBusValue, _ value: DBusValue) {
        self.key = key
        self.value = value
    }
}

/// An object path checked against the specification: `/`, or `/`-separated non-empty elements
/// of `[A-Za-z0-9_]`, no trailing `/`.
public struct DBusObjectPath: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String

    public init(_ text: String) throws(DBusError) {
        guard Self.isValid(text) else { throw .invalidArgument("object path \(DBusText.escaped(text))") }
        rawValue = text
    }

    /// A path written in this code, known to be valid.
    init(verified text: String) {
        precondition(Self.isValid(text), "invalid object path literal")
        rawValue = text
    }

    public static func isValid(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        guard bytes.last != UInt8(ascii: "/") else { return false }
        var previousWasSlash = false
        for byte in bytes {
            if byte == UInt8(ascii: "/") {
                if previousWasSlash { return false }
                previousWasSlash = true
            } else {
                previousWasSlash = false
                let allowed =
                    (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: "_")
                if !allowed { return false }
            }
        }
        return true
    }

    public var description: String { rawValue }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Text from the bus made fit for a log line or an error: at most `limit` bytes, control and
/// non-ASCII bytes as `\xNN`, so a hostile peer can neither forge lines nor flood the journal.
public enum DBusText {
    public static func escaped(_ text: String, limit: Int = 255) -> String {
        var out = ""
        var count = 0
        for byte in text.utf8 {
            if count >= limit { out += "…"; break }
            if byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "\\") {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "\\x" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16)
            }
            count += 1
        }
        return out
    }
}
