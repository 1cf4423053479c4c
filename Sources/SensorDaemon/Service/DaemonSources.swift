import IIOBridge
import SensorKitModel
import SensorSystem

/// Which source discoveries the daemon runs: the IIO bridge (udev for local devices, libiio for
/// lab rigs' `iiod`) and, with part 5, the BLE bridge. Each keeps the registry's set of sources
/// current as hardware comes and goes.
enum DaemonSources {
    /// The drivers of this build and what they produce; the BLE bridge adds its own when it has a driver.
    static func drivers(configuration: DaemonConfiguration) -> DriverRegistry {
        DriverRegistry([
            .init(name: "iio", source: .iio, sensors: Set(IIOSensorFunction.Kind.allCases.map(\.sensor)),
                  disabledBy: configuration.iioEnabled ? nil : "[iio] enabled = no"),
        ])
    }

    static func start(configuration: DaemonConfiguration, registry: any SourceRegistry,
                      journal: Journal) throws -> [any SourceDiscovery] {
        let clock = LinuxSystemClock()
        let log = IIOLog { journal($0) }
        var discoveries: [any SourceDiscovery] = []
        guard configuration.iioEnabled else {
            journal.notice("IIO driver disabled by configuration ([iio] enabled = no)")
            return discoveries
        }
        do {
            discoveries.append(try IIODiscovery.start(registry: registry, options: .init(
                ignored: configuration.ignoredDevices, clock: clock, log: log, rates: configuration.sensorRates)))
        } catch {
            // No udev here (a container without /run/udev): say so once, record nothing local from IIO.
            journal.warning("IIO discovery unavailable: \(error); no local IIO sensors will be recorded")
        }
        if !configuration.remoteIIOContexts.isEmpty {
            let remote = IIORemoteDiscovery(registry: registry, options: .init(
                uris: configuration.remoteIIOContexts, clock: clock, log: log))
            remote.start()
            discoveries.append(remote)
        }
        return discoveries
    }
}

extension IIODiscovery: SourceDiscovery {}
extension IIORemoteDiscovery: SourceDiscovery {}
