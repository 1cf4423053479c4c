import IIOBridge
import SensorKitModel
import SensorSystem

/// IIO chips of this machine, found with udev (monitor before enumerate; add, remove, change)
/// and captured from their character devices (docs/iio.md).
struct LocalIIODriver: SensorDriver {
    let configuration: DaemonConfiguration

    var entry: DriverRegistry.Driver {
        .init(
            name: "iio", source: .iio, sensors: Set(IIOSensorFunction.Kind.allCases.map(\.sensor)),
            disabledBy: configuration.iioEnabled ? nil : "[iio] enabled = no")
    }

    func start(registry: any SourceRegistry, journal: Journal) throws -> any SourceDiscovery {
        // Without udev (a container without /run/udev) this throws: nothing local from IIO.
        try IIODiscovery.start(
            registry: registry,
            options: .init(
                ignored: configuration.ignoredDevices, clock: LinuxSystemClock(), log: journal,
                rates: configuration.sensorRates))
    }
}

extension IIODiscovery: SourceDiscovery {}
