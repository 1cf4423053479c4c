import IIOBridge
import SensorKitModel
import SensorSystem

/// Lab rigs' IIO devices served by `iiod` (`[iio] remote = ip:HOST`), through libiio, recorded
/// like local chips (docs/iio.md).
struct RemoteIIODriver: SensorDriver {
    let configuration: DaemonConfiguration

    var entry: DriverRegistry.Driver {
        .init(
            name: "iio-remote", source: .iio, sensors: Set(IIOSensorFunction.Kind.allCases.map(\.sensor)),
            disabledBy: configuration.iioEnabled ? nil : "[iio] enabled = no")
    }

    func start(registry: any SourceRegistry, journal: Journal) throws -> any SourceDiscovery {
        let remote = IIORemoteDiscovery(
            registry: registry,
            options: .init(
                uris: configuration.remoteIIOContexts, clock: LinuxSystemClock(), log: journal))
        remote.start()
        return remote
    }
}

extension IIORemoteDiscovery: SourceDiscovery {}
