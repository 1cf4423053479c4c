import BLEBridge
import SensorKitModel

/// `sensorkitd.conf` (docs/configuration.md): INI-style sections of `key = value` lines.
///
///     profile = lab                      # "study" (default): 24 h hold; "lab": hold 0
///     [store]   hold = 24h  window = 7d  max-bytes = 20G  min-free = 1G
///     [sensor accelerometer]   hold = 0  window = 3d  rate = 100
///     [grant com.example.rig]  sensors = accelerometer, rotationRate
///     [reader]  max-connections = 800  max-connections-per-user = 100  max-fetches = 100  max-fetches-per-user = 12
///               fetch-idle-timeout = 60s
///     [ble]     transport = bluez | hci | emulated:/run/sensorkit/emulated-ble
///     [wearable chest-strap]  address = C0:FF:EE:00:00:01 (or name = Polar H10 *)  streams = heartRate, electrocardiogram
///
/// Durations take ns, us, ms, s, m, h, d; sizes take K, M, G, T (powers of 1024). Unknown keys and
/// sections are errors with their line number, so a typo never silently changes a study's rules; so
/// are a key set twice in one section and a section written twice (the error names both lines): a
/// second `hold =` must not quietly override the first one an administrator reads.
public struct DaemonConfiguration: Hashable, Sendable {
    public enum Profile: String, Sendable { case study, lab }

    public struct Retention: Hashable, Sendable {
        public var hold: Int64
        public var window: Int64
    }

    public var profile: Profile = .study
    public var defaultRetention = Retention(hold: 86_400 * 1_000_000_000, window: 7 * 86_400 * 1_000_000_000)
    public var sensorRetention: [SRSensor: Retention] = [:]
    /// `[sensor NAME] rate` in Hz: the sampling rate drivers ask of the hardware.
    public var sensorRates: [SRSensor: Double] = [:]
    public var maxStoreBytes: Int64?
    public var minFreeBytes: Int64 = 512 * 1024 * 1024
    public var grants: [ControlLedger.Key] = []
    /// IIO devices to leave alone (by name or sysfs device folder).
    public var ignoredDevices: [String] = []
    /// Lab rigs' libiio contexts served by `iiod` (`ip:host[:port]`), recorded like local devices.
    public var remoteIIOContexts: [String] = []
    /// `[iio] enabled = no` turns the IIO driver off: its sensors then refuse `startRecording`.
    public var iioEnabled = true
    /// `[reader]`: connection limits (nil: derived from the open-file limit, `ReaderLimits`) and
    /// how long a fetch may wait for its client (docs/protocol.md §6.2).
    public var reader = ReaderLimits.Settings()
    /// `[ble]`: nil when the section is absent — the BLE driver is off.
    public var ble: BLESettings?
    /// `[wearable NAME]` sections, in file order.
    public var wearables: [WearableConfiguration] = []

    public init() {}

