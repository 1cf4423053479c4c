import Dispatch
import Foundation
import SensorTestKit
import Synchronization
import Testing
@testable import IIOBridge
import SensorKitModel

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
        let device = UdevIIODevice(syspath: "/sys/devices/x/iio:device3", sysname: "iio:device3", devnode: "/dev/iio:device3",
                                   properties: ["ACCEL_MOUNT_MATRIX": "0, 1, 0; -1, 0, 0; 0, 0, 1", "ACCEL_LOCATION": "base"])
        #expect(try device.accelMountMatrix() == MountMatrix(rows: [SIMD3(0, 1, 0), SIMD3(-1, 0, 0), SIMD3(0, 0, 1)]))
        #expect(device.accelLocation == "base")
        let bad = UdevIIODevice(syspath: "/s", sysname: "iio:device3", devnode: nil, properties: ["ACCEL_MOUNT_MATRIX": "1, 0, 0"])
        #expect(throws: MountMatrixError.self) { try bad.accelMountMatrix() }
        #expect(try UdevIIODevice(syspath: "/s", sysname: "iio:device3", devnode: nil, properties: [:]).accelMountMatrix() == nil)
    }

    // MARK: Under umockdev

    /// Set in the child process run under `umockdev-run`: where to write what it found.
    static let reportPath = ProcessInfo.processInfo.environment["IIO_UMOCKDEV_REPORT"]
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/iio/bmi160.umockdev").path

    /// Runs this test binary again under `umockdev-run` with the BMI160 fixture (a device and a
    /// trigger), filtered to `enumeratesMockedDeviceInsideUmockdev`, and checks its report:
    /// libudev enumeration through our wrapper, the udev properties, and the sysfs description
    /// read through umockdev's preload (opendir/readdir/open).
    @Test(.enabled(if: reportPath == nil, "the parent run, not the child"), .needs(.umockdev),
          .timeLimit(.minutes(1)))
    func enumeratesAMockedDeviceThroughLibudev() throws {
        let report = NSTemporaryDirectory() + "/iio-umockdev-report-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: report) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        let binary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        process.arguments = ["--kill-after=5", "60", "/usr/bin/umockdev-run", "-d", Self.fixture, "--",
                             binary, "--testing-library", "swift-testing",
                             "--filter", "UdevIIOMonitorTests/enumeratesMockedDeviceInsideUmockdev"]
        var environment = ProcessInfo.processInfo.environment
        environment["IIO_UMOCKDEV_REPORT"] = report
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let log = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "child under umockdev failed:\n\(log)")
        let found = (try? String(contentsOfFile: report, encoding: .utf8)) ?? "no report; child log:\n\(log)"
        #expect(found == """
            iio:device0 /dev/iio:device0 /sys/devices/platform/iio-test/iio:device0
            matrix 0, 1, 0; -1, 0, 0; 0, 0, 1 location display
            bmi160 accelerometer (buffered: in_accel_x, in_accel_y, in_accel_z) gyroscope (buffered: in_anglvel_x, in_anglvel_y, in_anglvel_z)
            scan 24 bytes
            accel udev ACCEL_MOUNT_MATRIX -0.999568 -0.000732 0.002439

            """)
    }

    /// The child half: only runs inside `umockdev-run` (see above).
    @Test(.enabled(if: reportPath != nil, "runs only inside umockdev-run"))
    func enumeratesMockedDeviceInsideUmockdev() throws {
        let reportPath = try #require(Self.reportPath)
        let monitor = try UdevIIOMonitor(queue: Self.queue)
        let devices = try Self.queue.sync { try monitor.enumerate() }
        var lines: [String] = []
        for device in devices {
            lines.append("\(device.sysname) \(device.devnode ?? "-") \(device.syspath)")
            lines.append("matrix \(try device.accelMountMatrix()?.description ?? "-") location \(device.accelLocation ?? "-")")
            let description = try IIOSysfsDevice(path: device.syspath).describe()
            let functions = IIOSensorFunction.functions(of: description)
            lines.append("\(description.name) " + functions.map(\.description).joined(separator: " "))
            lines.append("scan \(try description.scanLayout(enabling: functions.flatMap(\.orderedChannels)).scanBytes) bytes")
            if let accel = functions.first(where: { $0.kind == .accelerometer }) {
                let conversion = MotionConversion(function: accel, device: description, udevMountMatrix: try device.accelMountMatrix())
                let g = conversion.convert(rawX: 12, rawY: -16392, rawZ: 40)
                lines.append("accel \(conversion.matrixSource) " + [g.x, g.y, g.z].map { String(format: "%.6f", $0) }.joined(separator: " "))
            }
        }
        try (lines.joined(separator: "\n") + "\n").write(toFile: reportPath, atomically: false, encoding: .utf8)
    }

    // MARK: Hotplug under umockdev

    static let hotplugReportPath = ProcessInfo.processInfo.environment["IIO_UMOCKDEV_HOTPLUG_REPORT"]
    static let hotplugController = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/iio/hotplug.py").path

    /// A python controller (libumockdev through GObject introspection) adds, changes and removes
    /// an IIO device while this binary, run again as its child, listens through
    /// `UdevIIOMonitor.makeEventSource`: the monitor path (netlink → DispatchSourceRead →
    /// `receive`) with real uevents.
    @Test(.enabled(if: reportPath == nil && hotplugReportPath == nil, "the parent run, not the child"), .needs(.umockdev),
          .timeLimit(.minutes(1)))
    func receivesHotplugEventsThroughTheMonitor() throws {
        let report = NSTemporaryDirectory() + "/iio-hotplug-report-\(getpid())"
        defer {
            try? FileManager.default.removeItem(atPath: report)
            try? FileManager.default.removeItem(atPath: report + ".ready")
        }
        let binary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = ["--kill-after=5", "60", "/usr/bin/umockdev-wrapper", TestEnvironment.python, Self.hotplugController,
                             report, "--", binary, "--testing-library", "swift-testing",
                             "--filter", "UdevIIOMonitorTests/receivesHotplugEventsInsideUmockdev"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let log = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "hotplug run failed:\n\(log)")
        let found = (try? String(contentsOfFile: report, encoding: .utf8)) ?? "no report; log:\n\(log)"
        #expect(found == """
            enumerated 0
            add iio:device0 /dev/iio:device0 matrix 0, 1, 0; -1, 0, 0; 0, 0, 1 name bmi160
            change iio:device0
            remove iio:device0

            """)
    }

    /// The child half: only runs under hotplug.py.
    @Test(.enabled(if: hotplugReportPath != nil, "runs only under hotplug.py"))
    func receivesHotplugEventsInsideUmockdev() throws {
        let reportPath = try #require(Self.hotplugReportPath)
        let monitor = try UdevIIOMonitor(queue: Self.queue)
        let enumerated = try Self.queue.sync { try monitor.enumerate() }
        let lines = Mutex(["enumerated \(enumerated.count)"])
        let removed = DispatchSemaphore(value: 0)
        let source = monitor.makeEventSource { events in
            for event in events {
                let line: String
                switch event.action {
                case .add?:
                    let name = (try? IIOSysfsDevice(path: event.syspath).describe().name) ?? "-"
                    let matrix = (try? event.accelMountMatrix())??.description ?? "-"
                    line = "add \(event.sysname) \(event.devnode ?? "-") matrix \(matrix) name \(name)"
                case .change?: line = "change \(event.sysname)"
                case .remove?: line = "remove \(event.sysname)"
                case let .other(action)?: line = "\(action) \(event.sysname)"
                case nil: line = "enumerated? \(event.sysname)"
                }
                lines.withLock { $0.append(line) }
                if event.action == .remove { removed.signal() }
            }
        }
        source.resume()
        #expect(FileManager.default.createFile(atPath: reportPath + ".ready", contents: Data()))
        let finished = removed.wait(timeout: .now() + 20)
        source.cancel()
        #expect(finished == .success)
        try (lines.withLock { $0 }.joined(separator: "\n") + "\n").write(toFile: reportPath, atomically: false, encoding: .utf8)
    }
}
