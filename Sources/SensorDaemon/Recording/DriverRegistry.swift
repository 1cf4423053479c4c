import SensorKitModel

/// Which sensors a driver of this build and configuration can produce, and for every other sensor
/// why not. The daemon fills it from its drivers (docs/architecture.md); `SensorCatalog` only says
/// what kind of Linux source a sensor has. A sensor is recordable only when a driver here names it.
public struct DriverRegistry: Hashable, Sendable {
    /// One driver: the sensors it produces, or why it does not run.
    public struct Driver: Hashable, Sendable {
        public var name: String
        public var source: SensorDescriptor.LinuxSource
        public var sensors: Set<SRSensor>
        /// Set when the configuration turned the driver off: the key that did it.
        public var disabledBy: String?

        public init(name: String, source: SensorDescriptor.LinuxSource, sensors: Set<SRSensor>, disabledBy: String? = nil) {
            self.name = name
            self.source = source
            self.sensors = sensors
            self.disabledBy = disabledBy
        }
    }

    public enum Availability: Hashable, Sendable {
        case available(driver: String)
        case unavailable(reason: String)

        public var reason: String? {
            if case .unavailable(let reason) = self { return reason }
            return nil
        }
    }

    public let drivers: [Driver]

    public init(_ drivers: [Driver]) { self.drivers = drivers }

    /// Whether a driver records `sensor` (a deletion-record stream follows its parent), and if
    /// not, a reason a person can act on.
    public func availability(of sensor: SRSensor) -> Availability {
        let recorded = sensor.parentOfDeletionRecords ?? sensor
        let name = SensorCatalog.descriptor(for: recorded)?.name ?? recorded.rawValue
        if let driver = drivers.first(where: { $0.sensors.contains(recorded) && $0.disabledBy == nil }) {
            return .available(driver: driver.name)
        }
        if let driver = drivers.first(where: { $0.sensors.contains(recorded) }), let key = driver.disabledBy {
            return .unavailable(reason: "\(name): \(driver.name) driver disabled by configuration (\(key))")
        }
        switch SensorCatalog.descriptor(for: recorded)?.source ?? SensorDescriptor.LinuxSource.none {
        case .bluetoothLE:
            if drivers.contains(where: { $0.source == .bluetoothLE }) {
                return .unavailable(reason: "no [wearable] section records \(name) (add it to a wearable's streams =)")
            }
            return .unavailable(reason: "no driver for \(name): BLE is off (no [ble] section in the configuration)")
        case .iio:
            return .unavailable(reason: "no driver for \(name) in this build (IIO driver not present)")
        case .evdev:
            return .unavailable(reason: "no driver for \(name) in this build (keyboard driver not present)")
        case .session:
            return .unavailable(reason: "no driver for \(name) in this build (device-usage driver not present)")
        case .modemManager:
            return .unavailable(
                reason: "no driver for \(name): the modem driver is off (no [modem] section in the configuration)")
        case SensorDescriptor.LinuxSource.none:
            if case .unsupported(let reason) = SensorCatalog.support(for: sensor) { return .unavailable(reason: reason) }
            return .unavailable(reason: "no driver for \(name) in this build")
        }
    }
}
