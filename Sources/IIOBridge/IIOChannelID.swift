/// A channel named the way sysfs names its attributes: `{in|out}_<type>[<index>][_<modifier>]`,
/// e.g. `in_accel_x`, `in_illuminance0`, `in_intensity_red`, `in_temp_ambient` (kernel
/// `__iio_device_attr_init`; docs/iio.md §12.1). Pure.
public struct IIOChannelID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public enum Direction: String, Hashable, Sendable {
        case input = "in", output = "out"
    }

    public let direction: Direction
    /// The channel type (`accel`, `anglvel`, `illuminance`, `intensity`, `pressure`, `temp`, …).
    public let type: String
    /// The channel number (`in_illuminance0` → 0), for indexed channels.
    public let index: Int?
    /// The modifier (`x`, `red`, `clear`, `ambient`, `linear_x`, …), for modified channels.
    public let modifier: String?
    /// The attribute prefix, e.g. `in_accel_x`; `<prefix>_raw` is the value attribute.
    public let prefix: String

    /// Parses an attribute prefix; nil for names this bridge does not model (unknown types,
    /// differential channels such as `in_voltage0-voltage1`).
    public init?(prefix: String) {
        let direction: Direction
        let rest: Substring
        if prefix.hasPrefix("in_") {
            direction = .input
            rest = prefix.dropFirst(3)
        } else if prefix.hasPrefix("out_") {
            direction = .output
            rest = prefix.dropFirst(4)
        } else {
            return nil
        }
        for type in Self.knownTypes where rest.hasPrefix(type) {
            var tail = rest.dropFirst(type.count)
            let digits = tail.prefix(while: { $0.isASCII && $0.isNumber })
            guard tail.isEmpty || tail.first == "_" || !digits.isEmpty else { continue }
            var index: Int?
            if !digits.isEmpty {
                guard let value = Int(digits) else { return nil }
                index = value
                tail = tail.dropFirst(digits.count)
            }
            var modifier: String?
            if !tail.isEmpty {
                guard tail.first == "_", tail.count > 1 else { return nil }
                modifier = String(tail.dropFirst())
            }
            self.direction = direction
            self.type = type
            self.index = index
            self.modifier = modifier
            self.prefix = prefix
            return
        }
        return nil
    }

    /// A channel from its parts (for tests and fixtures).
    public init(_ direction: Direction = .input, type: String, index: Int? = nil, modifier: String? = nil) {
        let name = direction.rawValue + "_" + type + (index.map(String.init) ?? "") + (modifier.map { "_" + $0 } ?? "")
        self.direction = direction
        self.type = type
        self.index = index
        self.modifier = modifier
        self.prefix = name
    }

    public var description: String { prefix }

    public static func < (a: IIOChannelID, b: IIOChannelID) -> Bool { a.prefix < b.prefix }

    /// Where an `info` attribute (`scale`, `offset`, …) of this channel may live, in the order a
    /// reader must try them: separate (`in_accel_x_scale`), shared by type (`in_accel_scale`),
    /// shared by direction (`in_scale`), shared by all (`scale`). Research §1.1.
    public func attributeNames(info: String) -> [String] {
        [prefix + "_" + info] + Self.sharedAttributeNames(direction: direction, type: type, info: info)
    }

    /// The shared names only: by type, by direction, by all. Mount matrices are never separate.
    public static func sharedAttributeNames(direction: Direction = .input, type: String, info: String) -> [String] {
        ["\(direction.rawValue)_\(type)_\(info)", "\(direction.rawValue)_\(info)", info]
    }

    /// Channel types of the kernel's `iio_chan_type_name_spec[]`, longest first so `anglvel` wins
    /// over `angl` and `intensity` over `index`.
    static let knownTypes: [String] = [
        "voltage", "current", "power", "accel", "anglvel", "magn", "illuminance", "intensity", "proximity",
        "temp", "incli", "rot", "angl", "timestamp", "capacitance", "altvoltage", "cct", "pressure",
        "humidityrelative", "activity", "steps", "energy", "distance", "velocity", "concentration",
        "resistance", "ph", "uvindex", "electricalconductivity", "count", "index", "gravity",
        "positionrelative", "phase", "massconcentration", "deltaangl", "deltavelocity", "colortemp",
        "chromaticity", "attention",
    ].sorted { $0.count > $1.count }
}
