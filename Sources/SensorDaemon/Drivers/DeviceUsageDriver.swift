import SensorKitModel
import SensorSystem
import UsageBridge

/// The person's use of this machine as `deviceUsageReport` (docs/device-usage.md): logind's
/// view of seat0 over the system bus, and what the session agent (`sensorkit-session`) sees of
/// the compositor and the notifications, counted into one report per wall-clock quarter hour.
struct DeviceUsageDriver: ConfiguredDriver {
    let settings: DeviceUsageDriverSettings

    init(configuration: DaemonConfiguration) { settings = configuration.drivers[DeviceUsageDriverSettings.self] }

    var entry: DriverRegistry.Driver {
        .init(
            name: "device-usage", source: .session, sensors: [.deviceUsageReport],
            disabledBy: settings.enabled ? nil : "[device-usage] enabled = no")
    }

    func start(registry: any SourceRegistry, journal: Journal) throws -> any SourceDiscovery {
        DeviceUsageDiscovery(
            registry: registry, bus: settings.logind ? .system : nil, clock: LinuxSystemClock(),
            scheduler: DispatchScheduler(), journal: journal)
    }
}

extension DeviceUsageDiscovery: SourceDiscovery {}

/// `[device-usage]`.
struct DeviceUsageDriverSettings: DriverConfiguration {
    /// `enabled = no`: `deviceUsageReport` refuses `startRecording` and no agent is admitted.
    var enabled = true
    /// `logind = no`: seat0's lock and idle state are not watched (the agent's events alone count).
    var logind = true
}

extension DeviceUsageDriver {
    static var sections: [ConfigurationSectionRule] { [.single("device-usage")] }

    static func read(
        _ entry: ConfigurationFile.Entry, in section: ConfigurationFile.Section, into config: inout DaemonConfiguration
    ) throws(DaemonConfiguration.ParseError) -> Bool {
        switch entry.key {
        case "enabled": config.drivers[DeviceUsageDriverSettings.self].enabled = try entry.yesOrNo()
        case "logind": config.drivers[DeviceUsageDriverSettings.self].logind = try entry.yesOrNo()
        default: return false
        }
        return true
    }
}
