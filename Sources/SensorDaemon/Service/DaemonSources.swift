import SensorKitModel
import SensorSystem

/// The daemon's sources come from its driver table (`DriverTable`): the same list says what is
/// recordable and starts each driver's discovery.
enum DaemonSources {
    static func drivers(configuration: DaemonConfiguration) -> DriverRegistry {
        DriverTable(configuration: configuration).registry
    }

    static func start(
        configuration: DaemonConfiguration, registry: any SourceRegistry,
        journal: Journal
    ) throws -> [any SourceDiscovery] {
        DriverTable(configuration: configuration).start(registry: registry, journal: journal)
    }
}
