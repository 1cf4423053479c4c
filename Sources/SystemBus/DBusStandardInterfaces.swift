/// The standard interfaces every later client uses (BlueZ, logind, ModemManager, GeoClue):
/// `org.freedesktop.DBus.Properties`, `org.freedesktop.DBus.ObjectManager` and the bus's own
/// `NameOwnerChanged`. Match rules and signal decoding are pure; the calls go through
/// `DBusConnection.call`.
public enum DBusStandard {
    public static let properties = "org.freedesktop.DBus.Properties"
    public static let objectManager = "org.freedesktop.DBus.ObjectManager"
    public static let bus = "org.freedesktop.DBus"
    public static let busPath = DBusObjectPath(verified: "/org/freedesktop/DBus")
}

/// `PropertiesChanged(s interface, a{sv} changed, as invalidated)`.
public struct DBusPropertiesChanged: Sendable, Equatable {
    public var path: DBusObjectPath?
    public var interface: String
    public var changed: DBusProperties
    public var invalidated: [String]

    public init(_ message: DBusMessage) throws(DBusError) {
        let arguments = try expectArguments(message.arguments, "sa{sv}as")
        path = message.path
        interface = try arguments[0].as(String.self)
        changed = try arguments[1].properties()
        invalidated = try arguments[2].as([String].self)
    }

    public static func match(sender: String? = nil, path: DBusObjectPath? = nil, interface: String? = nil) -> DBusMatch {
        DBusMatch(sender: sender, path: path, interface: DBusStandard.properties, member: "PropertiesChanged", arg0: interface)
    }
}

/// `InterfacesAdded(o object, a{sa{sv}} interfaces)`.
public struct DBusInterfacesAdded: Sendable, Equatable {
    public var object: DBusObjectPath
    public var interfaces: [String: DBusProperties]

    public init(_ message: DBusMessage) throws(DBusError) {
        let arguments = try expectArguments(message.arguments, "oa{sa{sv}}")
        object = try arguments[0].as(DBusObjectPath.self)
        interfaces = try arguments[1].interfaces()
    }

    public static func match(sender: String? = nil, path: DBusObjectPath? = nil) -> DBusMatch {
        DBusMatch(sender: sender, path: path, interface: DBusStandard.objectManager, member: "InterfacesAdded")
    }
}

/// `InterfacesRemoved(o object, as interfaces)`.
public struct DBusInterfacesRemoved: Sendable, Equatable {
    public var object: DBusObjectPath
    public var interfaces: [String]

    public init(_ message: DBusMessage) throws(DBusError) {
        let arguments = try expectArguments(message.arguments, "oas")
        object = try arguments[0].as(DBusObjectPath.self)
        interfaces = try arguments[1].as([String].self)
    }

    public static func match(sender: String? = nil, path: DBusObjectPath? = nil) -> DBusMatch {
        DBusMatch(sender: sender, path: path, interface: DBusStandard.objectManager, member: "InterfacesRemoved")
    }
}

/// `NameOwnerChanged(s name, s old, s new)` from the bus: a service that appeared (old empty),
/// vanished (new empty) or changed hands.
public struct DBusNameOwnerChanged: Sendable, Equatable {
    public var name: String
    public var oldOwner: String?
    public var newOwner: String?

    public init(_ message: DBusMessage) throws(DBusError) {
        let arguments = try expectArguments(message.arguments, "sss")
        name = try arguments[0].as(String.self)
        let old = try arguments[1].as(String.self)
        let new = try arguments[2].as(String.self)
        oldOwner = old.isEmpty ? nil : old
        newOwner = new.isEmpty ? nil : new
    }

    public static func match(name: String) -> DBusMatch {
        DBusMatch(
            sender: DBusStandard.bus, path: DBusStandard.busPath, interface: DBusStandard.bus,
            member: "NameOwnerChanged", arg0: name)
    }
}
