import SensorKitModel

/// `sensorkitd.conf` (docs/configuration.md): INI-style sections of `key = value` lines.
///
///     profile = lab                      # "study" (default): 24 h hold; "lab": hold 0
///     [store]   hold = 24h  window = 7d  max-bytes = 20G  min-free = 1G
///     [sensor accelerometer]   hold = 0  window = 3d  rate = 100
///     [grant com.example.rig]  sensors = accelerometer, rotationRate
///     [reader]  max-connections = 800  max-connections-per-user = 100  max-fetches = 100  max-fetches-per-user = 12
///               fetch-idle-timeout = 60s
///
/// The file's shape (sections, keys, lines, repeats) is `ConfigurationFile`; the daemon's own
/// sections are read in `DaemonConfiguration+Sections.swift`, each driver's (`[iio]`, `[ble]`,
/// `[wearable NAME]`) in its driver file (`Drivers/<X>Driver.swift`, `ConfiguredDriver`).
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
    /// `[reader]`: connection limits (nil: derived from the open-file limit, `ReaderLimits`) and
    /// how long a fetch may wait for its client (docs/protocol.md §6.2).
    public var reader = ReaderLimits.Settings()
    /// Each driver's settings, read from its own sections by its driver file (`ConfiguredDriver`).
    public var drivers = DriverSettings()

    public init() {}

    public func retention(for sensor: SRSensor) -> Retention {
        sensorRetention[sensor] ?? defaultRetention
    }

    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "line \(line): \(message)" }
    }

    /// Everything that reads a part of the file: the daemon's own settings, then each driver of
    /// the table (`DriverTable.kinds`).
    static var readers: [any ConfigurationReader.Type] { [DaemonConfiguration.self] + DriverTable.kinds }

    public static func parse(_ text: String) throws(ParseError) -> DaemonConfiguration {
        let readers = Self.readers
        let file = try ConfigurationFile.read(text, rules: readers.flatMap { $0.sections })
        var config = DaemonConfiguration()
        for section in file.sections {
            let owners = readers.filter { $0.sections.contains { $0.kind == section.kind } }
            for owner in owners { try owner.begin(section, into: &config) }
            for entry in section.entries {
                var known = false
                for owner in owners where !known { known = try owner.read(entry, in: section, into: &config) }
                guard known else { throw entry.error("unknown key '\(entry.key)'\(section.whereabouts)") }
            }
        }
        for reader in readers { try reader.finish(file, into: &config) }
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
