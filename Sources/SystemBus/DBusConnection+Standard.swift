import Dispatch

/// The standard interfaces' calls, in the callback form (results on a named queue, the house
/// style, and what keeps working when Swift's cooperative pool is busy) and in `async` forms
/// that wrap the callbacks.
extension DBusConnection {
    /// `org.freedesktop.DBus.Properties.Get`, the variant unwrapped.
    public func property(
        destination: String, path: DBusObjectPath, interface: String, name: String, timeout: Duration = .seconds(25),
        queue: DispatchQueue, completion: @escaping @Sendable (Result<DBusValue, DBusError>) -> Void
    ) {
        call(
            destination: destination, path: path, interface: DBusStandard.properties, member: "Get",
            arguments: [.string(interface), .string(name)], timeout: timeout, queue: queue
        ) { result in
            completion(Self.read(result) { reply throws(DBusError) in try expectArguments(reply, "v")[0].unwrappingVariant() })
        }
    }

    /// `org.freedesktop.DBus.Properties.GetAll`.
    public func properties(
        destination: String, path: DBusObjectPath, interface: String, timeout: Duration = .seconds(25),
        queue: DispatchQueue, completion: @escaping @Sendable (Result<DBusProperties, DBusError>) -> Void
    ) {
        call(
            destination: destination, path: path, interface: DBusStandard.properties, member: "GetAll",
            arguments: [.string(interface)], timeout: timeout, queue: queue
        ) { result in
            completion(Self.read(result) { reply throws(DBusError) in try expectArguments(reply, "a{sv}")[0].properties() })
        }
    }

    /// `org.freedesktop.DBus.Properties.Set`.
    public func setProperty(
        destination: String, path: DBusObjectPath, interface: String, name: String, value: DBusValue,
        timeout: Duration = .seconds(25), queue: DispatchQueue,
        completion: @escaping @Sendable (Result<Void, DBusError>) -> Void
    ) {
        call(
            destination: destination, path: path, interface: DBusStandard.properties, member: "Set",
            arguments: [.string(interface), .string(name), .variant(value)], timeout: timeout, queue: queue
        ) { result in
            completion(result.map { _ in () })
        }
    }

    /// `org.freedesktop.DBus.ObjectManager.GetManagedObjects`.
    public func managedObjects(
        destination: String, path: DBusObjectPath, timeout: Duration = .seconds(25), queue: DispatchQueue,
        completion: @escaping @Sendable (Result<DBusManagedObjects, DBusError>) -> Void
    ) {
        call(
            destination: destination, path: path, interface: DBusStandard.objectManager, member: "GetManagedObjects",
            timeout: timeout, queue: queue
        ) { result in
            completion(
                Self.read(result) { reply throws(DBusError) in try expectArguments(reply, "a{oa{sa{sv}}}")[0].managedObjects() })
        }
    }

    /// `org.freedesktop.DBus.NameHasOwner`: whether a service is on the bus now.
    public func nameHasOwner(
        _ name: String, timeout: Duration = .seconds(25), queue: DispatchQueue,
        completion: @escaping @Sendable (Result<Bool, DBusError>) -> Void
    ) {
        call(
            destination: DBusStandard.bus, path: DBusStandard.busPath, interface: DBusStandard.bus, member: "NameHasOwner",
            arguments: [.string(name)], timeout: timeout, queue: queue
        ) { result in
            completion(Self.read(result) { reply throws(DBusError) in try expectArguments(reply, "b")[0].as(Bool.self) })
        }
    }

    private static func read<T>(
        _ result: Result<[DBusValue], DBusError>,
        _ body: ([DBusValue]) throws(DBusError) -> T
    ) -> Result<T, DBusError> {
        switch result {
        case let .failure(error): return .failure(error)
        case let .success(reply):
            do throws(DBusError) { return .success(try body(reply)) } catch { return .failure(error) }
        }
    }
}

// MARK: async forms

extension DBusConnection {
    public func call(
        destination: String, path: DBusObjectPath, interface: String, member: String,
        arguments: [DBusValue] = [], timeout: Duration = .seconds(25)
    ) async throws(DBusError) -> [DBusValue] {
        try await Self.awaiting { queue, completion in
            call(
                destination: destination, path: path, interface: interface, member: member, arguments: arguments,
                timeout: timeout,
                queue: queue, completion: completion)
        }
    }

    /// Subscribes and returns once the broker has installed the match, so no signal sent after
    /// this returns is missed.
    public func subscribe(
        _ match: DBusMatch, queue: DispatchQueue,
        handler: @escaping @Sendable (DBusSignalEvent) -> Void
    ) async throws(DBusError) -> DBusSubscription {
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

    public func property(
        destination: String, path: DBusObjectPath, interface: String, name: String,
        timeout: Duration = .seconds(25)
    ) async throws(DBusError) -> DBusValue {
        try await Self.awaiting { queue, completion in
            property(
                destination: destination, path: path, interface: interface, name: name, timeout: timeout, queue: queue,
                completion: completion)
        }
    }

    public func properties(
        destination: String, path: DBusObjectPath, interface: String,
        timeout: Duration = .seconds(25)
    ) async throws(DBusError) -> DBusProperties {
        try await Self.awaiting { queue, completion in
            properties(
                destination: destination, path: path, interface: interface, timeout: timeout, queue: queue, completion: completion
            )
        }
    }

    public func setProperty(
        destination: String, path: DBusObjectPath, interface: String, name: String, value: DBusValue,
        timeout: Duration = .seconds(25)
    ) async throws(DBusError) {
        try await Self.awaiting { queue, completion in
            setProperty(
                destination: destination, path: path, interface: interface, name: name, value: value, timeout: timeout,
                queue: queue, completion: completion)
        }
    }

    public func managedObjects(
        destination: String, path: DBusObjectPath,
        timeout: Duration = .seconds(25)
    ) async throws(DBusError) -> DBusManagedObjects {
        try await Self.awaiting { queue, completion in
            managedObjects(destination: destination, path: path, timeout: timeout, queue: queue, completion: completion)
        }
    }

    public func nameHasOwner(_ name: String, timeout: Duration = .seconds(25)) async throws(DBusError) -> Bool {
        try await Self.awaiting { queue, completion in nameHasOwner(name, timeout: timeout, queue: queue, completion: completion)
        }
    }

    private static func awaiting<T: Sendable>(
        _ start: (DispatchQueue, @escaping @Sendable (Result<T, DBusError>) -> Void) -> Void
    ) async throws(DBusError) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, DBusError>, Never>) in
            start(resultQueue) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    private static let resultQueue = DispatchQueue(label: "dbus.results")
}
