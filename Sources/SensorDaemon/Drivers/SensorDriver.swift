import SensorKitModel
import SensorSystem

/// One kind of hardware the daemon records (docs/architecture.md, "Drivers"), in the manner of
/// iio-sensor-proxy's driver table: what it can produce (or which configuration key turned it
/// off), and its discovery. Discovery opens one `SensorSource` per stream it finds and adds or
/// removes sources in the registry as hardware comes and goes (hot-plug); the pipeline then starts
/// and stops each source's recording (`SensorSource.setRecording`) and closes it. Discovery stops
/// with `SourceDiscovery.stop()`. One file per driver.
public protocol SensorDriver: Sendable {
    /// What it produces, or why it does not run.
    var entry: DriverRegistry.Driver { get }
    /// Starts discovery, adding sources to `registry`. Called only when `entry.disabledBy` is nil.
    /// Throws when the driver cannot run on this machine; the daemon logs that and goes on.
    func start(registry: any SourceRegistry, journal: Journal) throws -> any SourceDiscovery
}

/// A driver of the table (`DriverTable.kinds`): it reads its own sections of `sensorkitd.conf`
/// (`ConfigurationReader`, its settings kept in `DaemonConfiguration.drivers`) and, from a whole
/// configuration, makes itself — or nothing, when that configuration does not run it.
protocol ConfiguredDriver: SensorDriver, ConfigurationReader {
    init?(configuration: DaemonConfiguration)
}

/// The drivers of this build under one configuration: the daemon starts each in order and
/// `DriverRegistry` (what is recordable, and why not) comes from the same list.
public struct DriverTable: Sendable {
    public let drivers: [any SensorDriver]

    public init(_ drivers: [any SensorDriver]) { self.drivers = drivers }

    /// Every driver of this build, in start order (buffered before polled, local before remote).
    /// The one list: the configuration is read by these drivers' readers, and the daemon runs
    /// the ones a configuration makes.
    static let kinds: [any ConfiguredDriver.Type] = [
        LocalIIODriver.self, RemoteIIODriver.self, BLEDriver.self, KeyboardDriver.self, DeviceUsageDriver.self, ModemDriver.self,
        VisitsDriver.self,
    ]

    /// Local IIO always; remote IIO when `[iio] remote =` names a context; BLE when `[ble]` exists.
    public init(configuration: DaemonConfiguration) {
        self.init(Self.kinds.compactMap { $0.init(configuration: configuration) })
    }

    public var registry: DriverRegistry { DriverRegistry(drivers.map(\.entry)) }

    /// Starts every enabled driver; one that cannot run here is logged once and skipped.
    public func start(registry: any SourceRegistry, journal: Journal) -> [any SourceDiscovery] {
        var discoveries: [any SourceDiscovery] = []
        for driver in drivers {
            let entry = driver.entry
            if let key = entry.disabledBy {
                journal.notice("\(entry.name) driver disabled by configuration (\(key))")
                continue
            }
            do {
                discoveries.append(try driver.start(registry: registry, journal: journal))
            } catch {
                journal.warning("\(entry.name) driver unavailable: \(error); its sensors will not be recorded")
            }
        }
        return discoveries
    }
}
