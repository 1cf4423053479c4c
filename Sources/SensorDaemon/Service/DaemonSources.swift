import SensorKitModel

/// Which source discoveries the daemon runs: the IIO bridge (udev) and, with part 5, the BLE
/// bridge. Each keeps the registry's set of sources current as hardware comes and goes.
enum DaemonSources {
    static func start(configuration: DaemonConfiguration, registry: any SourceRegistry,
                      journal: Journal) throws -> [any SourceDiscovery] {
        []
    }
}
