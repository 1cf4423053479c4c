import SensorDaemon

/// The configuration file's text (sensorkitd.conf).
enum ConfigurationTarget {
    static func run(_ bytes: [UInt8]) {
        guard let config = try? DaemonConfiguration.parse(String(decoding: bytes, as: UTF8.self)) else { return }
        for sensor in config.sensorRetention.keys { _ = config.retention(for: sensor) }
    }
}
