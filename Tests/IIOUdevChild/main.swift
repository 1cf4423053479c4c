// The half of IIOBridgeTests' udev tests that runs inside umockdev, in a process of its own so the
// test bundle has no test that only makes sense in a child (and would show as skipped elsewhere).
//
//   iio-udev-child enumerate REPORT   (under `umockdev-run -d FIXTURE`): enumerates IIO devices
//       through libudev and the sysfs description read through umockdev's preload, and writes
//       what it found to REPORT;
//   iio-udev-child hotplug REPORT     (under Tests/Fixtures/iio/hotplug.py): creates REPORT.ready
//       once its udev monitor listens, writes each uevent it receives to REPORT after "remove".
//
// Exit status 0 when the report was written, 1 (with the reason on stderr) otherwise.
import Dispatch
import Foundation
import IIOBridge
import Synchronization

let queue = DispatchQueue(label: "iio-udev-child")

func enumerate() throws -> [String] {
    let monitor = try UdevIIOMonitor(queue: queue)
    let devices = try queue.sync { try monitor.enumerate() }
    var lines: [String] = []
    for device in devices {
        lines.append("\(device.sysname) \(device.devnode ?? "-") \(device.syspath)")
        lines.append("matrix \(try device.accelMountMatrix()?.description ?? "-") location \(device.accelLocation ?? "-")")
        let description = try IIOSysfsDevice(path: device.syspath).describe()
        let functions = IIOSensorFunction.functions(of: description)
        lines.append("\(description.name) " + functions.map(\.description).joined(separator: " "))
        lines.append("scan \(try description.scanLayout(enabling: functions.flatMap(\.orderedChannels)).scanBytes) bytes")
        if let accel = functions.first(where: { $0.kind == .accelerometer }) {
            let conversion = MotionConversion(
                function: accel, device: description, udevMountMatrix: try device.accelMountMatrix())
            let g = conversion.convert(rawX: 12, rawY: -16392, rawZ: 40)
            lines.append(
                "accel \(conversion.matrixSource) " + [g.x, g.y, g.z].map { String(format: "%.6f", $0) }.joined(separator: " "))
        }
    }
    return lines
}

func hotplug(ready: String) throws -> [String] {
    let monitor = try UdevIIOMonitor(queue: queue)
    let enumerated = try queue.sync { try monitor.enumerate() }
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
    guard FileManager.default.createFile(atPath: ready, contents: Data()) else { throw ChildFailure("cannot create \(ready)") }
    let finished = removed.wait(timeout: .now() + 20)
    source.cancel()
    guard finished == .success else { throw ChildFailure("no remove event within 20 s; got: \(lines.withLock { $0 })") }
    return lines.withLock { $0 }
}

struct ChildFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

let arguments = CommandLine.arguments
guard arguments.count == 3, ["enumerate", "hotplug"].contains(arguments[1]) else {
    FileHandle.standardError.write(Data("usage: iio-udev-child enumerate|hotplug REPORT\n".utf8))
    exit(2)
}
let report = arguments[2]
do {
    let lines = arguments[1] == "enumerate" ? try enumerate() : try hotplug(ready: report + ".ready")
    try (lines.joined(separator: "\n") + "\n").write(toFile: report, atomically: false, encoding: .utf8)
} catch {
    FileHandle.standardError.write(Data("iio-udev-child: \(error)\n".utf8))
    exit(1)
}
