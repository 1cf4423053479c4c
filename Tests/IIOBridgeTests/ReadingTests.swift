import SensorKitModel
import Testing

@testable import IIOBridge

@Suite struct ReadingTests {
    static func close(_ a: Chromaticity, _ x: Double, _ y: Double) -> Bool {
        abs(a.x - x) < 0.0005 && abs(a.y - y) < 0.0005
    }

    @Test func chromaticityOfEqualCountsIsD65White() {
        #expect(Self.close(.estimate(red: 1, green: 1, blue: 1), 0.3127, 0.3290))
        #expect(Self.close(.estimate(red: 4000, green: 4000, blue: 4000), 0.3127, 0.3290))
    }

    @Test func chromaticityOfEachPrimaryIsTheSRGBPrimary() {
        #expect(Self.close(.estimate(red: 1, green: 0, blue: 0), 0.64, 0.33))
        #expect(Self.close(.estimate(red: 0, green: 1, blue: 0), 0.30, 0.60))
        #expect(Self.close(.estimate(red: 0, green: 0, blue: 1), 0.15, 0.06))
    }

    @Test func warmLightIsRedderThanWhite() {
        let warm = Chromaticity.estimate(red: 900, green: 600, blue: 250)
        #expect(warm.x > 0.3127 + 0.05)
    }

    @Test func underivableChromaticityIsZero() {
        #expect(Chromaticity.estimate(red: 0, green: 0, blue: 0) == .zero)
        #expect(Chromaticity.estimate(red: -1, green: 5, blue: 5) == .zero)
        #expect(Chromaticity.estimate(red: .nan, green: 5, blue: 5) == .zero)
        #expect(LightReading(illuminance: 10, red: 5, green: nil, blue: 5).chromaticity == .zero)
    }

    @Test func luxOnlyFromIlluminance() {
        #expect(LightReading(illuminance: 250, red: nil, green: nil, blue: nil).lux == 250)
        #expect(LightReading(illuminance: nil, red: 5, green: 5, blue: 5).lux == nil)
    }

    @Test func pressureIsKilopascalsAndTemperatureCelsius() {
        #expect(
            PressureReading(iioPressure: 101.325, iioTemperature: 23450) == PressureReading(kilopascals: 101.325, celsius: 23.45))
        #expect(PressureReading(iioPressure: 99.5, iioTemperature: nil).celsius == nil)
    }

    @Test func stepsPerInterval() {
        #expect(StepCounting.steps(previous: nil, current: 1532) == 0)
        #expect(StepCounting.steps(previous: 1532, current: 1532) == 0)
        #expect(StepCounting.steps(previous: 1532, current: 1600) == 68)
        #expect(StepCounting.steps(previous: 1600, current: 12) == 12)  // counter reset
    }

    /// The counter is the device's number: a glitch reading `Int64.min` followed by a count made
    /// `current − previous` overflow and trap. A negative reading is taken as a reset.
    @Test func extremeCounterReadingsAreResetsNotTraps() {
        #expect(StepCounting.steps(previous: .min, current: 5) == 5)
        #expect(StepCounting.steps(previous: -1, current: .max) == .max)
        #expect(StepCounting.steps(previous: .max, current: .min) == 0)
    }
}
