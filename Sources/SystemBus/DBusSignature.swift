/// A validated D-Bus signature: zero or more complete types, by the specification's rules
/// (at most 255 bytes; at most 32 nested arrays and 32 nested structures or dictionary entries;
/// a dictionary entry only as an array's element, with a basic key and exactly one value; no
/// empty structure). Parsing is pure and never traps: a signature from the bus, a client or a
/// test is hostile input until it parses.
public struct DBusSignature: Hashable, Sendable, CustomStringConvertible {
    public static let maximumLength = 255
    public static let maximumArrayDepth = 32
    public static let maximumStructureDepth = 32

    public let types: [DBusType]

    public init(_ types: [DBusType]) throws(DBusSignatureError) {
        let signature = DBusSignature(unchecked: types)
        // Built types obey the same rules as parsed ones: re-parse the bytes they make.
        _ = try DBusSignature(bytes: signature.bytes)
        self = signature
    }

    init(unchecked types: [DBusType]) { self.types = types }

    public init(_ text: String) throws(DBusSignatureError) {
        try self.init(bytes: Array(text.utf8))
    }

    public init(bytes: [UInt8]) throws(DBusSignatureError) {
        guard bytes.count <= Self.maximumLength else { throw .tooLong(bytes.count) }
        var parser = Parser(bytes: bytes)
        var types: [DBusType] = []
        while parser.position < bytes.count {
            types.append(try parser.completeType(arrays: 0, structures: 0))
        }
        self.types = types
    }

    /// The signature of exactly one complete type (a variant's contents, an array's element).
    public static func single(_ text: String) throws(DBusSignatureError) -> DBusType {
        let signature = try DBusSignature(text)
        guard signature.types.count == 1 else { throw .notSingleType(signature.description) }
        return signature.types[0]
    }

    public var bytes: [UInt8] {
        var bytes: [UInt8] = []
        for type in types { type.append(to: &bytes) }
        return bytes
    }

    public var description: String { String(decoding: bytes, as: UTF8.self) }

    private struct Parser {
        let bytes: [UInt8]
        var position = 0

        mutating func completeType(arrays: Int, structures: Int) throws(DBusSignatureError) -> DBusType {
            guard position < bytes.count else { throw .truncated(at: position) }
            let code = bytes[position]
            position += 1
            if let basic = DBusType.basic(code) { return basic }
            switch code {
            case UInt8(ascii: "v"):
                return .variant
            case UInt8(ascii: "a"):
                guard arrays < DBusSignature.maximumArrayDepth else { throw .tooDeep(at: position - 1) }
                if position < bytes.count, bytes[position] == UInt8(ascii: "{") {
                    guard structures < DBusSignature.maximumStructureDepth else { throw .tooDeep(at: position) }
                    position += 1
                    let keyStart = position
                    let key = try completeType(arrays: arrays + 1, structures: structures + 1)
                    guard key.isBasic else { throw .invalidDictionaryKey(at: keyStart) }
                    guard position < bytes.count else { throw .truncated(at: position) }
                    guard bytes[position] != UInt8(ascii: "}") else { throw .invalidDictionaryEntry(at: position) }
                    let value = try completeType(arrays: arrays + 1, structures: structures + 1)
                    guard position < bytes.count else { throw .truncated(at: position) }
                    guard bytes[position] == UInt8(ascii: "}") else { throw .invalidDictionaryEntry(at: position) }
                    position += 1
                    return .dictionary(key: key, value: value)
                }
                return .array(try completeType(arrays: arrays + 1, structures: structures))
            case UInt8(ascii: "("):
                guard structures < DBusSignature.maximumStructureDepth else { throw .tooDeep(at: position - 1) }
                var fields: [DBusType] = []
                while true {
                    guard position < bytes.count else { throw .truncated(at: position) }
                    if bytes[position] == UInt8(ascii: ")") {
                        guard !fields.isEmpty else { throw .emptyStructure(at: position) }
                        position += 1
                        return .structure(fields)
                    }
                    fields.append(try completeType(arrays: arrays, structures: structures + 1))
                }
            case UInt8(ascii: "{"):
                throw .invalidDictionaryEntry(at: position - 1)
            default:
                throw .unknownTypeCode(code, at: position - 1)
            }
        }
    }
}

public enum DBusSignatureError: Error, Hashable, Sendable, CustomStringConvertible {
    case tooLong(Int)
    case truncated(at: Int)
    case tooDeep(at: Int)
    case unknownTypeCode(UInt8, at: Int)
    case emptyStructure(at: Int)
    case invalidDictionaryKey(at: Int)
    case invalidDictionaryEntry(at: Int)
    case notSingleType(String)

    public var description: String {
        switch self {
        case let .tooLong(length): "signature of \(length) bytes (at most \(DBusSignature.maximumLength))"
        case let .truncated(at): "signature ends inside a type at byte \(at)"
        case let .tooDeep(at): "signature nests containers too deeply at byte \(at)"
        case let .unknownTypeCode(code, at): "unknown type code 0x\(String(code, radix: 16)) at byte \(at)"
        case let .emptyStructure(at): "empty structure at byte \(at)"
        case let .invalidDictionaryKey(at): "dictionary key is not a basic type at byte \(at)"
        case let .invalidDictionaryEntry(at): "dictionary entry outside an array or without exactly two types at byte \(at)"
        case let .notSingleType(text): "\(DBusText.escaped(text)) is not exactly one complete type"
        }
    }
}
