import LocationBridge
import SensorKitModel
import SensorSystem

/// Visits to significant places as `visits` (docs/visits.md): the session agent reduces GeoClue's
/// fixes to visits in the person's session and hands over only those; the daemon records them on
/// its own clock.
struct VisitsDriver: ConfiguredDriver {
    let settings: VisitsDriverSettings

    init(configuration: DaemonConfiguration) { settings = configuration.drivers[VisitsDriverSettings.self] }

    var entry: DriverRegistry.Driver {
        .init(name: "visits", source: .session, sensors: [.visits], disabledBy: settings.enabled ? nil : "[visits] enabled = no")
    }

    func start(registry: any SourceRegistry, journal: Journal) throws -> any SourceDiscovery {
        VisitDiscovery(registry: registry, clock: LinuxSystemClock())
    }
}

extension VisitDiscovery: SourceDiscovery {}

/// `[visits]`.
struct VisitsDriverSettings: DriverConfiguration {
    /// `enabled = no`: `visits` refuses `startRecording` and an agent's visits are refused.
    var enabled = true
}

extension VisitsDriver {
    static var sections: [ConfigurationSectionRule] { [.single("visits")] }

    static func read(
        _ entry: ConfigurationFile.Entry, in section: ConfigurationFile.Section, into config: inout DaemonConfiguration
    ) throws(DaemonConfiguration.ParseError) -> Bool {
        switch entry.key {
        case "enabled": config.drivers[VisitsDriverSettings.self].enabled = try entry.yesOrNo()
        default: return false
        }
        return true
    }
}
