import ModemBridge
import SensorKitModel
import SensorSystem

/// Phone calls and text messages of this machine's modems, read from ModemManager on the system
/// bus and counted into `phoneUsageReport` and `messagesUsageReport` (docs/modem.md): ModemManager
/// is followed only while some app records either, and no number leaves the recorder's queue.
/// The driver runs when `[modem]` exists (a phone's or a WWAN laptop's configuration): on a machine
/// without a modem its two streams would only ever hold deletion records.
struct ModemDriver: ConfiguredDriver {
    let settings: ModemDriverSettings

    init?(configuration: DaemonConfiguration) {
        settings = configuration.drivers[ModemDriverSettings.self]
        guard settings.configured else { return nil }
    }

    var entry: DriverRegistry.Driver {
        .init(
            name: "modem", source: .modemManager, sensors: [.phoneUsageReport, .messagesUsageReport],
            disabledBy: settings.enabled ? nil : "[modem] enabled = no")
    }

    func start(registry: any SourceRegistry, journal: Journal) throws -> any SourceDiscovery {
        let modem = ModemSettings(intervalNanoseconds: settings.interval)
        let recorder = ModemUsageRecorder(
            bus: .system, settings: modem, clock: LinuxSystemClock(), log: { journal.info($0) })
        return ModemDiscovery(registry: registry, recorder: recorder, settings: modem)
    }
}

extension ModemDiscovery: SourceDiscovery {}

/// `[modem]`.
struct ModemDriverSettings: DriverConfiguration {
    /// Whether the file has a `[modem]` section.
    var configured = false
    /// `enabled = no`: ModemManager is never asked, and both usage sensors refuse `startRecording`.
    var enabled = true
    /// `interval =`: the length of one report's interval (1 s to 1 d; 15 minutes).
    var interval = ModemSettings().intervalNanoseconds
}

extension ModemDriver {
    static var sections: [ConfigurationSectionRule] { [.single("modem")] }

    static func begin(_ section: ConfigurationFile.Section, into config: inout DaemonConfiguration)
        throws(DaemonConfiguration.ParseError)
    {
        config.drivers[ModemDriverSettings.self].configured = true
    }

    static func read(
        _ entry: ConfigurationFile.Entry, in section: ConfigurationFile.Section, into config: inout DaemonConfiguration
    ) throws(DaemonConfiguration.ParseError) -> Bool {
        switch entry.key {
        case "enabled": config.drivers[ModemDriverSettings.self].enabled = try entry.yesOrNo()
        case "interval": config.drivers[ModemDriverSettings.self].interval = try entry.reportInterval()
        default: return false
        }
        return true
    }
}
