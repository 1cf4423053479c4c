import SensorKitModel
import SensorSystem

/// A sysfs attribute of an IIO device that is missing, unreadable or garbage. It names the device
/// and the attribute, so the orchestration layer logs one clear line ("iio:device0:
/// scan_elements/in_accel_x_index: missing, skipping device") and skips or degrades the device;
/// nothing in the bridge logs it.
public struct IIOAttributeError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Problem: Hashable, Sendable {
        /// The attribute does not exist but is required.
        case missing
        /// `open`/`read`/`write` failed (EIO, ENODEV when unplugged, EBUSY while the buffer runs…).
        case unreadable(SystemError)
        /// The text is not what the ABI says it holds.
        case malformed(value: String, reason: String)
    }

    /// The device's directory name, e.g. `iio:device0`.
    public let device: String
    /// The attribute's path relative to the device directory, e.g. `scan_elements/in_accel_x_type`.
    public let attribute: String
    public let problem: Problem

    public init(device: String, attribute: String, problem: Problem) {
        self.device = device
        self.attribute = attribute
        self.problem = problem
    }

    public var description: String {
        switch problem {
        case .missing: "\(device): \(attribute): missing"
        case let .unreadable(error): "\(device): \(attribute): \(error)"
        case let .malformed(value, reason): "\(device): \(attribute): '\(value.debugDescriptionTrimmed)': \(reason)"
        }
    }
}
