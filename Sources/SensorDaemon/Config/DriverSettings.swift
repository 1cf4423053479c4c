/// A driver's settings: what its sections of `sensorkitd.conf` say, the defaults without them.
public protocol DriverConfiguration: Hashable, Sendable {
    init()
}

/// Every driver's settings, kept by their type, so that a new driver brings its settings in its
/// own file and `DaemonConfiguration` needs no field for them. Two values are equal when they
/// hold equal settings of the same types (a reload compares them).
public struct DriverSettings: Hashable, Sendable {
    private var values: [ObjectIdentifier: any DriverConfiguration] = [:]

    public init() {}

    /// The settings of this type as read, or its defaults.
    public subscript<Settings: DriverConfiguration>(_ type: Settings.Type) -> Settings {
        get { values[ObjectIdentifier(type)] as? Settings ?? Settings() }
        set { values[ObjectIdentifier(type)] = newValue == Settings() ? nil : newValue }
    }

    public static func == (lhs: DriverSettings, rhs: DriverSettings) -> Bool {
        guard lhs.values.count == rhs.values.count else { return false }
        return lhs.values.allSatisfy { key, value in
            rhs.values[key].map { AnyHashable(value) == AnyHashable($0) } ?? false
        }
    }

    public func hash(into hasher: inout Hasher) {
        // Order-independent: a dictionary's order is not part of its value.
        hasher.combine(values.reduce(0) { $0 ^ AnyHashable($1.value).hashValue })
    }
}
