import Foundation

/// CoreMotion's `CMAmbientPressureData`: one barometer reading with the sensor's temperature.
///
/// Whatever units the initialiser is given, the properties hold kilopascals and degrees Celsius,
/// the units Apple's getters build (docs/sensorkit-mapping.md), so `pressure.value` means the same on both.
public class CMAmbientPressureData: CMLogItem, @unchecked Sendable {
    // @unchecked: immutable; see CMLogItem.
    /// Pressure in kilopascals.
    public let pressure: Measurement<UnitPressure>
    /// The pressure sensor's temperature in degrees Celsius.
    public let temperature: Measurement<UnitTemperature>

    public init(
        pressure: Measurement<UnitPressure>, temperature: Measurement<UnitTemperature>, timestamp: TimeInterval
    ) {
        self.pressure = pressure.expressed(in: .kilopascals)
        self.temperature = temperature.expressed(in: .celsius)
        super.init(timestamp: timestamp)
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard super.isEqual(object), let other = object as? CMAmbientPressureData else { return false }
        return pressure == other.pressure && temperature == other.temperature
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(timestamp)
        hasher.combine(pressure.value)
        hasher.combine(temperature.value)
        return hasher.finalize()
    }
}

/// A barometer sample as SensorKit's `ambientPressure` sensor returns it (Apple's
/// `CMRecordedPressureData`), in batches: `result.sample as? [CMRecordedPressureData]`.
///
/// On Linux: IIO `in_pressure*` (kPa by the ABI) and `in_temp*` (milli-°C by the ABI).
public final class CMRecordedPressureData: CMAmbientPressureData, @unchecked Sendable {
    // @unchecked: immutable; see CMLogItem.
    /// The batch this sample was recorded in; increases with each new batch, so it can anchor
    /// later queries.
    public let identifier: UInt64
    /// The wall-clock time when the sample was recorded.
    public let startDate: Date

    public init(
        identifier: UInt64, pressure: Measurement<UnitPressure>, temperature: Measurement<UnitTemperature>,
        startDate: Date, timestamp: TimeInterval
    ) {
        self.identifier = identifier
        self.startDate = startDate
        super.init(pressure: pressure, temperature: temperature, timestamp: timestamp)
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard super.isEqual(object), let other = object as? CMRecordedPressureData else { return false }
        return identifier == other.identifier && startDate == other.startDate
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(super.hash)
        hasher.combine(identifier)
        hasher.combine(startDate)
        return hasher.finalize()
    }

    public override var description: String {
        "CMRecordedPressureData(\(pressure.value) kPa, \(temperature.value) °C, identifier: \(identifier), "
            + "startDate: \(startDate), timestamp: \(timestamp))"
    }
}
