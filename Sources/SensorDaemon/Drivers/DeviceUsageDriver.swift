import KeyboardBridge
import SensorKitModel
import SensorSystem
import UsageBridge

/// The person's use of this machine as `deviceUsageReport` (docs/device-usage.md): logind's
/// view of seat0 over the system bus, and what the session agent (`sensorkit-session`) sees of
/// the compositor and the notifications, counted into one report per wall-clock quarter hour (`interval`);
/// typing episodes on the keyboards count as text-input sessions of the app in front.
struct DeviceUsageDriver: ConfiguredDriver {
    let settings: DeviceUsageDriverSettings

    init(configuration: DaemonConfiguration) { settings = configuration.drivers[DeviceUsageDriverSettings.self] }

    var entry: DriverRegistry.Driver {
        .init(
            name: "device-usage", source: .session, sensors: [.deviceUsageReport],
            disabledBy: settings.enabled ? nil : "[device-usage] enabled = no")
    }

    func start(registry: any SourceRegistry, journal: Journal) throws -> any SourceDiscovery {
        let clock = LinuxSystemClock()
        var typing: (watch: TypingEpisodeWatch, keyboards: KeyboardDiscovery)?
        if settings.typing {
            // Its own udev discovery, apart from keyboardMetrics': the keyboards are found whether
            // or not that sensor is enabled, and each side opens a node only while it records.
            let watch = TypingEpisodeWatch(clock: clock)
            do throws(SystemError) {
                typing = (
                    watch,
                    try KeyboardDiscovery.start(registry: watch, settings: KeyboardSettings(), clock: clock, journal: journal)
                )
            } catch {
                journal.warning("device usage: keyboards cannot be found (\(error)); no text-input session is counted")
            }
        }
        let usage = DeviceUsageDiscovery(
            registry: registry, bus: settings.logind ? .system : nil, clock: clock, scheduler: DispatchScheduler(),
            journal: journal, typing: typing?.watch, intervalNanoseconds: settings.interval)
        return DeviceUsageSources(usage: usage, keyboards: typing?.keyboards)
    }
}

/// The device-usage recorder and the keyboard discovery that feeds it typing episodes, stopped
/// together; the reader socket hands the session agent's events through it.
struct DeviceUsageSources: SourceDiscovery, UsageAgentSink {
    let usage: DeviceUsageDiscovery
    let keyboards: KeyboardDiscovery?

    var activeUser: UInt32? { usage.activeUser }

    func feed(_ event: UsageEvent) { usage.feed(event) }

    func stop() {
        usage.stop()
        keyboards?.stop()
    }
}

extension TypingEpisodeWatch: TypingEpisodeFeed {}

/// `[device-usage]`.
struct DeviceUsageDriverSettings: DriverConfiguration {
    /// `enabled = no`: `deviceUsageReport` refuses `startRecording` and no agent is admitted.
    var enabled = true
    /// `logind = no`: seat0's lock and idle state are not watched (the agent's events alone count).
    var logind = true
    /// `typing = no`: the keyboards are not read for `textInputSessions` (always 0 then).
    var typing = true
    /// `interval =`: the length of one report's interval (1 s to 1 d; SensorKit's 15 minutes).
    var interval = UsageSamples.intervalNanoseconds
}

extension DeviceUsageDriver {
    static var sections: [ConfigurationSectionRule] { [.single("device-usage")] }

    static func read(
        _ entry: ConfigurationFile.Entry, in section: ConfigurationFile.Section, into config: inout DaemonConfiguration
    ) throws(DaemonConfiguration.ParseError) -> Bool {
        switch entry.key {
        case "enabled": config.drivers[DeviceUsageDriverSettings.self].enabled = try entry.yesOrNo()
        case "logind": config.drivers[DeviceUsageDriverSettings.self].logind = try entry.yesOrNo()
        case "typing": config.drivers[DeviceUsageDriverSettings.self].typing = try entry.yesOrNo()
        case "interval": config.drivers[DeviceUsageDriverSettings.self].interval = try entry.reportInterval()
        default: return false
        }
        return true
    }
}
