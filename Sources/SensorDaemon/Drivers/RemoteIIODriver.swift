import IIOBridge
import SensorKitModel
import SensorSystem

/// Lab rigs' IIO devices served by `iiod` (`[iio] remote = ip:HOST`), through libiio, recorded
/// like local chips (docs/iio.md).
struct RemoteIIODriver: ConfiguredDriver {
    let configuration: DaemonConfiguration

    /// Only when `[iio] remote =` names a context.
    init?(configuration: DaemonConfiguration) {
        guard !configuration.remoteIIOContexts.isEmpty else { return nil }
        self.configuration = configuration
    }

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

/// `[iio] remote =` (the rest of `[iio]` is `LocalIIODriver`'s).
extension RemoteIIODriver {
    static var sections: [ConfigurationSectionRule] { [.single("iio")] }

    static func read(
        _ entry: ConfigurationFile.Entry, in section: ConfigurationFile.Section, into config: inout DaemonConfiguration
    ) throws(DaemonConfiguration.ParseError) -> Bool {
        guard entry.key == "remote" else { return false }
        config.drivers[IIOSettings.self].remote += entry.list
        return true
    }
}

extension DaemonConfiguration {
    /// `[iio] remote`.
    public var remoteIIOContexts: [String] {
        get { drivers[IIOSettings.self].remote }
        set { drivers[IIOSettings.self].remote = newValue }
    }
}
