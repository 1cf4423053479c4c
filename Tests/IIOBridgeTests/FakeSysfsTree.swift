import Foundation
import IIOBridge

/// A throw-away `/sys/bus/iio/devices` in a temporary directory: each device is a folder of
/// attribute files whose values end in `\n`, as real sysfs prints them. Removed on deinit.
final class FakeSysfsTree {
    let root: String

    init() {
        var template = Array((NSTemporaryDirectory() + "/iio-sysfs-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        root = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    /// Creates `iio:device<number>` with `attributes` (paths relative to the device, such as
    /// `scan_elements/in_accel_x_type`); a value is written with a trailing newline unless it
    /// is nil, which makes an empty directory of that name.
    @discardableResult
    func addDevice(_ number: Int, _ attributes: [String: String?]) -> IIOSysfsDevice {
        let path = root + "/iio:device\(number)"
        make(path)
        for (name, value) in attributes {
            let file = path + "/" + name
            if let value {
                make((file as NSString).deletingLastPathComponent)
                write(file, value)
            } else {
                make(file)
            }
        }
        return IIOSysfsDevice(path: path)
    }

    /// Overwrites or adds one attribute of an existing device.
    func set(_ number: Int, _ name: String, _ value: String) {
        let file = root + "/iio:device\(number)/" + name
        write(file, value)
    }

    /// Removes one attribute.
    func remove(_ number: Int, _ name: String) {
        try? FileManager.default.removeItem(atPath: root + "/iio:device\(number)/" + name)
    }

    /// Adds a trigger directory, which is not a device.
    func addTrigger(_ number: Int, name: String) {
        make(root + "/trigger\(number)")
        write(root + "/trigger\(number)/name", name)
    }

    /// Writes `value` and the newline sysfs ends every value with.
    private func write(_ file: String, _ value: String) {
        let made = FileManager.default.createFile(atPath: file, contents: Data((value + "\n").utf8))
        precondition(made, "cannot create \(file)")
    }

    private func make(_ path: String) {
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
}
