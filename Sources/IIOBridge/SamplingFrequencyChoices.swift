import SensorKitModel

/// The rates a device accepts: `sampling_frequency_available`, either a list (`0.78125 1.5625 25`)
/// or a range `[min step max]` (sysfs-bus-iio "*_available"; docs/iio.md §12.3). Pure.
public enum SamplingFrequencyChoices: Hashable, Sendable {
    case list([Double])
    case range(minimum: Double, step: Double, maximum: Double)

    /// Parses the attribute's text.
    public init(parsing text: some StringProtocol) throws(SysfsNumberError) {
        let trimmed = SysfsNumber.trim(text)
        if trimmed.hasPrefix("[") {
            guard trimmed.hasSuffix("]") else {
                throw SysfsNumberError(text: String(text), expected: "a range '[min step max]'")
            }
            let values = try SysfsNumber.decimals(trimmed.dropFirst().dropLast())
            guard values.count == 3, values[0] <= values[2], values[1] >= 0 else {
                throw SysfsNumberError(text: String(text), expected: "a range '[min step max]'")
            }
            self = .range(minimum: values[0], step: values[1], maximum: values[2])
        } else {
            self = .list(try SysfsNumber.decimals(trimmed).sorted())
        }
    }

    /// The lowest accepted rate at or above `floor`, or the highest if none is that fast.
    /// This is the fix-up for drivers that default to 0 Hz or ~1 Hz (iio-sensor-proxy rewrites
    /// anything below 10 Hz this way, docs/iio.md §12.3).
    public func lowest(atLeast floor: Double) -> Double? {
        switch self {
        case let .list(values):
            return values.first { $0 >= floor } ?? values.last
        case let .range(minimum, step, maximum):
            if floor <= minimum { return minimum }
            if floor >= maximum { return maximum }
            guard step > 0 else { return floor }
            let steps = ((floor - minimum) / step).rounded(.up)
            return min(maximum, minimum + steps * step)
        }
    }
}
