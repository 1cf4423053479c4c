/// Typed reading of decoded values: `value.as(String.self)`, property dictionaries (`a{sv}`),
/// managed objects (`a{oa{sa{sv}}}`). A value of another type, a duplicate key or a variant that
/// wraps the wrong thing is an error (`DBusError.malformed`), never a trap: values from the bus
/// are hostile input.
public protocol DBusDecodable {
    init(dbus value: DBusValue) throws(DBusError)
}

extension DBusValue {
    public func `as`<T: DBusDecodable>(_: T.Type) throws(DBusError) -> T { try T(dbus: self) }

    /// The value inside a variant (one level).
    public func unwrappingVariant() -> DBusValue {
        if case let .variant(inner) = self { return inner }
        return self
    }

    static func mismatch(_ wanted: String, _ value: DBusValue) -> DBusError {
        .malformed("expected \(wanted), got \(DBusText.escaped(value.type.description))")
    }
}

extension String: DBusDecodable {
    public init(dbus value: DBusValue) throws(DBusError) {
        guard case let .string(text) = value else { throw DBusValue.mismatch("s", value) }
        self = text
    }
}

extension DBusObjectPath: DBusDecodable {
    public init(dbus value: DBusValue) throws(DBusError) {
        guard case let .objectPath(path) = value else { throw DBusValue.mismatch("o", value) }
        self = path
    }
}

extension Bool: DBusDecodable {
    public init(dbus value: DBusValue) throws(DBusError) {
        guard case let .boolean(flag) = value else { throw DBusValue.mismatch("b", value) }
        self = flag
    }
}

extension Double: DBusDecodable {
    public init(dbus value: DBusValue) throws(DBusError) {
        guard case let .double(number) = value else { throw DBusValue.mismatch("d", value) }
        self = number
    }
}

extension UInt8: DBusDecodable {
    public init(dbus value: DBusValue) throws(DBusError) {
        guard case let .byte(number) = value else { throw DBusValue.mismatch("y", value) }
        self = number
    }
}

extension Int16: DBusDecodable {
    public init(dbus value: DBusValue) throws(DBusError) {
        guard case let .int16(number) = value else { throw DBusValue.mismatch("n", value) }
        self = number
    }
}

extension UInt16: DBusDecodable {
    public init(dbus value: DBusValue) throws(DBusError) {
        guard case let .uint16(number) = value else { throw DBusValue.mismatch("q", value) }
        self = number
    }
}

extension Int32: DBusDecodable {
    public init(dbus value: DBusValue) throws(DBusError) {
        guard case let .int32(number) = value else { throw DBusValue.mismatch("i", value) }
        self = number
    }
}

extension UInt32: DBusDecodable {
    public init(dbus value: DBusValue) throws(DBusError) {
        guard case let .uint32(number) = value else { throw DBusValue.mismatch("u", value) }
        self = number
    }
}

extension Int64: DBusDecodable {
    public init(dbus value: DBusValue) throws(DBusError) {
        guard case let .int64(number) = value else { throw DBusValue.mismatch("x", value) }
        self = number
    }
}

extension UInt64: DBusDecodable {
    public init(dbus value: DBusValue) throws(DBusError) {
        guard case let .uint64(number) = value else { throw DBusValue.mismatch("t", value) }
        self = number
    }
}

extension DBusFileDescriptor: DBusDecodable {
    /// Takes the fd over from the decoded value (which then holds a closed descriptor), so
    /// exactly one owner closes it.
    public convenience init(dbus value: DBusValue) throws(DBusError) {
        guard case let .unixFD(descriptor) = value, let number = descriptor.take() else {
            throw DBusValue.mismatch("h (an open fd)", value)
        }
        self.init(owning: number)
    }
}

extension Array: DBusDecodable where Element: DBusDecodable {
    public init(dbus value: DBusValue) throws(DBusError) {
        guard case let .array(_, values) = value else { throw DBusValue.mismatch("an array", value) }
        var elements: [Element] = []
        elements.reserveCapacity(values.count)
        for element in values { elements.append(try Element(dbus: element)) }
        self = elements
    }
}

/// `a{sv}`: property name → value, the variants unwrapped.
public typealias DBusProperties = [String: DBusValue]

/// `a{oa{sa{sv}}}`: object → interface → properties, as `GetManagedObjects` returns.
public typealias DBusManagedObjects = [DBusObjectPath: [String: DBusProperties]]

extension DBusValue {
    /// Reads `a{sv}`. A duplicate name is malformed (which one would be true?).
    public func properties() throws(DBusError) -> DBusProperties {
        guard case let .dictionary(.string, .variant, entries) = self else { throw Self.mismatch("a{sv}", self) }
        var properties: DBusProperties = [:]
        for entry in entries {
            let name = try entry.key.as(String.self)
            guard properties.updateValue(entry.value.unwrappingVariant(), forKey: name) == nil else {
                throw .malformed("property \(DBusText.escaped(name)) twice")
            }
        }
        return properties
    }

    /// Reads `a{sa{sv}}`: interface → properties.
    public func interfaces() throws(DBusError) -> [String: DBusProperties] {
        guard case let .dictionary(.string, .dictionary(.string, .variant), entries) = self else {
            throw Self.mismatch("a{sa{sv}}", self)
        }
        var interfaces: [String: DBusProperties] = [:]
        for entry in entries {
            let name = try entry.key.as(String.self)
            guard interfaces.updateValue(try entry.value.properties(), forKey: name) == nil else {
                throw .malformed("interface \(DBusText.escaped(name)) twice")
            }
        }
        return interfaces
    }

    /// Reads `a{oa{sa{sv}}}`.
    public func managedObjects() throws(DBusError) -> DBusManagedObjects {
        guard case let .dictionary(.objectPath, .dictionary(.string, .dictionary(.string, .variant)), entries) = self else {
            throw Self.mismatch("a{oa{sa{sv}}}", self)
        }
        var objects: DBusManagedObjects = [:]
        for entry in entries {
            let path = try entry.key.as(DBusObjectPath.self)
            guard objects.updateValue(try entry.value.interfaces(), forKey: path) == nil else {
                throw .malformed("object \(path) twice")
            }
        }
        return objects
    }
}

/// Arguments of a reply or signal checked against the signature the caller expects: the count
/// and each type, before any element is read.
public func expectArguments(_ arguments: [DBusValue], _ signature: String) throws(DBusError) -> [DBusValue] {
    let types: [DBusType]
    do { types = try DBusSignature(signature).types } catch { throw .invalidArgument("signature: \(error)") }
    guard arguments.map(\.type) == types else {
        let got = arguments.map(\.type.description).joined()
        throw .malformed("expected (\(signature)), got (\(DBusText.escaped(got)))")
    }
    return arguments
}