    public func retention(for sensor: SRSensor) -> Retention {
        sensorRetention[sensor] ?? defaultRetention
    }

    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "line \(line): \(message)" }
    }

    public static func parse(_ text: String) throws(ParseError) -> DaemonConfiguration {
        var config = DaemonConfiguration()
        var section = ""
        var explicitHold = false
        // First line of each section header and of each key within its section: a repeat is an
        // error naming both lines, never a silent override.
        var sectionLines: [String: Int] = [:]
        var keyLines: [String: Int] = [:]
        for (offset, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = offset + 1
            let content =
                rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first
                .map { $0.trimmingCharacters(in: " \t\r") } ?? ""
            if content.isEmpty { continue }
            if content.hasPrefix("[") {
                guard content.hasSuffix("]") else { throw ParseError(line: line, message: "section header must end with ]") }
                section = String(content.dropFirst().dropLast()).trimmingCharacters(in: " \t")
                let parts = section.split(separator: " ", maxSplits: 1).map { $0.trimmingCharacters(in: " \t") }
                section = parts.joined(separator: " ")
                switch parts.first {
                case "store", "iio", "reader", "ble":
                    guard parts.count == 1 else { throw ParseError(line: line, message: "[\(parts[0])] takes no name") }
                case "sensor":
                    guard parts.count == 2, SensorCatalog.sensor(named: parts[1]) != nil else {
                        throw ParseError(
                            line: line, message: "unknown sensor in [\(section)]; use names like accelerometer or rotationRate")
                    }
                case "grant":
                    guard parts.count == 2 else { throw ParseError(line: line, message: "[grant] needs an app bundle id") }
                case "wearable":
                    guard parts.count == 2 else {
                        throw ParseError(line: line, message: "[wearable] needs a name, e.g. [wearable chest-strap]")
                    }
                default: throw ParseError(line: line, message: "unknown section [\(section)]")
                }
                if let earlier = sectionLines[section] {
                    throw ParseError(
                        line: line,
                        message: "section [\(section)] appears twice (first on line \(earlier)); merge the two into one")
                }
                sectionLines[section] = line
                if parts.first == "wearable" { config.wearables.append(WearableConfiguration(name: parts[1], line: line)) }
                if parts.first == "ble" { config.ble = config.ble ?? BLESettings() }
                continue
            }
            let pair = content.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: " \t") }
            guard pair.count == 2, !pair[0].isEmpty else { throw ParseError(line: line, message: "expected key = value") }
            let (key, value) = (pair[0], pair[1])
            if let earlier = keyLines[section + "\u{0}" + key] {
                throw ParseError(
                    line: line,
                    message:
                        "\(key) is set twice\(section.isEmpty ? "" : " in [\(section)]") (first on line \(earlier)); keep one")
            }
            keyLines[section + "\u{0}" + key] = line
            func duration() throws(ParseError) -> Int64 {
                guard let d = parseDuration(value) else {
                    throw ParseError(line: line, message: "\(key): '\(value)' is not a duration (e.g. 24h, 7d, 0)")
                }
                return d
            }
            func positiveDuration() throws(ParseError) -> Int64 {
                let d = try duration()
                guard d > 0 else { throw ParseError(line: line, message: "\(key) must be longer than 0") }
                return d
            }
            func size() throws(ParseError) -> Int64 {
                guard let s = parseSize(value) else {
                    throw ParseError(line: line, message: "\(key): '\(value)' is not a size (e.g. 20G, 512M)")
                }
                return s
            }
            let parts = section.split(separator: " ", maxSplits: 1).map(String.init)
            switch (parts.first ?? "", key) {
            case ("", "profile"):
                guard let profile = Profile(rawValue: value) else {
                    throw ParseError(line: line, message: "profile must be study or lab")
                }
                config.profile = profile
            case ("store", "hold"): config.defaultRetention.hold = try duration(); explicitHold = true
            case ("store", "window"): config.defaultRetention.window = try positiveDuration()
            case ("store", "max-bytes"): config.maxStoreBytes = try size()
            case ("store", "min-free"): config.minFreeBytes = try size()
            case ("sensor", "hold"), ("sensor", "window"):
                let sensor = SensorCatalog.sensor(named: parts[1])!
                var retention = config.sensorRetention[sensor] ?? config.defaultRetention
                if key == "hold" { retention.hold = try duration() } else { retention.window = try positiveDuration() }
                config.sensorRetention[sensor] = retention
            case ("sensor", "rate"):
                let number = value.hasSuffix("Hz") ? String(value.dropLast(2)).trimmingCharacters(in: " \t") : value
                guard let hertz = Double(number), hertz.isFinite, hertz > 0, hertz <= 100_000 else {
                    throw ParseError(
                        line: line, message: "rate: '\(value)' must be a rate in Hz above 0 and at most 100000 (e.g. 100 or 12.5)"
                    )
                }
                config.sensorRates[SensorCatalog.sensor(named: parts[1])!] = hertz
            case ("grant", "sensors"):
                for name in value.split(separator: ",").map({ $0.trimmingCharacters(in: " \t") }) where !name.isEmpty {
                    guard let sensor = SensorCatalog.sensor(named: name) else {
                        throw ParseError(line: line, message: "unknown sensor '\(name)' in [\(section)]")
                    }
                    config.grants.append(ControlLedger.Key(app: parts[1], sensor: sensor))
                }
            case ("reader", "max-connections"), ("reader", "max-connections-per-user"),
                ("reader", "max-fetches"), ("reader", "max-fetches-per-user"):
                guard let count = Int(value), count > 0, count <= 1_000_000 else {
                    throw ParseError(line: line, message: "\(key): '\(value)' must be a whole number from 1 to 1000000")
                }
                switch key {
                case "max-connections": config.reader.maxConnections = count
                case "max-connections-per-user": config.reader.maxConnectionsPerUser = count
                case "max-fetches": config.reader.maxFetches = count
                default: config.reader.maxFetchesPerUser = count
                }
            case ("reader", "fetch-idle-timeout"): config.reader.fetchIdleTimeout = try positiveDuration()
            case ("iio", "enabled"):
                switch value {
                case "yes", "true": config.iioEnabled = true
                case "no", "false": config.iioEnabled = false
                default: throw ParseError(line: line, message: "enabled must be yes or no")
                }
            case ("iio", "ignore"):
                config.ignoredDevices += value.split(separator: ",").map { $0.trimmingCharacters(in: " \t") }
            case ("iio", "remote"):
                config.remoteIIOContexts += value.split(separator: ",").map { $0.trimmingCharacters(in: " \t") }
            case ("ble", "transport"):
                guard let transport = BLESettings.transport(parsing: value) else {
                    throw ParseError(line: line, message: "transport: '\(value)' must be bluez, hci or emulated:/absolute/folder")
                }
                config.ble?.transport = transport
            case ("wearable", "address"), ("wearable", "name"):
                guard config.wearables[config.wearables.count - 1].match == nil else {
                    throw ParseError(line: line, message: "[\(section)] takes one address = or name =, not both")
                }
                if key == "address" {
                    guard let address = WearableConfiguration.address(parsing: value) else {
                        throw ParseError(
                            line: line, message: "address: '\(value)' is not a Bluetooth address like C0:FF:EE:00:00:01")
                    }
                    config.wearables[config.wearables.count - 1].match = .address(address)
                } else {
                    guard !value.isEmpty, ShellPattern.isValid(value) else {
                        throw ParseError(
                            line: line, message: "name: '\(value)' is not a shell pattern (an unclosed [ or a trailing \\)")
                    }
                    config.wearables[config.wearables.count - 1].match = .name(value)
                }
            case ("wearable", "streams"):
                var streams: [SRSensor] = []
                for name in value.split(separator: ",").map({ $0.trimmingCharacters(in: " \t") }) where !name.isEmpty {
                    guard let sensor = SensorCatalog.sensor(named: name), WearableConfiguration.streamSensors.contains(sensor)
                    else {
                        throw ParseError(
                            line: line,
                            message:
                                "streams: '\(name)' is not a wearable stream; use heartRate, onWristState, electrocardiogram, photoplethysmogram"
                        )
                    }
                    if !streams.contains(sensor) { streams.append(sensor) }
                }
                config.wearables[config.wearables.count - 1].streams = streams
            default:
                throw ParseError(line: line, message: "unknown key '\(key)'\(section.isEmpty ? "" : " in [\(section)]")")
            }
        }
        for (index, wearable) in config.wearables.enumerated() {
            guard config.ble != nil else {
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
                        "[wearable \(wearable.name)] needs streams = (heartRate, onWristState, electrocardiogram, photoplethysmogram)"
                )
            }
            if case .address = match, let other = config.wearables[..<index].first(where: { $0.match == match }) {
                throw ParseError(
                    line: wearable.line, message: "[wearable \(wearable.name)] has the address of [wearable \(other.name)]")
            }
        }
        if config.profile == .lab && !explicitHold { config.defaultRetention.hold = 0 }
        return config
    }

    /// "24h", "7d", "90s", "250ms", "0" → nanoseconds.
    public static func parseDuration(_ text: String) -> Int64? { DurationText.nanoseconds(text) }

    /// "20G", "512M", "4096" → bytes.
    public static func parseSize(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
        if let last = text.last, let factor = units[last] {
            guard let number = Int64(text.dropLast()), number >= 0 else { return nil }
            let (product, overflow) = number.multipliedReportingOverflow(by: factor)
            return overflow ? nil : product
        }
        return Int64(text).flatMap { $0 >= 0 ? $0 : nil }
    }
}

extension String {
    func trimmingCharacters(in set: String) -> String {
        var view = Substring(self)
        while let first = view.first, set.contains(first) { view = view.dropFirst() }
        while let last = view.last, set.contains(last) { view = view.dropLast() }
        return String(view)
    }
}

extension Substring {
    func trimmingCharacters(in set: String) -> String { String(self).trimmingCharacters(in: set) }
}
