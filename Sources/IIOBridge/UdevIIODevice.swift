import Dispatch
import SensorKitModel
import SensorSystem
import Udev

/// An IIO device as udev reports it.
public typealias UdevIIODevice = UdevDevice
/// udev discovery of IIO devices: the `iio` subsystem's `iio:deviceN` (triggers share the
/// subsystem and are left out).
public typealias UdevIIOMonitor = UdevMonitor

extension UdevMonitor {
    /// A monitor of IIO devices.
    public convenience init(queue: DispatchQueue) throws(SystemError) {
        try self.init(subsystem: "iio", queue: queue) { $0.hasPrefix("iio:device") }
    }
}

extension UdevDevice {
    /// hwdb `ACCEL_MOUNT_MATRIX`, parsed; nil when absent. It takes precedence over sysfs.
    public func accelMountMatrix() throws(MountMatrixError) -> MountMatrix? {
        guard let text = properties["ACCEL_MOUNT_MATRIX"] else { return nil }
        return try MountMatrix(parsing: text)
    }

    /// hwdb `ACCEL_LOCATION`: `display` (the default) or `base` on 2-in-1s.
    public var accelLocation: String? { properties["ACCEL_LOCATION"] }
}
