/// Pressure and temperature in `CMRecordedPressureData`'s units from the processed IIO values of
/// one reading: `in_pressure*` is kPa and `in_temp*` milli-°C per the ABI (docs/iio.md §12.2). Pure.
public struct PressureReading: Hashable, Sendable {
    public var kilopascals: Double
    /// Nil when the chip has no temperature channel in use.
    public var celsius: Double?

    public init(kilopascals: Double, celsius: Double?) {
        self.kilopascals = kilopascals
        self.celsius = celsius
    }

    /// From processed values (after `ChannelCalibration` or read from `_input`).
    public init(iioPressure: Double, iioTemperature: Double?) {
        self.init(
            kilopascals: UnitConversion.kilopascals(fromIIOPressure: iioPressure),
            celsius: iioTemperature.map(UnitConversion.celsius(fromMilliCelsius:)))
    }
}
