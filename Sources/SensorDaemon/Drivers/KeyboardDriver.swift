import KeyboardBridge
import SensorKitModel
import SensorSystem

/// Keyboards of this machine, found with udev and counted from evdev into `keyboardMetrics`
/// (docs/keyboard.md): a node is opened only while some app records the sensor, and no key
/// code leaves its reading thread.
struct KeyboardDriver: ConfiguredDriver {
    let settings: KeyboardDriverSettings

    init(configuration: DaemonConfiguration) { settings = configuration.drivers[KeyboardDriverSettings.self] }

    var entry: DriverRegistry.Driver {
        .init(
            name: "keyboard", source: .evdev, sensors: [.keyboardMetrics],
            disabledBy: settings.enabled ? nil : "[keyboard] enabled = no")
    }

    func start(registry: any SourceRegistry, journal: Journal) throws -> any SourceDiscovery {
        // Without udev (a container without /run/udev) this throws: no keyboards.
        try KeyboardDiscovery.start(
            registry: registry, settings: KeyboardSettings(intervalNanoseconds: settings.interval), clock: LinuxSystemClock(),
            journal: journal)
    }
}

extension KeyboardDiscovery: SourceDiscovery {}

/// `[keyboard]`.
struct KeyboardDriverSettings: DriverConfiguration {
    /// `enabled = no` turns keyboard counting off: `keyboardMetrics` then refuses `startRecording`.
    var enabled = true
    /// `interval =`: the length of one `SRKeyboardMetrics` interval (1 s to 1 d; 15 minutes).
    var interval = KeyboardSettings().intervalNanoseconds
}

extension KeyboardDriver {
    static var sections: [ConfigurationSectionRule] { [.single("keyboard")] }

    static func read(
        _ entry: ConfigurationFile.Entry, in section: ConfigurationFile.Section, into config: inout DaemonConfiguration
    ) throws(DaemonConfiguration.ParseError) -> Bool {
        switch entry.key {
        case "enabled": config.drivers[KeyboardDriverSettings.self].enabled = try entry.yesOrNo()
        case "interval": config.drivers[KeyboardDriverSettings.self].interval = try entry.reportInterval()
        default: return false
        }
        return true
    }
}
