import SensorKitModel
import Testing

@testable import IIOBridge

/// Classification into streams, capture plans and what `sensorkitctl devices` shows — pure, from
/// chip fixtures in a temporary sysfs tree.
@Suite struct IIOChipTests {
    let tree = FakeSysfsTree()

    func describe(_ attributes: ChipFixtures.Attributes, number: Int = 0) throws -> IIODeviceDescription {
        try tree.addDevice(number, attributes).describe()
    }

    func udev(_ number: Int = 0, _ properties: [String: String] = [:]) -> UdevIIODevice {
        UdevIIODevice(
            syspath: "/sys/devices/platform/bus/iio:device\(number)", sysname: "iio:device\(number)",
            devnode: "/dev/iio:device\(number)", properties: properties)
    }

    // MARK: Capture plans

    @Test func bmi160SharesOneBufferForAccelAndGyro() throws {
        let description = try describe(ChipFixtures.bmi160)
        let chip = try IIOChip(udev: udev(), description: description, triggers: ["bmi160-trigger", "other-trigger"])
        let plan = try #require(chip.capturePlan)
        #expect(plan.functions.map(\.kind) == [.accelerometer, .gyroscope])
        #expect(plan.layout.scanBytes == 24)
        #expect(
            Set(plan.plan.channels.map(\.prefix)) == [
                "in_accel_x", "in_accel_y", "in_accel_z", "in_anglvel_x", "in_anglvel_y", "in_anglvel_z",
            ])
        #expect(plan.plan.timestamp && plan.plan.timestampClock == .boottime)
        #expect(plan.plan.trigger == "bmi160-trigger")  // trigger/ exists, none selected, the chip's own found
        #expect(plan.plan.watermark == 10 && plan.plan.length == 1024)  // 100 Hz: 100 ms per wake-up
        #expect(plan.plan.samplingFrequencies.isEmpty)
        #expect(plan.rates[.accelerometer] == FunctionRate(attribute: "in_accel_sampling_frequency", hertz: 100))
        #expect(chip.problems.isEmpty)
    }

    @Test func zeroHertzIsRaisedToTheLowestChoiceOfAtLeastTenAndTheWritePlanned() throws {
        var attributes = ChipFixtures.bmi160
        attributes["in_accel_sampling_frequency"] = "0.000000"
        attributes["in_anglvel_sampling_frequency"] = "0"
        let chip = try IIOChip(udev: udev(), description: try describe(attributes))
        let plan = try #require(chip.capturePlan)
        #expect(
            plan.plan.samplingFrequencies == [
                .init(attribute: "in_accel_sampling_frequency", hertz: 12.5),
                .init(attribute: "in_anglvel_sampling_frequency", hertz: 10),
            ])
        #expect(plan.rates[.accelerometer]?.summary == "12.5 Hz (raised from 0 Hz)")
        // The gyro rate lists no choices (like every HID sensor hub): it gets the 10 Hz floor
        // itself, as iio-sensor-proxy does, instead of staying at 0 Hz forever.
        #expect(plan.rates[.gyroscope]?.summary == "10 Hz (raised from 0 Hz)")
        #expect(
            chip.problems == [
                "iio:device0: in_accel_sampling_frequency is 0 Hz; raising it to 12.5 Hz so the buffer fills",
                "iio:device0: in_anglvel_sampling_frequency is 0 Hz; raising it to 10 Hz (the device lists no choices) so the buffer fills",
            ])
        let writes = try BufferedCapture.enableWrites(plan.plan, device: chip.description).map { "\($0.attribute)=\($0.value)" }
        #expect(writes.firstIndex(of: "in_accel_sampling_frequency=12.5")! < writes.firstIndex(of: "buffer/enable=1")!)
    }

    @Test func aConfiguredRateIsWrittenAsTheNearestAcceptedRateOrAsIsWithoutChoices() throws {
        var attributes = ChipFixtures.bmi160
        attributes["in_anglvel_sampling_frequency"] = "0"
        let chip = try IIOChip(
            udev: udev(), description: try describe(attributes),
            configuredRates: [.accelerometer: 150, .gyroscope: 30])
        let plan = try #require(chip.capturePlan)
        #expect(
            plan.plan.samplingFrequencies == [
                .init(attribute: "in_accel_sampling_frequency", hertz: 200),
                .init(attribute: "in_anglvel_sampling_frequency", hertz: 30),
            ])
        #expect(plan.rates[.accelerometer]?.summary == "200 Hz (configured; was 100 Hz)")
        #expect(chip.descriptor(for: plan.functions[1]).details["samplingFrequency"] == "30 Hz (configured; was 0 Hz)")
        // A configured polled rate is the polling interval.
        let polled = try IIOChip(
            udev: udev(1), description: try describe(ChipFixtures.tsl2591, number: 1), configuredRates: [.ambientLight: 4])
        #expect(polled.functions.map(\.capture) == [.polled])
        #expect(polled.pollIntervals[.ambientLight] == 250_000_000)
    }

    @Test func devicesOfOneNameUnderOneParentGetTheirOwnIdentity() {
        let siblings: [(name: String, label: String?, number: Int)] = [
            ("mxc4005", nil, 2), ("mxc4005", nil, 3), ("bmi160", nil, 1),
        ]
        let first = IIOSourceIdentity(
            earlierTwins: IIOSourceIdentity.earlierTwins(name: "mxc4005", label: nil, number: 2, siblings: siblings))
        let second = IIOSourceIdentity(
            earlierTwins: IIOSourceIdentity.earlierTwins(name: "mxc4005", label: nil, number: 3, siblings: siblings))
        #expect(
            first.sourceID(name: "mxc4005", syspath: "/sys/devices/pci0/i2c-1/iio:device2")
                == "iio:mxc4005@/sys/devices/pci0/i2c-1")
        #expect(
            second.sourceID(name: "mxc4005", syspath: "/sys/devices/pci0/i2c-1/iio:device3")
                == "iio:mxc4005#1@/sys/devices/pci0/i2c-1")
        let labelled = IIOSourceIdentity(label: "accel-base")
        #expect(
            labelled.sourceID(name: "mxc4005", syspath: "/sys/devices/x/iio:device3") == "iio:mxc4005/accel-base@/sys/devices/x")
    }

    @Test func triggersAreChosenOnlyWhereNeeded() throws {
        // HID: a trigger is already selected (the driver's default) and kept.
        let hid = try IIOChip(
            udev: udev(3), description: try describe(ChipFixtures.hidAccel(storage: "le:s16/32"), number: 3),
            triggers: ["accel_3d-dev3"])
        #expect(hid.capturePlan?.plan.trigger == nil)
        #expect(hid.capturePlan?.layout.scanBytes == 24)
        // HID with no trigger selected: `<name>-dev<N>` is found.
        var bare = ChipFixtures.hidAccel(storage: "le:s32/32")
        bare["trigger/current_trigger"] = ""
        let hub = try IIOChip(
            udev: udev(3), description: try describe(bare, number: 4).renamed("iio:device3"),
            triggers: ["accel_3d-dev2", "accel_3d-dev3"])
        #expect(hub.capturePlan?.plan.trigger == "accel_3d-dev3")
        // LSM6DSx has a hardware FIFO and no trigger/ directory.
        let lsm = try IIOChip(
            udev: udev(5), description: try describe(ChipFixtures.lsm6dsxAccel, number: 5), triggers: ["x-trigger"])
        #expect(lsm.capturePlan?.plan.trigger == nil)
        #expect(lsm.capturePlan?.plan.watermark == 10)  // 104 Hz
    }

    // MARK: Streams

    @Test func bmi160DescriptorsCarryRawColumnsAndWhatDevicesShows() throws {
        let chip = try IIOChip(
            udev: udev(0, ["ACCEL_MOUNT_MATRIX": "0, 1, 0; -1, 0, 0; 0, 0, 1", "ACCEL_LOCATION": "base"]),
            description: try describe(ChipFixtures.bmi160), triggers: ["bmi160-trigger"])
        let accel = try #require(chip.functions.first { $0.kind == .accelerometer })
        let descriptor = chip.descriptor(for: accel)
        #expect(descriptor.sensor == .accelerometer && descriptor.device == "host")
        #expect(descriptor.source == "iio:bmi160@/sys/devices/platform/bus")
        #expect(
            descriptor.columns
                == MotionFamily.Stored.allCases.map { SourceColumn($0, .count(scale: 0.000598, offset: 0, unit: "m/s^2")) })
        #expect(
            descriptor.details == [
                "chip": "bmi160", "iioDevice": "iio:device0", "syspath": "/sys/devices/platform/bus/iio:device0",
                "devnode": "/dev/iio:device0", "capture": "buffered", "channels": "in_accel_x, in_accel_y, in_accel_z",
                "samplingFrequency": "100 Hz", "timestamps": "kernel in_timestamp, boottime", "scanBytes": "24",
                "trigger": "bmi160-trigger", "mountMatrix": "0, 1, 0; -1, 0, 0; 0, 0, 1",
                "mountMatrixSource": "udev ACCEL_MOUNT_MATRIX", "location": "base",
            ])
        let gyro = chip.descriptor(for: try #require(chip.functions.first { $0.kind == .gyroscope }))
        #expect(gyro.sensor == .rotationRate && gyro.columns.map(\.kind.unit) == ["rad/s", "rad/s", "rad/s"])
        #expect(gyro.details["mountMatrix"] == "0, 1, 0; -1, 0, 0; 0, 0, 1")  // hwdb applies to the chip's gyro too
        #expect(gyro.source == descriptor.source)
    }

    @Test func aSingularMatrixIsAppliedAsGivenWithOneLineNamingItsSource() throws {
        // Two equal rows: device x and y both read chip x; a typo in a hwdb quirk.
        let chip = try IIOChip(
            udev: udev(0, ["ACCEL_MOUNT_MATRIX": "1, 0, 0; 1, 0, 0; 0, 0, 1"]), description: try describe(ChipFixtures.bmi160))
        #expect(
            chip.problems == [
                "iio:device0: udev ACCEL_MOUNT_MATRIX '1, 0, 0; 1, 0, 0; 0, 0, 1' is singular (determinant 0): "
                    + "an axis is lost; applied as given, the quirk should be fixed upstream"
            ])
        #expect(chip.descriptor(for: chip.functions[0]).details["mountMatrix"] == "1, 0, 0; 1, 0, 0; 0, 0, 1")
        var sysfs = ChipFixtures.lsm6dsxAccel
        sysfs["mount_matrix"] = "0, 0, 1; 0, 1, 0; 0, 0, -1"
        let other = try IIOChip(udev: udev(1), description: try describe(sysfs, number: 1))
        #expect(
            other.problems.count == 1
                && other.problems[0].hasPrefix("iio:device1: sysfs mount_matrix '0, 0, 1; 0, 1, 0; 0, 0, -1' is singular"))
    }

    @Test func aBadUdevMatrixFallsBackToSysfsWithOneLine() throws {
        let chip = try IIOChip(
            udev: udev(0, ["ACCEL_MOUNT_MATRIX": "1, 0; 0, 1"]), description: try describe(ChipFixtures.lsm6dsxAccel))
        #expect(
            chip.problems.count == 1
                && chip.problems[0].hasPrefix("iio:device0: udev ACCEL_MOUNT_MATRIX: mount matrix '1, 0; 0, 1'"))
        let details = chip.descriptor(for: chip.functions[0]).details
        #expect(details["mountMatrix"] == "0, 1, 0; -1, 0, 0; 0, 0, 1" && details["mountMatrixSource"] == "sysfs mount_matrix")
        #expect(details["timestamps"] == "kernel in_timestamp, boottime")
    }

    @Test func locationFromLabelAndNoTimestampMeansEstimated() throws {
        var attributes = ChipFixtures.adxl345
        attributes["label"] = "accel-display"
        let chip = try IIOChip(udev: udev(), description: try describe(attributes))
        let details = chip.descriptor(for: chip.functions[0]).details
        #expect(details["location"] == "display")
        #expect(details["timestamps"] == TimestampMapping.estimated.description)
        #expect(chip.capturePlan?.layout.scanBytes == 6)
    }

    @Test func kernelsWithoutTimestampClockAreMappedFromRealtime() throws {
        var attributes = ChipFixtures.bmi160
        attributes["current_timestamp_clock"] = nil
        let description = try describe(attributes)
        #expect(description.timestampClock == nil)
        let chip = try IIOChip(udev: udev(), description: description)
        #expect(chip.predictedTimestamps == .mapped(.realtime))
        // And no clock write is planned where there is no attribute.
        let writes = try BufferedCapture.enableWrites(chip.capturePlan!.plan, device: description)
        #expect(!writes.contains { $0.attribute == "current_timestamp_clock" })
    }

    @Test func polledLightKeepsInputsInMillionthsAndPollsAtTheIntegrationTime() throws {
        let chip = try IIOChip(
            udev: udev(0, ["SENSORKIT_ALS_PLACEMENT": "front-top"]), description: try describe(ChipFixtures.tsl2591),
            integrationTime: 0.2)
        let light = try #require(chip.functions.first)
        #expect(light.kind == .ambientLight && light.capture == .polled)
        #expect(chip.pollIntervals[.ambientLight] == 200_000_000)
        let descriptor = chip.descriptor(for: light)
        #expect(descriptor.columns == [SourceColumn(LightFamily.Stored.illuminance, .count(scale: 1e-6, offset: 0, unit: "lux"))])
        #expect(chip.columns(for: light).map(\.1) == [.input(IIOChannelID(type: "illuminance"))])
        #expect(descriptor.details["placement"] == "1")
        #expect(descriptor.details["samplingFrequency"] == "polled every 200.0 ms")
        #expect(descriptor.details["timestamps"] == "read time (sysfs polled)")
    }

    @Test func anOlderHIDLightSensorRecordsLuxFromIntensityBothAndSaysSo() throws {
        // hid-sensor-als before in_illuminance: only the hub's illuminance usage as intensity_both.
        let hid: ChipFixtures.Attributes = [
            "name": "als", "in_intensity_both_raw": "4321", "in_intensity_scale": "0.1",
            "in_intensity_sampling_frequency": "0", "in_intensity_hysteresis": "0",
        ]
        let chip = try IIOChip(udev: udev(), description: try describe(hid))
        let light = try #require(chip.functions.first)
        #expect(light.kind == .ambientLight && light.capture == .polled)
        let descriptor = chip.descriptor(for: light)
        #expect(descriptor.columns == [SourceColumn(LightFamily.Stored.illuminance, .count(scale: 0.1, offset: 0, unit: "lux"))])
        #expect(chip.columns(for: light).map(\.1) == [.raw(IIOChannelID(type: "intensity", modifier: "both"))])
        #expect(
            descriptor.shownDetails["lux"]?.hasPrefix("in_intensity_both: a HID sensor hub reports its illuminance usage (lux)")
                == true)
        // The sentence is shown, not part of the stream's identity: rewording it starts no new stream.
        #expect(descriptor.details["lux"] == nil)
        var reworded = descriptor
        reworded.notes["lux"] = "reworded"
        #expect(reworded == descriptor && reworded.hashValue == descriptor.hashValue)
        // Another part's intensity_both is unit-less counts, never lux.
        var other = hid
        other["name"] = "tsl2591"
        #expect(try IIOChip(udev: udev(1), description: try describe(other, number: 1)).functions.isEmpty)
        // An illuminance channel says where its lux came from too.
        let tsl = try IIOChip(udev: udev(2), description: try describe(ChipFixtures.tsl2591, number: 2))
        #expect(tsl.descriptor(for: tsl.functions[0]).shownDetails["lux"] == "in_illuminance (lux by the ABI)")
    }

    @Test func placementFromLabelOrNumberAndUnknownOtherwise() throws {
        var attributes = ChipFixtures.apds9960
        attributes["label"] = "als-front_bottom_left"
        #expect(try IIOChip(udev: udev(), description: try describe(attributes)).placement == 8)
        #expect(
            try IIOChip(
                udev: udev(1, ["SENSORKIT_ALS_PLACEMENT": "3"]), description: try describe(ChipFixtures.acpiALS, number: 1)
            ).placement == 3)
        #expect(try IIOChip(udev: udev(2), description: try describe(ChipFixtures.acpiALS, number: 2)).placement == nil)
    }

    @Test func rgbLightColumnsAreRawCountsWithTheirGain() throws {
        let chip = try IIOChip(udev: udev(), description: try describe(ChipFixtures.apds9960))
        let light = try #require(chip.functions.first { $0.kind == .ambientLight })
        #expect(light.capture == .polled)  // intensity channels have no scan elements on the APDS9960
        #expect(
            chip.descriptor(for: light).columns
                == [LightFamily.Stored.red, .green, .blue, .clear].map {
                    SourceColumn($0, .count(scale: 4, offset: 0, unit: "counts"))
                })
        #expect(chip.pollIntervals[.ambientLight] == 500_000_000)  // no integration time passed: the default
    }

    @Test func stepCounterHasStepsAndEnd() throws {
        let chip = try IIOChip(udev: udev(), description: try describe(ChipFixtures.bma400))
        let steps = try #require(chip.functions.first { $0.kind == .stepCounter })
        #expect(steps.capture == .polled)
        #expect(
            chip.descriptor(for: steps).columns == [
                SourceColumn(PedometerFamily.Stored.steps, .count("steps")),
                SourceColumn(PedometerFamily.Stored.end, .count("ns")),
            ])
        #expect(chip.columns(for: steps).map(\.1) == [.inputCount(IIOChannelID(type: "steps")), .intervalEnd])
        #expect(chip.pollIntervals[.stepCounter] == 5_000_000_000)
        #expect(chip.descriptor(for: steps).sensor == .pedometerData)
        // The same chip's accelerometer is buffered, with temperature left out (not a function).
        #expect(chip.capturePlan?.functions.map(\.kind) == [.accelerometer])
    }

    @Test func pressureWithTemperatureUsesTheirUnits() throws {
        let chip = try IIOChip(udev: udev(), description: try describe(ChipFixtures.bmp280))
        let pressure = try #require(chip.functions.first { $0.kind == .pressure })
        #expect(pressure.capture == .buffered)
        #expect(
            chip.descriptor(for: pressure).columns == [
                SourceColumn(PressureFamily.Stored.pressure, .count(scale: 0.000003906, offset: 0, unit: "kPa")),
                SourceColumn(PressureFamily.Stored.temperature, .count(scale: 10, offset: 0, unit: "m°C")),
            ])
    }
}

extension IIODeviceDescription {
    /// The same description under another `iio:deviceN` name (a fixture written as one number, read as another).
    func renamed(_ name: String) -> IIODeviceDescription {
        var copy = self
        copy.deviceName = name
        return copy
    }
}
