/// One ambient-light reading in `SRAmbientLightSample`'s terms. Pure.
///
/// Lux comes only from an illuminance channel (`in_illuminance*`, lux after scale, or
/// `_input`); intensity channels are unit-less (sysfs-bus-iio) and never become lux, so a chip
/// with only colour channels (APDS9960) has `lux == nil` — the caller decides whether to record
/// such a source. Chromaticity comes from red, green and blue where present (`Chromaticity`).
public struct LightReading: Hashable, Sendable {
    public var lux: Double?
    public var chromaticity: Chromaticity

    public init(lux: Double?, chromaticity: Chromaticity) {
        self.lux = lux
        self.chromaticity = chromaticity
    }

    /// From processed values of one reading, any of which may be absent.
    public init(illuminance: Double?, red: Double?, green: Double?, blue: Double?) {
        var chromaticity = Chromaticity.zero
        if let red, let green, let blue { chromaticity = .estimate(red: red, green: green, blue: blue) }
        self.init(lux: illuminance, chromaticity: chromaticity)
    }
}
