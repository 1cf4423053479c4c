import Dispatch
import Foundation
import SensorKitModel
import SensorTestKit
import Testing

@testable import IIOBridge

@Suite struct UdevIIOMonitorTests {
    static let queue = DispatchQueue(label: "udev-test")

    @Test func monitorIsNonBlockingAndEnumerationOfThisMachineDoesNotCrash() throws {
        let monitor = try UdevIIOMonitor(queue: Self.queue)
        #expect(monitor.fileDescriptor >= 0)
        #expect(fcntl(monitor.fileDescriptor, F_GETFL) & O_NONBLOCK != 0)
        #expect(fcntl(monitor.fileDescriptor, F_GETFD) & FD_CLOEXEC != 0)
        let devices = try Self.queue.sync { try monitor.enumerate() }
        #expect(devices.allSatisfy { $0.sysname.hasPrefix("iio:device") && $0.action == nil })
        if !FileManager.default.fileExists(atPath: "/sys/bus/iio/devices") {
            #expect(devices.isEmpty)
        }
        // Nothing pending: returns at once instead of blocking.
        #expect(Self.queue.sync { monitor.receive() }.isEmpty)
    }

    @Test func udevPropertiesAreParsed() throws {
        let device = UdevIIODevice(
            syspath: "/sys/devices/x/iio:device3", sysname: "iio:device3", devnode: "/dev/iio:device3",
            properties: ["ACCEL_MOUNT_MATRIX": "0, 1, 0; -1, 0, 0; 0, 0, 1", "ACCEL_LOCATION": "base"])
        #expect(try device.accelMountMatrix() == MountMatrix(rows: [SIMD3(0, 1, 0), SIMD3(-1, 0, 0), SIMD3(0, 0, 1)]))
        #expect(device.accelLocation == "base")
        let bad = UdevIIODevice(
            syspath: "/s", sysname: "iio:device3", devnode: nil, properties: ["ACCEL_MOUNT_MATRIX": "1, 0, 0"])
        #expect(throws: MountMatrixError.self) { try bad.accelMountMatrix() }
        #expect(try UdevIIODevice(syspath: "/s", sysname: "iio:device3", devnode: nil, properties: [:]).accelMountMatrix() == nil)
    }

    // MARK: Under umockdev

    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/iio/bmi160.umockdev").path
    static let hotplugController = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/iio/hotplug.py").path
    /// `iio-udev-child` (Tests/IIOUdevChild), built beside the test bundle: the half that runs
    /// inside umockdev, in a process of its own because the preload must be there from its start.
    static var child: String {
        let bundle = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (bundle as NSString).deletingLastPathComponent + "/iio-udev-child"
    }

    /// Runs `arguments` inside `timeout` and returns the child's report and everything it printed.
    static func runChild(_ arguments: [String], report: String) throws -> (status: Int32, report: String, log: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = ["--kill-after=5", "60"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let log = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let found = (try? String(contentsOfFile: report, encoding: .utf8)) ?? "no report; child log:\n\(log)"
        return (process.terminationStatus, found, log)
    }

    /// `iio-udev-child enumerate` under `umockdev-run` with the BMI160 fixture (a device and a
    /// trigger): libudev enumeration through our wrapper, the udev properties, and the sysfs
    /// description read through umockdev's preload (opendir/readdir/open).
    @Test(.needs(.umockdev), .timeLimit(.minutes(3)))
    func enumeratesAMockedDeviceThroughLibudev() throws {
        let report = NSTemporaryDirectory() + "/iio-umockdev-report-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: report) }
        let run = try Self.runChild(
            ["/usr/bin/umockdev-run", "-d", Self.fixture, "--", Self.child, "enumerate", report],
            report: report)
        #expect(run.status == 0, "child under umockdev failed:\n\(run.log)")
        #expect(
            run.report == """
                iio:device0 /dev/iio:device0 /sys/devices/platform/iio-test/iio:device0
                matrix 0, 1, 0; -1, 0, 0; 0, 0, 1 location display
                bmi160 accelerometer (buffered: in_accel_x, in_accel_y, in_accel_z) gyroscope (buffered: in_anglvel_x, in_anglvel_y, in_anglvel_z)
                scan 24 bytes
                accel udev ACCEL_MOUNT_MATRIX -0.999568 -0.000732 0.002439

                """)
    }

    /// A python controller (libumockdev through GObject introspection) adds, changes and removes
    /// an IIO device while `iio-udev-child hotplug` listens through
    /// `UdevIIOMonitor.makeEventSource`: the monitor path (netlink → DispatchSourceRead →
    /// `receive`) with real uevents.
    @Test(.needs(.umockdev), .timeLimit(.minutes(3)))
    func receivesHotplugEventsThroughTheMonitor() throws {
        let report = NSTemporaryDirectory() + "/iio-hotplug-report-\(getpid())"
        defer {
            try? FileManager.default.removeItem(atPath: report)
            try? FileManager.default.removeItem(atPath: report + ".ready")
        }
        let run = try Self.runChild(
            [
                "/usr/bin/umockdev-wrapper", TestEnvironment.python, Self.hotplugController,
                report, "--", Self.child, "hotplug", report,
            ], report: report)
        #expect(run.status == 0, "hotplug run failed:\n\(run.log)")
        #expect(
            run.report == """
                enumerated 0
                add iio:device0 /dev/iio:device0 matrix 0, 1, 0; -1, 0, 0; 0, 0, 1 name bmi160
                change iio:device0
                remove iio:device0

                """)
    }
}
