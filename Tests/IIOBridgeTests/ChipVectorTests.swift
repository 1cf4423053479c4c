import SensorKitModel
import Testing

@testable import IIOBridge

/// Each common chip end to end through the pure and sysfs layers: its fake sysfs tree is
/// described, classified, laid out, a scan vector decoded and converted to SensorKit units.
@Suite struct ChipVectorTests {
    /// One fresh tree per test (Swift Testing makes a suite instance per test); it lives as long
    /// as the test runs.
    let tree = FakeSysfsTree()

    func describe(_ attributes: ChipFixtures.Attributes) throws -> (FakeSysfsTree, IIOSysfsDevice, IIODeviceDescription) {
        let device = tree.addDevice(0, attributes)
        return (tree, device, try device.describe())
    }

    static func function(_ kind: IIOSensorFunction.Kind, _ description: IIODeviceDescription) throws -> IIOSensorFunction {
        try #require(IIOSensorFunction.functions(of: description).first { $0.kind == kind })
    }

    static func s16(_ values: Int16...) -> [UInt8] {
        values.flatMap { v in [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
    }

    static func s64(_ value: Int64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }

    @Test func bmi160AccelAndGyroShareA24ByteScan() throws {
        let (_, _, description) = try describe(ChipFixtures.bmi160)
        #expect(description.name == "bmi160")
        #expect(description.timestampClock == .realtime)
        #expect(description.bufferDirectory == "buffer")
        #expect(description.scanElementDirectory == "scan_elements")
        #expect(description.currentTrigger == nil)
        let kinds = IIOSensorFunction.functions(of: description).map(\.kind)
        #expect(kinds == [.accelerometer, .gyroscope])
        let accel = try Self.function(.accelerometer, description)
        let gyro = try Self.function(.gyroscope, description)
        #expect(accel.capture == .buffered && gyro.capture == .buffered)
        #expect(accel.orderedChannels.map(\.prefix) == ["in_accel_x", "in_accel_y", "in_accel_z"])
        #expect(description.channel("in_accel_x")?.scale == 0.000598)
        #expect(description.channel("in_accel_x")?.scaleAttribute == "in_accel_scale")
        #expect(description.channel("in_anglvel_z")?.scale == 0.001065)

        // Both functions recorded: gyro (index 4–6) precedes accel (7–9) in the scan.
        let layout = try description.scanLayout(enabling: accel.orderedChannels + gyro.orderedChannels)
        #expect(layout.scanBytes == 24)
        #expect(
            layout.slots.map(\.channel) == [
                "in_anglvel_x", "in_anglvel_y", "in_anglvel_z",
                "in_accel_x", "in_accel_y", "in_accel_z", "in_timestamp",
            ])
        #expect(layout.timestamp?.offset == 16)
        let bytes = Self.s16(3, -2, 1, 12, -16392, 40) + [0, 0, 0, 0] + Self.s64(1_700_000_000_123_456_789)
        let scan = ScanDecoder(layout: layout).decode(bytes)
        #expect(scan.values == [3, -2, 1, 12, -16392, 40])
        #expect(scan.timestamp == 1_700_000_000_123_456_789)

        let conversion = MotionConversion(function: accel, device: description, udevMountMatrix: nil)
        #expect(conversion.matrixSource == .sysfs(attribute: "in_mount_matrix"))
        let first = try #require(layout.slot(for: "in_accel_x")?.firstValue)
        let g = conversion.convert(rawX: scan.values[first], rawY: scan.values[first + 1], rawZ: scan.values[first + 2])
        #expect(abs(g.y - (-16392 * 0.000598 / 9.80665)) < 1e-12)
        #expect(abs(g.y + 1) < 0.001)  // upright portrait
        let rate = MotionConversion(function: gyro, device: description, udevMountMatrix: nil).convert(rawX: 3, rawY: -2, rawZ: 1)
        #expect(rate == SIMD3(3 * 0.001065, -2 * 0.001065, 1 * 0.001065))

        // Accelerometer alone: 6 bytes, padding to 8, timestamp: 16 bytes.
        #expect(try description.scanLayout(enabling: accel.orderedChannels).scanBytes == 16)
    }

    @Test func lsm6dsxUsesItsSharedByAllMountMatrix() throws {
        let (tree, device, description) = try describe(ChipFixtures.lsm6dsxAccel)
        #expect(description.samplingFrequency == 104)
        #expect(description.samplingFrequencyChoices == .list([12.5, 26, 52, 104, 208, 416]))
        let accel = try Self.function(.accelerometer, description)
        let layout = try description.scanLayout(enabling: accel.orderedChannels)
        #expect(layout.scanBytes == 16)
        let scan = ScanDecoder(layout: layout).decode(Self.s16(-16, 8, -16380, 0) + Self.s64(42))
        let conversion = MotionConversion(function: accel, device: description, udevMountMatrix: nil)
        #expect(conversion.matrixSource == .sysfs(attribute: "mount_matrix"))
        let g = conversion.convert(rawX: scan.values[0], rawY: scan.values[1], rawZ: scan.values[2])
        // rows "0, 1, 0; -1, 0, 0; 0, 0, 1": device x = chip y, device y = −chip x.
        #expect(abs(g.x - 8 * 0.000598 / 9.80665) < 1e-12)
        #expect(abs(g.y - 16 * 0.000598 / 9.80665) < 1e-12)
        #expect(abs(g.z + 1) < 0.002)  // face up

        // A kernel without the legacy names: scan elements come from buffer0/.
        tree.remove(0, "scan_elements")
        tree.remove(0, "buffer")
        let merged = try device.describe()
        #expect(merged.scanElementDirectory == "buffer0")
        #expect(merged.bufferDirectory == "buffer0")
        #expect(try merged.scanLayout(enabling: accel.orderedChannels) == layout)
    }

    @Test(arguments: ["le:s16/32", "le:s32/32"])
    func hidSensorHubAccel(storage: String) throws {
        let (_, _, description) = try describe(ChipFixtures.hidAccel(storage: storage))
        #expect(description.currentTrigger == "accel_3d-dev0")
        let accel = try Self.function(.accelerometer, description)
        #expect(accel.capture == .buffered)
        let layout = try description.scanLayout(enabling: accel.orderedChannels)
        #expect(layout.slots.map(\.offset) == [0, 4, 8, 16])
        #expect(layout.scanBytes == 24)
        // -1000 in the low half of a 32-bit word; the high half is sign fill (s32) or 0xFFFF (s16/32 masks it).
        var bytes = [UInt8](repeating: 0, count: 24)
        bytes[4...7] = [0x18, 0xFC, 0xFF, 0xFF]
        bytes[16...23] = ArraySlice(Self.s64(5_000_000_000))
        let scan = ScanDecoder(layout: layout).decode(bytes)
        #expect(scan.values == [0, -1000, 0])
        #expect(scan.timestamp == 5_000_000_000)
        let g = MotionConversion(function: accel, device: description, udevMountMatrix: nil)
            .convert(rawX: scan.values[0], rawY: scan.values[1], rawZ: scan.values[2])
        #expect(abs(g.y + 1) < 1e-12)
    }

    @Test func adxl345ThirteenBitsWithoutTimestamp() throws {
        let (_, _, description) = try describe(ChipFixtures.adxl345)
        #expect(description.timestampElement == nil)
        let accel = try Self.function(.accelerometer, description)
        let layout = try description.scanLayout(enabling: accel.orderedChannels)
        #expect(layout.scanBytes == 6)
        #expect(layout.timestamp == nil)
        // 0x1F00 is −256 in 13 bits; bits 13–15 hold garbage that must be masked.
        let scan = ScanDecoder(layout: layout).decode([0xFE, 0xFF, 0x00, 0xFF, 0x03, 0x00])
        #expect(scan.values == [-2, -256, 3])
        #expect(scan.timestamp == nil)
    }

    @Test func bmp280PressureWithTemperature() throws {
        let (_, device, description) = try describe(ChipFixtures.bmp280)
        let pressure = try Self.function(.pressure, description)
        #expect(pressure.capture == .buffered)
        #expect(pressure.channels == [.pressure: IIOChannelID(type: "pressure"), .temperature: IIOChannelID(type: "temp")])
        let layout = try description.scanLayout(enabling: pressure.orderedChannels)
        #expect(layout.slots.map(\.offset) == [0, 4, 8])
        #expect(layout.scanBytes == 16)
        let bytes: [UInt8] = [0x00, 0xC8, 0x8A, 0x01, 0x9A, 0x09, 0x00, 0x00] + Self.s64(7)
        let scan = ScanDecoder(layout: layout).decode(bytes)
        #expect(scan.values == [25_872_384, 2458])
        let reading = PressureReading(
            iioPressure: try #require(description.channel("in_pressure")).calibration.value(raw: scan.values[0]),
            iioTemperature: try #require(description.channel("in_temp")).calibration.value(raw: scan.values[1]))
        #expect(abs(reading.kilopascals - 25_872_384 * 0.000003906) < 1e-9)
        #expect(reading.celsius == 24.58)

        // Polled, the processed attributes: kPa and milli-°C.
        let polled = PressureReading(
            iioPressure: try device.readValue(try #require(description.channel("in_pressure"))),
            iioTemperature: try device.readValue(try #require(description.channel("in_temp"))))
        #expect(polled == PressureReading(kilopascals: 101.325, celsius: 23.45))
    }

    @Test func tsl2591LuxFromIlluminanceOnly() throws {
        let (_, device, description) = try describe(ChipFixtures.tsl2591)
        #expect(description.bufferDirectory == nil)
        let light = try Self.function(.ambientLight, description)
        #expect(light.capture == .polled)
        #expect(light.channels == [.illuminance: IIOChannelID(type: "illuminance")])
        let reading = LightReading(
            illuminance: try device.readValue(try #require(description.channel("in_illuminance"))),
            red: nil, green: nil, blue: nil)
        #expect(reading == LightReading(lux: 123.456, chromaticity: .zero))
    }

    @Test func apds9960ColourWithoutLuxIsPolledDespiteItsGestureBuffer() throws {
        let (_, device, description) = try describe(ChipFixtures.apds9960)
        #expect(description.canBuffer)
        let light = try Self.function(.ambientLight, description)
        #expect(light.capture == .polled)
        #expect(light.channels[.illuminance] == nil)
        #expect(Set(light.channels.keys) == [.red, .green, .blue, .clear])
        #expect(description.channel("in_intensity_red")?.scale == 4)
        func value(_ role: IIOSensorFunction.Role) throws -> Double {
            let id = try #require(light.channels[role])
            return try device.readValue(try #require(description.channel(id.prefix)))
        }
        let reading = LightReading(illuminance: nil, red: try value(.red), green: try value(.green), blue: try value(.blue))
        #expect(reading.lux == nil)
        #expect(abs(reading.chromaticity.x - 0.3127) < 0.0001)
        #expect(abs(reading.chromaticity.y - 0.3290) < 0.0001)
    }

    @Test func acpiALSBufferedIlluminance() throws {
        let (_, device, description) = try describe(ChipFixtures.acpiALS)
        #expect(description.currentTrigger == "acpi-als-dev0")
        let light = try Self.function(.ambientLight, description)
        #expect(light.capture == .buffered)
        let layout = try description.scanLayout(enabling: light.orderedChannels)
        #expect(layout.slots.map(\.offset) == [0, 8])
        #expect(layout.scanBytes == 16)
        let scan = ScanDecoder(layout: layout).decode([0x38, 0x01, 0, 0, 0xEE, 0xEE, 0xEE, 0xEE] + Self.s64(9))
        #expect(scan.values == [312])
        #expect(try device.readValue(try #require(description.channel("in_illuminance"))) == 312)
    }

    @Test func bma400IsAnAccelerometerAndAPolledStepCounter() throws {
        let (tree, device, description) = try describe(ChipFixtures.bma400)
        let functions = IIOSensorFunction.functions(of: description)
        #expect(functions.map(\.kind) == [.accelerometer, .stepCounter])
        let steps = try Self.function(.stepCounter, description)
        #expect(steps.capture == .polled)
        let counter = try #require(description.channel("in_steps"))
        #expect(counter.scanElement == nil)
        let first = Int64(try device.readValue(counter))
        tree.set(0, "in_steps_input", "1570")
        let second = Int64(try device.readValue(counter))
        #expect(StepCounting.steps(previous: nil, current: first) == 0)
        #expect(StepCounting.steps(previous: first, current: second) == 38)

        let accel = try Self.function(.accelerometer, description)
        let layout = try description.scanLayout(enabling: accel.orderedChannels)
        #expect(layout.scanBytes == 16)
        #expect(
            try description.scanLayout(enabling: accel.orderedChannels + [IIOChannelID(type: "temp")]).slots.map(\.offset) == [
                0, 2, 4, 6, 8,
            ])
        #expect(description.channel("in_temp")?.calibration == ChannelCalibration(scale: 500, offset: 46))
    }
}
