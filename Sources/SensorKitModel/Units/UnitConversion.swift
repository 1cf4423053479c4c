/// Every unit conversion between what Linux sensors report and what SensorKit returns, in one
/// place (docs/sensorkit-mapping.md). Pure functions; constants are exact definitions, not measurements.
public enum UnitConversion {
    /// Standard gravity, m/s² per g (CGPM 1901, exact).
    public static let standardGravity = 9.80665

    /// IIO acceleration (m/s²) → CoreMotion g. No sign change: after the mount matrix, Linux and
    /// CoreMotion agree (upright portrait reads y ≈ −1 g); see docs/design-notes/0002-axes.md.
    public static func gravities(fromMetresPerSecondSquared value: Double) -> Double {
        value / standardGravity
    }

    /// CoreMotion g → m/s².
    public static func metresPerSecondSquared(fromGravities value: Double) -> Double {
        value * standardGravity
    }

    /// IIO temperature (`in_temp*`, milli-degrees Celsius per the ABI) → °C.
    public static func celsius(fromMilliCelsius value: Double) -> Double { value / 1000 }

    /// IIO pressure (`in_pressure*` is already kPa per the ABI) → kPa for CMRecordedPressureData.
    public static func kilopascals(fromIIOPressure value: Double) -> Double { value }

    /// Pascals → kPa (for sources that report Pa).
    public static func kilopascals(fromPascals value: Double) -> Double { value / 1000 }

    /// Polar PMD ECG samples are microvolts already; this names the identity so callers state it.
    public static func microvolts(fromPMDECG value: Int32) -> Double { Double(value) }

    /// Heart Rate Measurement RR-intervals count 1/1024 s → seconds.
    public static func seconds(fromRRInterval value: UInt16) -> Double { Double(value) / 1024 }

    /// Degrees per second → rad/s (for sources that report deg/s; IIO `in_anglvel` is rad/s already).
    public static func radiansPerSecond(fromDegreesPerSecond value: Double) -> Double {
        value * .pi / 180
    }

    /// An IIO channel's value in SI units: `(raw + offset) × scale` (sysfs ABI for `_raw`, `_offset`,
    /// `_scale`).
    public static func iioProcessed(raw: Int64, offset: Double, scale: Double) -> Double {
        (Double(raw) + offset) * scale
    }
}
