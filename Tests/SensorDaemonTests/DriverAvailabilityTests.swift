import Foundation
import SensorDaemon
import SensorKit
import SensorKitModel
import SensorSimulation
import Testing

/// A sensor is recordable only when a driver of this daemon produces it: the others refuse stakes
/// and fetches with 106 and the reason, and leave no stake behind.
@Suite(.serialized) struct DriverAvailabilityTests {
    static let wearableApp = "com.example.wearable"

    func harness(config: String = "profile = lab\n") throws -> DaemonHarness {
        try DaemonHarness(config: config, sources: [GeneratedSource()]) { folder in
            try DaemonHarness.writeApp(
                Self.wearableApp, in: folder + "/apps.d",
                entitlements: ["heart-rate", "ecg", "motion-accelerometer"], users: ["root"])
        }
    }

    func stakes(_ harness: DaemonHarness) throws -> [WireStake] {
        let admin = try harness.connect(app: nil)
        defer { admin.close() }
        return admin.call(.stakes).stakes ?? []
    }

    @Test func aSensorWithoutADriverIsRefusedWithItsReasonAndNoStake() throws {
        let harness = try harness()
        defer { harness.stop() }
        try harness.grant([.heartRate, .electrocardiogram, .accelerometer], to: Self.wearableApp)
        let app = try harness.connect(app: Self.wearableApp)
        defer { app.close() }

        let refused = app.call(.startRecording) { $0.sensor = SRSensor.heartRate.rawValue }
        #expect(refused.error?.code == .unsupportedSensor)
        #expect(refused.error?.message == "no driver for heartRate: BLE is off (no [ble] section in the configuration)")
        // The Swift client hands the app an SRError carrying the reason.
        #expect(refused.error?.srError.code == .dataInaccessible)
        #expect(refused.error?.srError.message.contains("BLE is off (no [ble] section in the configuration)") == true)
        #expect(try stakes(harness).filter { $0.sensor == SRSensor.heartRate.rawValue }.isEmpty)

        let fetch = app.call(.fetch) {
            $0.sensor = SRSensor.electrocardiogram.rawValue; $0.from = 0; $0.to = harness.now
        }
        #expect(fetch.error?.code == .unsupportedSensor)
        #expect(fetch.error?.message.contains("no driver for electrocardiogram") == true)
        let devices = app.call(.fetchDevices) { $0.sensor = SRSensor.heartRate.rawValue }
        #expect(devices.error?.code == .unsupportedSensor)
        // Dropping a stake stays possible, whatever the drivers.
        #expect(app.call(.stopRecording) { $0.sensor = SRSensor.heartRate.rawValue }.error == nil)

        // An IIO sensor still records.
        #expect(app.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }.error == nil)
        #expect(try stakes(harness).map(\.sensor) == [SRSensor.accelerometer.rawValue])

        let sensors = try harness.connect(app: nil).call(.sensors).states ?? []
        let heart = sensors.first { $0.sensor == SRSensor.heartRate.rawValue }
        #expect(heart?.recordable == false)
        #expect(heart?.unrecordableReason == "no driver for heartRate: BLE is off (no [ble] section in the configuration)")
        #expect(sensors.first { $0.sensor == SRSensor.accelerometer.rawValue }?.recordable == true)
        let status = try harness.connect(app: nil).call(.daemonStatus).info ?? [:]
        #expect(status["unrecordable"]?.contains("\(SRSensor.heartRate.rawValue): no driver for heartRate: BLE is off") == true)
        #expect(status["drivers"] == "iio,keyboard,device-usage,visits")
    }

    @Test func aDriverDisabledByConfigurationSaysSo() throws {
        let harness = try harness(config: "profile = lab\n[iio]\nenabled = no\n")
        defer { harness.stop() }
        try harness.grant([.accelerometer], to: Self.wearableApp)
        let app = try harness.connect(app: Self.wearableApp)
        defer { app.close() }
        let refused = app.call(.startRecording) { $0.sensor = SRSensor.accelerometer.rawValue }
        #expect(refused.error?.code == .unsupportedSensor)
        #expect(refused.error?.message.contains("driver disabled by configuration ([iio] enabled = no)") == true)
        #expect(try stakes(harness).isEmpty)
    }
}
