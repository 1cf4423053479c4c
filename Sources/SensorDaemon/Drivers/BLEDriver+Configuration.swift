import BLEBridge
import SensorKitModel

/// `[ble]` and `[wearable NAME]` (docs/configuration.md, "Wearables"): the BLE driver runs when
/// `[ble]` exists, and records the wearables its `[wearable]` sections name.
struct BLEDriverSettings: DriverConfiguration {
    /// nil when the section is absent: the BLE driver is off.
    var ble: BLESettings?
    /// In file order.
    var wearables: [WearableConfiguration] = []
}

extension BLEDriver: ConfiguredDriver {
    init?(configuration: DaemonConfiguration) {
        let settings = configuration.drivers[BLEDriverSettings.self]
        guard let ble = settings.ble else { return nil }
        let hold = Self.frameHold(configuration)
        self.init(
            settings: ble,
            wearables: settings.wearables.map { wearable in
                var held = wearable
                held.frameHold = hold
                return held
            })
    }

    /// The lab profile hands each PMD frame over on receipt (once the device clock's rate is
    /// checked), so a live subscriber gets ECG within milliseconds; the study profile keeps the
    /// second each frame waits for a better clock fit (docs/live.md, docs/ble.md §3).
    static func frameHold(_ configuration: DaemonConfiguration) -> PMDStreamTimeline.Hold {
        configuration.profile == .lab ? .onReceipt : .fit
    }

    /// The sensors a `streams =` line may name, as the configuration names them.
    static let streamNames = WearableConfiguration.streamSensors.map { SensorCatalog.descriptor(for: $0)?.name ?? $0.rawValue }
        .joined(separator: ", ")

    static var sections: [ConfigurationSectionRule] {
        [.single("ble"), .named("wearable", missing: "[wearable] needs a name, e.g. [wearable chest-strap]")]
    }

    static func begin(_ section: ConfigurationFile.Section, into config: inout DaemonConfiguration)
        throws(DaemonConfiguration.ParseError)
    {
        switch section.kind {
        case "ble": config.drivers[BLEDriverSettings.self].ble = BLESettings()
        default:
            config.drivers[BLEDriverSettings.self].wearables.append(
                WearableConfiguration(name: section.name ?? "", line: section.line))
        }
    }

    static func read(
        _ entry: ConfigurationFile.Entry, in section: ConfigurationFile.Section, into config: inout DaemonConfiguration
    ) throws(DaemonConfiguration.ParseError) -> Bool {
        let value = entry.value
        switch (section.kind, entry.key) {
        case ("ble", "transport"):
            guard let transport = BLESettings.transport(parsing: value) else {
                throw entry.error(
                    "transport: '\(value)' must be bluez, hci, hci-socket:/absolute/path or emulated:/absolute/folder")
            }
            config.drivers[BLEDriverSettings.self].ble?.transport = transport
        case ("wearable", "address"), ("wearable", "name"):
            var wearables = config.drivers[BLEDriverSettings.self].wearables
            guard wearables[wearables.count - 1].match == nil else {
                throw entry.error("[\(section.title)] takes one address = or name =, not both")
            }
            if entry.key == "address" {
                guard let address = WearableConfiguration.address(parsing: value) else {
                    throw entry.error("address: '\(value)' is not a Bluetooth address like C0:FF:EE:00:00:01")
                }
                wearables[wearables.count - 1].match = .address(address)
            } else {
                guard !value.isEmpty, ShellPattern.isValid(value) else {
                    throw entry.error("name: '\(value)' is not a shell pattern (an unclosed [ or a trailing \\)")
                }
                wearables[wearables.count - 1].match = .name(value)
            }
            config.drivers[BLEDriverSettings.self].wearables = wearables
        case ("wearable", "streams"):
            var streams: [SRSensor] = []
            for name in entry.list where !name.isEmpty {
                guard let sensor = SensorCatalog.sensor(named: name), WearableConfiguration.streamSensors.contains(sensor)
                else {
                    throw entry.error(
                        "streams: '\(name)' is not a wearable stream; use \(BLEDriver.streamNames)"
                    )
                }
                if !streams.contains(sensor) { streams.append(sensor) }
            }
            let last = config.drivers[BLEDriverSettings.self].wearables.count - 1
            config.drivers[BLEDriverSettings.self].wearables[last].streams = streams
        default: return false
        }
        return true
    }

    /// A wearable needs `[ble]`, a match and streams; two wearables never share an address.
    static func finish(_ file: ConfigurationFile, into config: inout DaemonConfiguration)
        throws(DaemonConfiguration.ParseError)
    {
        let settings = config.drivers[BLEDriverSettings.self]
        for (index, wearable) in settings.wearables.enumerated() {
            typealias ParseError = DaemonConfiguration.ParseError
            guard settings.ble != nil else {
                throw ParseError(
                    line: wearable.line,
                    message: "[wearable \(wearable.name)] needs a [ble] section (transport = bluez, hci or emulated:/folder)")
            }
            guard let match = wearable.match else {
                throw ParseError(line: wearable.line, message: "[wearable \(wearable.name)] needs address = or name =")
            }
            guard !wearable.streams.isEmpty else {
                throw ParseError(
                    line: wearable.line,
                    message:
                        "[wearable \(wearable.name)] needs streams = (\(BLEDriver.streamNames))"
                )
            }
            if case .address = match, let other = settings.wearables[..<index].first(where: { $0.match == match }) {
                throw ParseError(
                    line: wearable.line, message: "[wearable \(wearable.name)] has the address of [wearable \(other.name)]")
            }
        }
    }
}

extension DaemonConfiguration {
    /// `[ble]`: nil when the section is absent — the BLE driver is off.
    public var ble: BLESettings? {
        get { drivers[BLEDriverSettings.self].ble }
        set { drivers[BLEDriverSettings.self].ble = newValue }
    }

    /// `[wearable NAME]` sections, in file order.
    public var wearables: [WearableConfiguration] {
        get { drivers[BLEDriverSettings.self].wearables }
        set { drivers[BLEDriverSettings.self].wearables = newValue }
    }
}
