import Dispatch

/// `async` forms of the callback API, and the standard interfaces' calls. The callback forms
/// are the primitives (results on a named queue, the house style); these wrap them.
extension DBusConnection {
    public func call(destination: String, path: DBusObjectPath, interface: String, member: String,
                     arguments: [DBusValue] = [], timeout: Duration = .seconds(25)) async throws(DBusError) -> [DBusValue] {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<[DBusValue], DBusError>, Never>) in
            call(destination: destination, path: path, interface: interface, member: member, arguments: arguments,
                 timeout: timeout, queue: Self.resultQueue) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Subscribes and returns once the broker has installed the match, so no signal sent after
    /// this returns is missed.
    public func subscribe(_ match: DBusMatch, queue: DispatchQueue,
                          handler: @escaping @Sendable (DBusSignalEvent) -> Void) async throws(DBusError) -> DBusSubscription {
        var subscription: DBusSubscription?
        let refusal = await withCheckedContinuation { (continuation: CheckedContinuation<DBusError?, Never>) in
            subscription = subscribe(match, queue: queue, installed: { continuation.resume(returning: $0) }, handler: handler)
        }
        guard let subscription else { throw .disconnected }
        if let refusal {
            subscription.cancel()
            throw refusal
        }
        return subscription
    }

    /// `org.freedesktop.DBus.Properties.Get`, the variant unwrapped.
    public func property(destination: String, path: DBusObjectPath, interface: String, name: String,
                         timeout: Duration = .seconds(25)) async throws(DBusError) -> DBusValue {
        let reply = try await call(destination: destination, path: path, interface: DBusStandard.properties, member: "Get",
                                   arguments: [.string(interface), .string(name)], timeout: timeout)
        return try expectArguments(reply, "v")[0].unwrappingVariant()
    }

    /// `org.freedesktop.DBus.Properties.GetAll`.
    public func properties(destination: String, path: DBusObjectPath, interface: String,
                           timeout: Duration = .seconds(25)) async throws(DBusError) -> DBusProperties {
        let reply = try await call(destination: destination, path: path, interface: DBusStandard.properties, member: "GetAll",
                                   arguments: [.string(interface)], timeout: timeout)
        return try expectArguments(reply, "a{sv}")[0].properties()
    }

    /// `org.freedesktop.DBus.Properties.Set`.
    public func setProperty(destination: String, path: DBusObjectPath, interface: String, name: String, value: DBusValue,
                            timeout: Duration = .seconds(25)) async throws(DBusError) {
        _ = try await call(destination: destination, path: path, interface: DBusStandard.properties, member: "Set",
                           arguments: [.string(interface), .string(name), .variant(value)], timeout: timeout)
    }

    /// `org.freedesktop.DBus.ObjectManager.GetManagedObjects`.
    public func managedObjects(destination: String, path: DBusObjectPath,
                               timeout: Duration = .seconds(25)) async throws(DBusError) -> DBusManagedObjects {
        let reply = try await call(destination: destination, path: path, interface: DBusStandard.objectManager,
                                   member: "GetManagedObjects", timeout: timeout)
        return try expectArguments(reply, "a{oa{sa{sv}}}")[0].managedObjects()
    }

    /// `org.freedesktop.DBus.NameHasOwner`: whether a service is on the bus now.
    public func nameHasOwner(_ name: String, timeout: Duration = .seconds(25)) async throws(DBusError) -> Bool {
        let reply = try await call(destination: DBusStandard.bus, path: try DBusObjectPath("/org/freedesktop/DBus"),
                                   interface: DBusStandard.bus, member: "NameHasOwner", arguments: [.string(name)],
                                   timeout: timeout)
        return try expectArguments(reply, "b")[0].as(Bool.self)
    }

    private static let resultQueue = DispatchQueue(label: "dbus.results")
}
