import Testing

@testable import IIOBridge

/// libiio's model of a remote BMI160 (what `iio_info -u ip:…` shows for the fixture) becomes the
/// same description, plan and descriptors as the sysfs directory of a local one.
@Suite struct IIORemoteDeviceModelTests {
    static func s16() throws -> ScanType { try ScanType(parsing: "le:s16/16>>0") }

    static func bmi160() throws -> IIORemoteDeviceModel {
        var channels: [IIORemoteDeviceModel.Channel] = []
        for (offset, axis) in ["x", "y", "z"].enumerated() {
            channels.append(
                .init(id: "anglvel_\(axis)", scan: (4 + offset, try s16()), attributes: ["raw": "3", "scale": "0.001065"]))
            channels.append(
                .init(
                    id: "accel_\(axis)", scan: (7 + offset, try s16()),
                    attributes: [
                        "raw": "12", "scale": "0.000598", "sampling_frequency": "400.000000",
                        "sampling_frequency_available": "25 50 100 200 400 800",
                    ]))
        }
        channels.append(.init(id: "timestamp", scan: (10, try ScanType(parsing: "le:s64/64>>0"))))
        // libiio's view of in_mount_matrix
        channels.append(.init(id: "mount", attributes: ["matrix": "0, 1, 0; -1, 0, 0; 0, 0, 1"]))
        return IIORemoteDeviceModel(
            id: "iio:device0", name: "bmi160", channels: channels,
            attributes: ["current_timestamp_clock": "realtime"])
    }

    @Test func describesLikeSysfs() throws {
        let description = try Self.bmi160().describe()
        #expect(description.name == "bmi160" && description.deviceName == "iio:device0")
        #expect(
            description.channels.map(\.id.prefix) == [
                "in_accel_x", "in_accel_y", "in_accel_z", "in_anglvel_x", "in_anglvel_y", "in_anglvel_z",
            ])
        #expect(description.channel("in_accel_y")?.scale == 0.000598)
        #expect(description.channel("in_anglvel_z")?.scanElement?.index == 6)
        #expect(description.timestampElement?.index == 10)
        #expect(description.timestampClock == .realtime)
        #expect(description.samplingRate(for: "accel")?.hertz == 400)
        #expect(description.sysfsMountMatrices["in_mount_matrix"]?.description == "0, 1, 0; -1, 0, 0; 0, 0, 1")
        #expect(description.canBuffer)

        let udev = UdevIIODevice(syspath: "ip:rig.local/iio:device0", sysname: "iio:device0", devnode: nil, properties: [:])
        let chip = try IIOChip(udev: udev, description: description)
        #expect(chip.sourceID == "iio:bmi160@ip:rig.local/iio:device0")
        #expect(chip.capturePlan?.layout.scanBytes == 24)
        #expect(chip.capturePlan?.plan.watermark == 40)
        let accel = chip.descriptor(for: chip.functions[0])
        #expect(accel.details["mountMatrixSource"] == "sysfs in_mount_matrix")
        #expect(accel.details["samplingFrequency"] == "400 Hz")
    }

    @Test func garbageIsReportedLikeSysfsGarbage() throws {
        var model = try Self.bmi160()
        model.channels[1].attributes["scale"] = "0,000598"
        #expect(
            throws: IIOAttributeError(
                device: "iio:device0", attribute: "in_accel_x_scale",
                problem: .malformed(value: "0,000598", reason: "not a decimal number"))
        ) {
            try model.describe()
        }
        model = try Self.bmi160()
        model.attributes["current_timestamp_clock"] = "sundial"
        let description = try model.describe()
        #expect(description.timestampClock == nil && description.degradations.count == 1)
    }
}
