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

@Suite struct CatalogTests {
    @Test func everyLinuxSourceOfDesignTable() {
        let supported = Set(SensorCatalog.all.filter(\.isSupportedOnLinux).map(\.sensor))
        #expect(
            supported == [
                .accelerometer, .rotationRate, .ambientLightSensor, .ambientPressure,
                .pedometerData, .heartRate, .onWristState, .electrocardiogram,
                .photoplethysmogram, .keyboardMetrics, .deviceUsageReport, .messagesUsageReport, .phoneUsageReport,
                .visits,
            ])
        #expect(SensorCatalog.all.count == SRSensor.allKnown.count)
    }

    @Test func unsupportedSensorsSayWhy() {
        guard case .unsupported(let reason) = SensorCatalog.support(for: .mediaEvents) else {
            Issue.record("mediaEvents has no Linux source"); return
        }
        #expect(reason.contains("mediaEvents"))
    }

    @Test func batchedSensorsMatchApple() {
        let batched = Set(SensorCatalog.all.filter(\.isBatched).map(\.sensor))
        #expect(batched == [.accelerometer, .rotationRate, .ambientPressure, .electrocardiogram, .photoplethysmogram])
    }

    @Test func entitlementsMapToSensors() {
        let allowed = SensorCatalog.sensors(allowedBy: ["motion-accelerometer", "ambient-light-sensor", "ECG", "bogus"])
        #expect(allowed == [.accelerometer, .ambientLightSensor, .electrocardiogram])
    }

    @Test func deletionRecordStreams() {
        let tombstones = SRSensor.accelerometer.deletionRecordSensor!
        #expect(tombstones.rawValue == "com.apple.SensorKit.motion.accelerometer.tombstones")
        #expect(tombstones.parentOfDeletionRecords == .accelerometer)
        #expect(SensorCatalog.support(for: tombstones) == .deletionRecords(of: .accelerometer))
        #expect(
            "com.apple.SensorKit.als".sr_sensorForDeletionRecordsFromSensor() == SRSensor.ambientLightSensor.deletionRecordSensor)
    }

    @Test func namesResolve() {
        #expect(SensorCatalog.sensor(named: "accelerometer") == .accelerometer)
        #expect(SensorCatalog.sensor(named: "com.apple.SensorKit.als") == .ambientLightSensor)
        #expect(SensorCatalog.sensor(named: "nonsense") == nil)
    }
}

@Suite struct ErrorTests {
    @Test func codesAndDomainMatchApple() {
        #expect(SRError.Code.allCases.map(\.rawValue) == [0, 1, 2, 3, 4])
        #expect(SRErrorDomain == "SRErrorDomain")
        let error: any Error = SRError(.invalidEntitlement, message: "app x is not entitled to accelerometer")
        #expect((error as? SRError)?.code == .invalidEntitlement)
        switch error {
        case SRError.invalidEntitlement: break
        default: Issue.record("pattern match on the code failed")
        }
    }

    @Test func enumsMatchApple() {
        #expect(SRAuthorizationStatus.allCases.map(\.rawValue) == [0, 1, 2])
        #expect(SRDeletionReason.allCases.map(\.rawValue) == [0, 1, 2, 3, 4])
    }

    @Test func fetchRequestStartsUnsetAndValidates() {
        let request = SRFetchRequest()
        #expect(request.from.rawValue.isNaN && request.to.rawValue.isNaN)
        #expect(request.invalidity != nil)
        request.from = SRAbsoluteTime(10)
        request.to = SRAbsoluteTime(5)
        #expect(request.invalidity?.contains("inverted") == true)
        request.to = SRAbsoluteTime(10)
        #expect(request.invalidity == nil)
    }
}
