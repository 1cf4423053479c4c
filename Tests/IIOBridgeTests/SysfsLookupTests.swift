import SensorKitModel
import Testing

@testable import IIOBridge

@Suite struct SysfsLookupTests {
    let tree = FakeSysfsTree()

    @Test func scaleLookupOrderIsSeparateTypeDirectionAll() throws {
        let device = tree.addDevice(
            0,
            [
                "name": "lookup",
                "in_accel_x_raw": "1", "in_accel_y_raw": "1", "in_accel_z_raw": "1", "in_anglvel_x_raw": "1",
                "in_illuminance_raw": "1",
                "in_accel_x_scale": "1", "in_accel_scale": "2", "in_scale": "3", "scale": "4",
                "in_anglvel_offset": "5", "offset": "6",
            ])
        var description = try device.describe()
        #expect(description.channel("in_accel_x")?.scale == 1)
        #expect(description.channel("in_accel_y")?.scale == 2)
        #expect(description.channel("in_anglvel_x")?.scale == 3)
        #expect(description.channel("in_anglvel_x")?.offset == 5)
        #expect(description.channel("in_illuminance")?.offset == 6)
        tree.remove(0, "in_scale")
        description = try device.describe()
        #expect(description.channel("in_anglvel_x")?.scale == 4)
        #expect(description.channel("in_anglvel_x")?.scaleAttribute == "scale")
        tree.remove(0, "scale")
        description = try device.describe()
        #expect(description.channel("in_anglvel_x")?.scale == nil)
        #expect(description.channel("in_anglvel_x")?.calibration == ChannelCalibration(scale: 1, offset: 5))
        #expect(description.channel("in_accel_z")?.calibration == ChannelCalibration(scale: 2, offset: 6))
    }

    @Test func mountMatrixLookupAndUdevPrecedence() throws {
        let device = tree.addDevice(
            0,
            ChipFixtures.merge(
                ChipFixtures.bmi160,
                [
                    "in_accel_mount_matrix": "0, 1, 0; 1, 0, 0; 0, 0, -1", "mount_matrix": "-1, 0, 0; 0, -1, 0; 0, 0, 1",
                ]))
        let description = try device.describe()
        let accel = try #require(IIOSensorFunction.function(kind: .accelerometer, of: description))
        let gyro = try #require(IIOSensorFunction.function(kind: .gyroscope, of: description))
        #expect(
            MotionConversion(function: accel, device: description, udevMountMatrix: nil).matrixSource
                == .sysfs(attribute: "in_accel_mount_matrix"))
        #expect(
            MotionConversion(function: gyro, device: description, udevMountMatrix: nil).matrixSource
                == .sysfs(attribute: "in_mount_matrix"))
        let udev = try MountMatrix(parsing: "0, -1, 0; 1, 0, 0; 0, 0, 1")
        let withUdev = MotionConversion(function: accel, device: description, udevMountMatrix: udev)
        #expect(withUdev.matrixSource == .udev)
        #expect(withUdev.matrix == udev)
        #expect(MotionConversion(function: gyro, device: description, udevMountMatrix: udev).matrix == udev)
    }

    @Test func samplingRateLookupAndFixUp() throws {
        let device = tree.addDevice(0, ChipFixtures.merge(ChipFixtures.bmi160, ["in_accel_sampling_frequency": "0.781250"]))
        let description = try device.describe()
        let accel = try #require(description.samplingRate(for: "accel"))
        #expect(accel.attribute == "in_accel_sampling_frequency")
        #expect(accel.hertz == 0.78125)
        #expect(accel.fixUp() == 12.5)  // lowest available ≥ 10 Hz
        let gyro = try #require(description.samplingRate(for: "anglvel"))
        #expect(gyro.hertz == 100 && gyro.choices == nil && gyro.fixUp() == nil)
        #expect(description.samplingFrequency == nil)  // no device-wide rate on a BMI160
        let lsm = try tree.addDevice(1, ChipFixtures.lsm6dsxAccel).describe()
        #expect(lsm.samplingRate(for: "accel")?.attribute == "sampling_frequency")
        #expect(SamplingRate(attribute: "sampling_frequency", hertz: 0, choices: .list([1, 2, 5])).fixUp() == 5)
    }

    @Test func listsDevicesButNotTriggers() throws {
        tree.addDevice(1, ChipFixtures.tsl2591)
        tree.addDevice(0, ChipFixtures.bmi160)
        tree.addTrigger(0, name: "bmi160-trigger")
        #expect(try IIOSysfsDevice.devices(under: tree.root).map(\.deviceName) == ["iio:device0", "iio:device1"])
        #expect(try IIOSysfsDevice.devices(under: tree.root + "/absent").isEmpty)
    }

    @Test func writesReplaceTheWholeValue() throws {
        let device = tree.addDevice(0, ChipFixtures.bmi160)
        try device.directory.write("in_accel_sampling_frequency", "12.5")
        #expect(try device.directory.read("in_accel_sampling_frequency") == "12.5")
        #expect(throws: (any Error).self) { try device.directory.write("no_such_attribute", "1") }
    }
}
