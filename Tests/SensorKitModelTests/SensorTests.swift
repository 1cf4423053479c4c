import Testing
@testable import SensorKitModel

@Suite struct SensorTests {
    @Test func rawValuesMatchApple() {
        #expect(SRSensor.ambientLightSensor.rawValue == "com.apple.SensorKit.als")
        #expect(SRSensor.rotationRate.rawValue == "com.apple.SensorKit.motion.gyroscope")
        #expect(SRSensor.electrocardiogram.rawValue == "com.apple.SensorKit.ECG")
        #expect(SRSensor.photoplethysmogram.rawValue == "com.apple.SensorKit.PPG")
        #expect(SRSensor.allKnown.count == 24)
        #expect(Set(SRSensor.allKnown).count == 24)
    }

    @Test func unknownSensorIsRepresentableAndUnsupported() {
        let nonsense = SRSensor(rawValue: "nonsense")
        #expect(nonsense.rawValue == "nonsense")
        #expect(SensorCatalog.descriptor(for: nonsense) == nil)
        #expect(!SensorCatalog.support(for: nonsense).isSupported)
        #expect(nonsense.deletionRecordSensor == nil)
    }
}
