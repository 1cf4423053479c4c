import SensorKitModel
import Testing

@testable import IIOBridge

/// Garbage in sysfs gives a typed error naming the device and attribute — to be logged once —
/// and the device is skipped (throw) or degraded (recorded), never a crash.
@Suite struct SysfsGarbageTests {
    /// One fresh tree per test, alive while the test runs.
    let tree = FakeSysfsTree()

    /// A BMI160 as `iio:device<number>`, then `changes` applied to the tree.
    func makeDevice(_ number: Int = 0, _ changes: (FakeSysfsTree) -> Void) -> (FakeSysfsTree, IIOSysfsDevice) {
        let device = tree.addDevice(number, ChipFixtures.bmi160)
        changes(tree)
        return (tree, device)
    }

    static func describeError(_ device: IIOSysfsDevice) -> IIOAttributeError? {
        do {
            _ = try device.describe()
            return nil
        } catch {
            return error
        }
    }

    @Test func nonNumericScaleSkipsTheDevice() throws {
        let (_, device) = makeDevice { $0.set(0, "in_accel_scale", "abc") }
        let error = try #require(Self.describeError(device))
        #expect(error.attribute == "in_accel_scale")
        #expect(error.problem == .malformed(value: "abc", reason: "not a decimal number"))
        #expect(error.description == "iio:device0: in_accel_scale: 'abc': not a decimal number")
    }

    @Test func frenchDecimalCommaIsRejectedNotMisread() throws {
        let (_, device) = makeDevice { $0.set(0, "in_anglvel_scale", "0,001065") }
        let error = try #require(Self.describeError(device))
        #expect(error.attribute == "in_anglvel_scale")
        #expect(error.description.contains("'0,001065'"))
    }

    @Test func missingIndexDegradesToPolled() throws {
        let (_, device) = makeDevice { $0.remove(0, "scan_elements/in_accel_x_index") }
        let description = try device.describe()
        #expect(
            description.degradations == [
                IIOAttributeError(device: "iio:device0", attribute: "scan_elements/in_accel_x_index", problem: .missing)
            ])
        #expect(description.degradations[0].description == "iio:device0: scan_elements/in_accel_x_index: missing")
        #expect(description.channels.allSatisfy { $0.scanElement == nil })
        #expect(IIOSensorFunction.functions(of: description).map(\.capture) == [.polled, .polled])
    }

    @Test func unknownTypeDegradesToPolled() throws {
        let (_, device) = makeDevice { $0.set(0, "scan_elements/in_accel_y_type", "le:q16/16>>0") }
        let description = try device.describe()
        let problem = try #require(description.degradations.first)
        #expect(problem.attribute == "scan_elements/in_accel_y_type")
        #expect(problem.description.contains("sign must be 's' or 'u'"))
        #expect(try #require(IIOSensorFunction.function(kind: .accelerometer, of: description)).capture == .polled)
    }

    @Test func garbageIndexAndEnableAreNamed() throws {
        let (_, device) = makeDevice { $0.set(0, "scan_elements/in_anglvel_z_index", "-1") }
        #expect(try device.describe().degradations.first?.attribute == "scan_elements/in_anglvel_z_index")
        let (_, other) = makeDevice(1) { $0.set(1, "scan_elements/in_accel_z_en", "yes") }
        #expect(try other.describe().degradations.first?.attribute == "scan_elements/in_accel_z_en")
    }

    @Test func noBufferAndNoRawMeansNoFunction() throws {
        // Scan elements broken and no _raw attributes: nothing can be read, nothing is offered.
        let (tree, device) = makeDevice { tree in
            tree.remove(0, "scan_elements/in_accel_x_index")
            for axis in ["x", "y", "z"] { tree.remove(0, "in_accel_\(axis)_raw") }
        }
        _ = tree
        let kinds = IIOSensorFunction.functions(of: try device.describe()).map(\.kind)
        #expect(kinds == [.gyroscope])
    }

    @Test func missingNameSkipsTheDevice() throws {
        let (_, device) = makeDevice { $0.remove(0, "name") }
        #expect(Self.describeError(device) == IIOAttributeError(device: "iio:device0", attribute: "name", problem: .missing))
    }

    @Test func garbageMountMatrixSkipsTheDevice() throws {
        let (_, device) = makeDevice { $0.set(0, "in_mount_matrix", "1, 0, 0; 0, 1, 0") }
        let error = try #require(Self.describeError(device))
        #expect(error.attribute == "in_mount_matrix")
    }

    @Test func unknownTimestampClockIsADegradation() throws {
        let (_, device) = makeDevice { $0.set(0, "current_timestamp_clock", "sundial") }
        let description = try device.describe()
        #expect(description.timestampClock == nil)
        #expect(description.degradations.map(\.attribute) == ["current_timestamp_clock"])
    }

    @Test func garbageSamplingFrequencyIsNamed() throws {
        let (_, device) = makeDevice { $0.set(0, "in_accel_sampling_frequency_available", "fast slow") }
        #expect(
            Self.describeError(device)?.description
                == "iio:device0: in_accel_sampling_frequency_available: 'fast slow': not a list of decimal numbers")
        let (_, other) = makeDevice(1) { $0.set(1, "sampling_frequency", "12,5") }
        #expect(Self.describeError(other)?.description == "iio:device1: sampling_frequency: '12,5': not a decimal number")
    }

    @Test func polledReadsNameTheirAttribute() throws {
        let (tree, device) = makeDevice { _ in }
        let x = IIOChannelID(type: "accel", modifier: "x")
        #expect(try device.readRaw(x) == 12)
        tree.set(0, "in_accel_x_raw", "12.5")
        #expect(
            throws: IIOAttributeError(
                device: "iio:device0", attribute: "in_accel_x_raw",
                problem: .malformed(value: "12.5", reason: "not an integer"))
        ) {
            try device.readRaw(x)
        }
        #expect(throws: IIOAttributeError(device: "iio:device0", attribute: "in_accel_x_input", problem: .missing)) {
            try device.readInput(x)
        }
    }

    @Test func scaleIsReReadFromWhereItWasFound() throws {
        let (tree, device) = makeDevice { _ in }
        let channel = try #require(try device.describe().channel("in_accel_y"))
        #expect(try device.rereadScale(of: channel) == 0.000598)
        tree.set(0, "in_accel_scale", "0.001197")  // range switched to ±4 g
        #expect(try device.rereadScale(of: channel) == 0.001197)
    }

    @Test func vanishedDeviceIsAnIOError() throws {
        let device = IIOSysfsDevice(path: "/nonexistent/iio:device7")
        let error = try #require(Self.describeError(device))
        #expect(error.device == "iio:device7")
        guard case let .unreadable(system) = error.problem else { Issue.record("\(error)"); return }
        #expect(system.call.hasPrefix("opendir"))
    }
}
