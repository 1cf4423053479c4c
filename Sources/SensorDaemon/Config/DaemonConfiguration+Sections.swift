import SensorKitModel

/// The daemon's own sections: `profile =` at the top, `[store]`, `[sensor NAME]`, `[grant APP]`
/// and `[reader]` (docs/configuration.md). Drivers read theirs in their own files.
extension DaemonConfiguration: ConfigurationReader {
    static var sections: [ConfigurationSectionRule] {
        [
            .single(""), .single("store"), .single("reader"),
            ConfigurationSectionRule(kind: "sensor") { name, title in
                name.flatMap(SensorCatalog.sensor(named:)) == nil
                    ? "unknown sensor in [\(title)]; use names like accelerometer or rotationRate" : nil
            },
            .named("grant", missing: "[grant] needs an app bundle id"),
        ]
    }

    static func read(
        _ entry: ConfigurationFile.Entry, in section: ConfigurationFile.Section, into config: inout DaemonConfiguration
    ) throws(ParseError) -> Bool {
        let (key, value) = (entry.key, entry.value)
        switch (section.kind, key) {
        case ("", "profile"):
            guard let profile = Profile(rawValue: value) else { throw entry.error("profile must be study or lab") }
            config.profile = profile
        case ("store", "hold"): config.defaultRetention.hold = try entry.duration()
        case ("store", "window"): config.defaultRetention.window = try entry.positiveDuration()
        case ("store", "max-bytes"): config.maxStoreBytes = try size(entry)
        case ("store", "min-free"): config.minFreeBytes = try size(entry)
        case ("sensor", "hold"), ("sensor", "window"):
            // The header was checked: the name is a sensor.
            let sensor = SensorCatalog.sensor(named: section.name ?? "")!
            var retention = config.sensorRetention[sensor] ?? config.defaultRetention
            if key == "hold" { retention.hold = try entry.duration() } else { retention.window = try entry.positiveDuration() }
            config.sensorRetention[sensor] = retention
        case ("sensor", "rate"):
            let number = value.hasSuffix("Hz") ? String(value.dropLast(2)).trimmingCharacters(in: " \t") : value
            guard let hertz = Double(number), hertz.isFinite, hertz > 0, hertz <= 100_000 else {
                throw entry.error("rate: '\(value)' must be a rate in Hz above 0 and at most 100000 (e.g. 100 or 12.5)")
            }
            config.sensorRates[SensorCatalog.sensor(named: section.name ?? "")!] = hertz
        case ("grant", "sensors"):
            for name in entry.list where !name.isEmpty {
                guard let sensor = SensorCatalog.sensor(named: name) else {
                    throw entry.error("unknown sensor '\(name)' in [\(section.title)]")
                }
                config.grants.append(ControlLedger.Key(app: section.name ?? "", sensor: sensor))
            }
        case ("reader", "max-connections"), ("reader", "max-connections-per-user"),
            ("reader", "max-fetches"), ("reader", "max-fetches-per-user"):
            guard let count = Int(value), count > 0, count <= 1_000_000 else {
                throw entry.error("\(key): '\(value)' must be a whole number from 1 to 1000000")
            }
            switch key {
            case "max-connections": config.reader.maxConnections = count
            case "max-connections-per-user": config.reader.maxConnectionsPerUser = count
            case "max-fetches": config.reader.maxFetches = count
            default: config.reader.maxFetchesPerUser = count
            }
        case ("reader", "fetch-idle-timeout"): config.reader.fetchIdleTimeout = try entry.positiveDuration()
        default: return false
        }
        return true
    }

    /// The lab profile's hold is 0 unless `[store] hold =` says otherwise, wherever it is written.
    static func finish(_ file: ConfigurationFile, into config: inout DaemonConfiguration) throws(ParseError) {
        let explicitHold = file.sections.contains { $0.kind == "store" && $0.entries.contains { $0.key == "hold" } }
        if config.profile == .lab && !explicitHold { config.defaultRetention.hold = 0 }
    }

    private static func size(_ entry: ConfigurationFile.Entry) throws(ParseError) -> Int64 {
        guard let bytes = parseSize(entry.value) else {
            throw entry.error("\(entry.key): '\(entry.value)' is not a size (e.g. 20G, 512M)")
        }
        return bytes
    }
}
