import SensorKitModel
import Testing

@Suite struct UnitConversionTests {
    @Test func accelerationToG() {
        #expect(UnitConversion.gravities(fromMetresPerSecondSquared: 9.80665) == 1)
        #expect(UnitConversion.gravities(fromMetresPerSecondSquared: -19.6133) == -2)
        #expect(UnitConversion.metresPerSecondSquared(fromGravities: 1) == 9.80665)
    }

    @Test func temperaturePressureECGAndRR() {
        #expect(UnitConversion.celsius(fromMilliCelsius: 23_450) == 23.45)
        #expect(UnitConversion.kilopascals(fromPascals: 101_325) == 101.325)
        #expect(UnitConversion.kilopascals(fromIIOPressure: 101.325) == 101.325)
        #expect(UnitConversion.microvolts(fromPMDECG: -1_234) == -1_234)
        #expect(UnitConversion.seconds(fromRRInterval: 1024) == 1)
        #expect(UnitConversion.seconds(fromRRInterval: 512) == 0.5)
        #expect(abs(UnitConversion.radiansPerSecond(fromDegreesPerSecond: 180) - .pi) < 1e-15)
    }

    @Test func iioProcessedAppliesOffsetBeforeScale() {
        // BMP280-style: (raw + offset) * scale, per the sysfs ABI.
        #expect(UnitConversion.iioProcessed(raw: 100, offset: -10, scale: 0.5) == 45)
        #expect(UnitConversion.iioProcessed(raw: 16_384, offset: 0, scale: 0.000598550) == 16_384 * 0.000598550)
    }
}
