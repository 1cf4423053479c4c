import SensorKitModel
import Testing

@testable import BLEBridge

@Suite struct HeartRateMeasurementTests {
    /// An H10 notification: flags 0x10 (uint8 BPM, contact not supported, RR present), 88 BPM,
    /// RR 0x0319 = 793/1024 s and 0x030F = 783/1024 s.
    @Test func uint8WithTwoRRIntervals() throws {
        let value = try HeartRateMeasurement(decoding: [0x10, 0x58, 0x19, 0x03, 0x0F, 0x03])
        #expect(value == HeartRateMeasurement(beatsPerMinute: 88, sensorContact: .notSupported, rrIntervals: [793, 783]))
        #expect(abs(HeartRateMeasurement.seconds(ofRRInterval: 793) - 0.774414) < 1e-6)
    }

    /// uint16 BPM, contact detected, energy expended 0x0102 kJ, three RR intervals kept in order.
    @Test func uint16WithEnergyAndContact() throws {
        let value = try HeartRateMeasurement(decoding: [0x1F, 0x2C, 0x01, 0x02, 0x01, 0x00, 0x04, 0x01, 0x04, 0x02, 0x04])
        #expect(value.beatsPerMinute == 300)
        #expect(value.sensorContact == .inContact)
        #expect(value.energyExpendedKilojoules == 0x0102)
        #expect(value.rrIntervals == [0x400, 0x401, 0x402])
    }

    @Test func contactValuesAndReservedBits() throws {
        #expect(try HeartRateMeasurement(decoding: [0x00, 60]).sensorContact.isInContact == nil)
        #expect(try HeartRateMeasurement(decoding: [0x02, 60]).sensorContact.isInContact == nil)
        #expect(try HeartRateMeasurement(decoding: [0x04, 60]).sensorContact.isInContact == false)
        #expect(try HeartRateMeasurement(decoding: [0x06, 60]).sensorContact.isInContact == true)
        // Reserved bits 5–7 are ignored, not rejected.
        #expect(try HeartRateMeasurement(decoding: [0xE0, 61]).beatsPerMinute == 61)
    }

    @Test func truncatedAndOddInput() {
        let full: [UInt8] = [0x19, 0x2C, 0x01, 0x02, 0x01, 0x00, 0x04]
        for length in 0..<5 {
            #expect(throws: HeartRateMeasurement.DecodeError.truncated) {
                try HeartRateMeasurement(decoding: Array(full.prefix(length)))
            }
        }
        #expect(throws: HeartRateMeasurement.DecodeError.partialRRInterval) {
            try HeartRateMeasurement(decoding: Array(full.prefix(6)))
        }
        #expect(throws: Never.self) { try HeartRateMeasurement(decoding: full) }
    }
}

@Suite struct HeartRateTimelineTests {
    @Test func wristStateRecordsFirstStateThenChangesOnly() {
        var timeline = HeartRateTimeline()
        #expect(timeline.receive([0x00, 70], at: 1).wristState == nil)  // not supported: no state
        #expect(timeline.receive([0x06, 70], at: 2).wristState == true)  // first state
        #expect(timeline.receive([0x06, 71], at: 3).wristState == nil)  // unchanged
        let off = timeline.receive([0x04, 0], at: 4)
        #expect(off.wristState == false)
        #expect(off.beat == nil)  // no contact: not a heart rate
        #expect(timeline.receive([0x02, 72], at: 5).wristState == nil)  // 1 = not supported: nothing
        #expect(timeline.receive([0x06, 72], at: 6).wristState == true)
        timeline.restart()
        #expect(timeline.receive([0x06, 72], at: 7).wristState == true)  // first state after a new stake
    }

    @Test func beatsKeepEveryRRIntervalAndCountMalformed() {
        var timeline = HeartRateTimeline()
        let output = timeline.receive([0x16, 88, 0x19, 0x03, 0x0F, 0x03, 0x10, 0x03], at: 10)
        #expect(
            output.beat
                == HeartRateTimeline.Beat(
                    receiveTime: 10, beatsPerMinute: 88, rrIntervals: [793, 783, 784], energyExpendedKilojoules: nil))
        #expect(timeline.receive([0x11], at: 11) == HeartRateTimeline.Output())
        #expect(timeline.malformed == 1)
    }
}

@Suite struct DeviceInformationTests {
    @Test func becomesTheWearablesOwnDevice() {
        var information = DeviceInformation()
        information.set(.manufacturerName, value: Array("Polar Electro Oy".utf8))
        information.set(.modelNumber, value: Array("H10".utf8) + [0])
        information.set(.firmwareRevision, value: Array("3.1.1".utf8))
        let device = information.device(address: "c0:ff:ee:00:00:10", advertisedName: "Polar H10 0A0B0C0D")
        #expect(device.identifier == "ble:C0:FF:EE:00:00:10")
        #expect(device.model == "H10")
        #expect(device.systemVersion == "3.1.1")
        #expect(device.systemName == "Polar Electro Oy")
        #expect(device.name == "Polar H10 0A0B0C0D")
    }

    @Test func bodySensorLocationAndBattery() {
        #expect(BodySensorLocation(decoding: [1])?.description == "chest")
        #expect(BodySensorLocation(decoding: [9])?.description == "reserved(9)")
        #expect(BodySensorLocation(decoding: []) == nil)
        #expect(BatteryLevel.percent(decoding: [87]) == 87)
        #expect(BatteryLevel.percent(decoding: [101]) == nil)
        #expect(BatteryLevel.percent(decoding: [50, 1]) == nil)
    }
}
