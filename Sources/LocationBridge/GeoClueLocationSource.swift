import Dispatch
import SensorSystem
import SystemBus

/// A GeoClue2 client over `SystemBus`: `Manager.GetClient`, the client's `DesktopId` and
/// `DistanceThreshold` set, `LocationUpdated` subscribed before `Start`, and each update's
/// `Location` object read (`Latitude`, `Longitude`, `Accuracy`, `Timestamp`) into a `LocationFix`
/// handed to `onFix` on `queue`. GeoClue 2.6 holds `GetClient` until a location agent is
/// registered for the caller's uid, so this runs in the participant's session (the session
/// agent), whose desktop id GeoClue's configuration allows.
public final class GeoClueLocationSource: @unchecked Sendable {
    // @unchecked: every field but the constants is touched only on `queue`.
    public static let service = "org.freedesktop.GeoClue2"
    public static let manager = try! DBusObjectPath("/org/freedesktop/GeoClue2/Manager")
    public static let managerInterface = "org.freedesktop.GeoClue2.Manager"
    public static let clientInterface = "org.freedesktop.GeoClue2.Client"
    public static let locationInterface = "org.freedesktop.GeoClue2.Location"
    /// Updates read at once; more arriving while these are read are dropped (a flood from a
    /// hostile service cannot grow a queue).
    public static let maximumPendingReads = 8

    public let queue: DispatchQueue
    private let connection: DBusConnection
    private let desktopID: String
    private let distanceThreshold: UInt32
    private let timeout: Duration
    private let onFix: @Sendable (LocationFix) -> Void
    private let log: @Sendable (LogMessage) -> Void
    private var client: DBusObjectPath?
    private var subscription: DBusSubscription?
    private var pendingReads = 0

    /// Connects to `bus` (the system bus; a private one in tests).
    public init(
        bus: DBusBus, desktopID: String, distanceThreshold: UInt32 = 0, timeout: Duration = .seconds(25),
        queue: DispatchQueue = DispatchQueue(label: "sensorkit.geoclue"), log: @escaping @Sendable (LogMessage) -> Void,
        onFix: @escaping @Sendable (LocationFix) -> Void
    ) throws(DBusError) {
        connection = try DBusConnection(bus, description: "geoclue", queue: queue)
        self.queue = queue
        self.desktopID = desktopID
        self.distanceThreshold = distanceThreshold
        self.timeout = timeout
        self.onFix = onFix
        self.log = log
    }

    /// GetClient, DesktopId, DistanceThreshold, the LocationUpdated match, Start; `completion`
    /// on `queue` with the first refusal or success.
    public func start(completion: @escaping @Sendable (Result<Void, DBusError>) -> Void) {
        connection.call(
            destination: Self.service, path: Self.manager, interface: Self.managerInterface, member: "GetClient",
            timeout: timeout, queue: queue
        ) { [self] result in
            do throws(DBusError) {
                let path = try expectArguments(try result.get(), "o")[0].as(DBusObjectPath.self)
                client = path
                configure(path, completion: completion)
            } catch {
                completion(.failure(error))
            }
        }
    }

    private func configure(_ path: DBusObjectPath, completion: @escaping @Sendable (Result<Void, DBusError>) -> Void) {
        connection.setProperty(
            destination: Self.service, path: path, interface: Self.clientInterface, name: "DesktopId",
            value: .string(desktopID), timeout: timeout, queue: queue
        ) { [self] result in
            if case .failure(let error) = result { return completion(.failure(error)) }
            connection.setProperty(
                destination: Self.service, path: path, interface: Self.clientInterface, name: "DistanceThreshold",
                value: .uint32(distanceThreshold), timeout: timeout, queue: queue
            ) { [self] result in
                if case .failure(let error) = result { return completion(.failure(error)) }
                subscription = connection.subscribe(
                    DBusMatch(sender: Self.service, path: path, interface: Self.clientInterface, member: "LocationUpdated"),
                    queue: queue,
                    installed: { [self] refusal in
                        if let refusal { return completion(.failure(refusal)) }
                        connection.call(
                            destination: Self.service, path: path, interface: Self.clientInterface, member: "Start",
                            timeout: timeout, queue: queue
                        ) { result in completion(result.map { _ in () }) }
                    },
                    handler: { [weak self] event in self?.handle(event) })
            }
        }
    }

    /// `Client.Stop`, then the connection closes. Not on `queue`.
    public func stop() {
        let path: DBusObjectPath? = queue.sync {
            subscription?.cancel()
            subscription = nil
            return client
        }
        if let path {
            let done = DispatchSemaphore(value: 0)
            connection.call(
                destination: Self.service, path: path, interface: Self.clientInterface, member: "Stop", timeout: .seconds(2),
                queue: DispatchQueue(label: "sensorkit.geoclue.stop")
            ) { _ in done.signal() }
            _ = done.wait(timeout: .now() + 3)
        }
        connection.close()
    }

    private func handle(_ event: DBusSignalEvent) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard case .signal(let message) = event else { return }
        guard let arguments = try? expectArguments(message.arguments, "oo"),
            let location = try? arguments[1].as(DBusObjectPath.self), location.rawValue != "/"
        else {
            log("geoclue: a malformed LocationUpdated was ignored")
            return
        }
        guard pendingReads < Self.maximumPendingReads else { return }
        pendingReads += 1
        connection.properties(
            destination: Self.service, path: location, interface: Self.locationInterface, timeout: timeout, queue: queue
        ) { [weak self] result in
            guard let self else { return }
            pendingReads -= 1
            guard case .success(let properties) = result, let fix = Self.fix(properties) else {
                log("geoclue: a location could not be read and was skipped")
                return
            }
            onFix(fix)
        }
    }

    /// A fix from a `Location` object's properties; nil when one is missing, mistyped or
    /// implausible (pure).
    public static func fix(_ properties: DBusProperties) -> LocationFix? {
        guard let latitude = try? properties["Latitude"]?.as(Double.self),
            let longitude = try? properties["Longitude"]?.as(Double.self),
            let accuracy = try? properties["Accuracy"]?.as(Double.self),
            case .structure(let stamp)? = properties["Timestamp"], stamp.count == 2,
            let seconds = try? stamp[0].as(UInt64.self), let micros = try? stamp[1].as(UInt64.self),
            seconds < UInt64(Int64.max / 1_000_000_000), micros < 1_000_000
        else { return nil }
        let fix = LocationFix(
            latitude: latitude, longitude: longitude, accuracy: accuracy,
            time: Int64(seconds) * 1_000_000_000 + Int64(micros) * 1_000)
        return fix.isPlausible ? fix : nil
    }
}
