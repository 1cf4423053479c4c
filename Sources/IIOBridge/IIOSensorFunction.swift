import SensorKitModel

/// What one IIO device can record, found from its channels — never from iio-sensor-proxy's udev
/// tags, which exist only where that package is installed (docs/iio.md §12.7). One chip may offer
/// several functions: a BMI160 is an accelerometer and a gyroscope, a BMP280 measures pressure
/// with temperature, a BMA400 is an accelerometer and a step counter.
public struct IIOSensorFunction: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        case accelerometer, gyroscope, ambientLight, pressure, stepCounter

        /// The SensorKit sensor this function feeds (docs/sensorkit-mapping.md).
        public var sensor: SRSensor {
            switch self {
            case .accelerometer: .accelerometer
            case .gyroscope: .rotationRate
            case .ambientLight: .ambientLightSensor
            case .pressure: .ambientPressure
            case .stepCounter: .pedometerData
            }
        }
    }

    /// How samples are taken: through the buffer (`/dev/iio:deviceN`, kernel timestamps) or by
    /// reading sysfs on a timer (stamped at read).
    public enum Capture: String, Hashable, Sendable {
        case buffered, polled
    }

    /// The part a channel plays in a function.
    public enum Role: String, Hashable, Sendable, CaseIterable {
        case x, y, z, illuminance, red, green, blue, clear, pressure, temperature, steps
    }

    public let kind: Kind
    public let capture: Capture
    /// The channels used, by role; absent optional roles are missing (no `clear`, no temperature).
    public let channels: [Role: IIOChannelID]

    public init(kind: Kind, capture: Capture, channels: [Role: IIOChannelID]) {
        self.kind = kind
        self.capture = capture
        self.channels = channels
    }

    /// The channels in role order (x, y, z; illuminance, red, green, blue, clear; pressure,
    /// temperature; steps): the scan elements to enable, or the attributes to poll.
    public var orderedChannels: [IIOChannelID] { Role.allCases.compactMap { channels[$0] } }

    public var description: String {
        "\(kind.rawValue) (\(capture.rawValue): \(orderedChannels.map(\.prefix).joined(separator: ", ")))"
    }

    /// The part name of a HID sensor hub's ambient light sensor (hid-sensor-als).
    public static let hidLightSensor = "als"

    /// Every function a device offers, in `Kind` order. Buffered wherever every required channel
    /// has a scan element and the device has a buffer; polled where they can all be read from
    /// sysfs; absent otherwise. Step counters are always polled (`scan_index = -1` in every
    /// mainline driver, docs/iio.md §12.2). Pure.
    public static func functions(of device: IIODeviceDescription) -> [IIOSensorFunction] {
        Kind.allCases.compactMap { function(kind: $0, of: device) }
    }

    /// The function of one kind, if the device offers it.
    public static func function(kind: Kind, of device: IIODeviceDescription) -> IIOSensorFunction? {
        let input = device.channels.filter { $0.id.direction == .input }
        func find(_ type: String, _ modifiers: [String?]) -> IIOChannel? {
            for modifier in modifiers {
                let matches = input.filter { $0.id.type == type && $0.id.modifier == modifier }
                if let first = matches.min(by: { ($0.id.index ?? -1) < ($1.id.index ?? -1) }) { return first }
            }
            return nil
        }

        var required: [Role: IIOChannel] = [:]
        var optional: [Role: IIOChannel] = [:]
        switch kind {
        case .accelerometer, .gyroscope:
            let type = kind == .accelerometer ? "accel" : "anglvel"
            guard let x = find(type, ["x"]), let y = find(type, ["y"]), let z = find(type, ["z"]) else { return nil }
            required = [.x: x, .y: y, .z: z]
        case .ambientLight:
            // Lux only from illuminance channels (docs/iio.md §12.2); `_ir` and `_both` are not lux —
            // except on a HID sensor hub's ALS (`als`), whose older drivers report the hub's
            // illuminance usage (lux) only as `in_intensity_both`.
            let illuminance =
                find("illuminance", [nil, "clear"]) ?? (device.name == hidLightSensor ? find("intensity", ["both"]) : nil)
            let colour: [Role: IIOChannel] = [
                .red: find("intensity", ["red"]), .green: find("intensity", ["green"]),
                .blue: find("intensity", ["blue"]), .clear: find("intensity", ["clear"]),
            ].compactMapValues { $0 }
            let hasRGB = colour[.red] != nil && colour[.green] != nil && colour[.blue] != nil
            if let illuminance {
                required = [.illuminance: illuminance]
                optional = colour
            } else if hasRGB {
                required = colour.filter { $0.key != .clear }
                optional = colour.filter { $0.key == .clear }
            } else {
                return nil
            }
        case .pressure:
            guard let pressure = find("pressure", [nil]) else { return nil }
            required = [.pressure: pressure]
            if let temperature = find("temp", [nil, "ambient"]) { optional = [.temperature: temperature] }
        case .stepCounter:
            guard let steps = find("steps", [nil]), steps.hasInput else { return nil }
            return IIOSensorFunction(kind: kind, capture: .polled, channels: [.steps: steps.id])
        }

        if device.bufferDirectory != nil, required.values.allSatisfy({ $0.scanElement != nil }) {
            let extra = optional.filter { $0.value.scanElement != nil }
            return IIOSensorFunction(
                kind: kind, capture: .buffered,
                channels: required.merging(extra) { a, _ in a }.mapValues(\.id))
        }
        if required.values.allSatisfy(\.isPollable) {
            let extra = optional.filter { $0.value.isPollable }
            return IIOSensorFunction(
                kind: kind, capture: .polled,
                channels: required.merging(extra) { a, _ in a }.mapValues(\.id))
        }
        return nil
    }
}
