import CUdev
import Dispatch
import Glibc
import SensorSystem

/// A device as udev reports it: from enumeration (`action == nil`) or from a uevent.
public struct UdevDevice: Hashable, Sendable {
    public enum Action: Hashable, Sendable {
        case add, remove, change, other(String)

        init(_ text: String) {
            switch text {
            case "add": self = .add
            case "remove": self = .remove
            case "change": self = .change
            default: self = .other(text)
            }
        }
    }

    /// Nil for devices found by enumeration.
    public var action: Action?
    /// `/sys/devices/…/iio:device0`: the device's sysfs directory, and its identity for
    /// de-duplication between enumeration and events.
    public var syspath: String
    /// `iio:device0`, `event3`.
    public var sysname: String
    /// `/dev/iio:device0` (`DEVNAME`), nil when the device has no node.
    public var devnode: String?
    /// udev properties after rules ran (`ACCEL_MOUNT_MATRIX`, `ID_INPUT_KEYBOARD`, …).
    public var properties: [String: String]

    public init(action: Action? = nil, syspath: String, sysname: String, devnode: String?, properties: [String: String]) {
        self.action = action
        self.syspath = syspath
        self.sysname = sysname
        self.devnode = devnode
        self.properties = properties
    }
}

/// Discovery of one subsystem's devices through libudev — the only file that touches libudev.
///
/// `init` creates the `"udev"` netlink monitor, filters it to the subsystem and enables it
/// **before** anything is enumerated, so a device that appears during enumeration is seen at
/// least once (the caller de-duplicates by syspath; docs/iio.md §12.7). The monitor fd is non-blocking
/// and CLOEXEC, suitable for a `DispatchSourceRead` on `queue`; on readability call `receive()`.
/// Devices whose sysname `accepts` refuses (IIO's triggers, input's `inputN` parents) are left out.
///
/// libudev handles are not thread-safe: every method must run on `queue`.
public final class UdevMonitor: @unchecked Sendable {
    // @unchecked: the udev handles are touched only on `queue` (dispatchPrecondition) and in deinit.
    public let queue: DispatchQueue
    /// The monitor's socket (`udev_monitor_get_fd`). Never blocks.
    public let fileDescriptor: Int32
    public let subsystem: String
    private let accepts: @Sendable (String) -> Bool
    private let udev: OpaquePointer
    private let monitor: OpaquePointer

    /// `udev_new`, `udev_monitor_new_from_netlink(udev, "udev")`,
    /// `udev_monitor_filter_add_match_subsystem_devtype(m, subsystem, NULL)`,
    /// `udev_monitor_enable_receiving`. Does not block. Without a running udevd (containers)
    /// libudev still creates the monitor; it then receives nothing.
    public init(
        subsystem: String, queue: DispatchQueue, accepts: @escaping @Sendable (_ sysname: String) -> Bool
    ) throws(SystemError) {
        self.queue = queue
        self.subsystem = subsystem
        self.accepts = accepts
        guard let udev = udev_new() else { throw SystemError("udev_new", errno: errno) }
        guard let monitor = udev_monitor_new_from_netlink(udev, "udev") else {
            let error = errno
            udev_unref(udev)
            throw SystemError("udev_monitor_new_from_netlink", errno: error)
        }
        do throws(SystemError) {
            _ = try Self.check(
                "udev_monitor_filter_add_match_subsystem_devtype",
                udev_monitor_filter_add_match_subsystem_devtype(monitor, subsystem, nil))
            _ = try Self.check("udev_monitor_enable_receiving", udev_monitor_enable_receiving(monitor))
            let fd = try Self.check("udev_monitor_get_fd", udev_monitor_get_fd(monitor))
            let flags = try syscall("fcntl(F_GETFL)") { fcntl(fd, F_GETFL) }
            if flags & O_NONBLOCK == 0 {
                _ = try syscall("fcntl(F_SETFL)") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
            }
            fileDescriptor = fd
        } catch {
            udev_monitor_unref(monitor)
            udev_unref(udev)
            throw error
        }
        self.udev = udev
        self.monitor = monitor
    }

    deinit {
        udev_monitor_unref(monitor)
        udev_unref(udev)
    }

    /// Every device of the subsystem present now (`udev_enumerate_add_match_subsystem`,
    /// `udev_enumerate_scan_devices`), sorted by syspath. Reads sysfs and the udev database:
    /// may block briefly. A machine without such devices gives an empty list.
    public func enumerate() throws(SystemError) -> [UdevDevice] {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let enumerator = udev_enumerate_new(udev) else { throw SystemError("udev_enumerate_new", errno: errno) }
        defer { udev_enumerate_unref(enumerator) }
        _ = try Self.check("udev_enumerate_add_match_subsystem", udev_enumerate_add_match_subsystem(enumerator, subsystem))
        _ = try Self.check("udev_enumerate_scan_devices", udev_enumerate_scan_devices(enumerator))
        var devices: [UdevDevice] = []
        var entry = udev_enumerate_get_list_entry(enumerator)
        while let current = entry {
            if let syspath = udev_list_entry_get_name(current),
                let device = udev_device_new_from_syspath(udev, syspath)
            {
                if let found = self.device(device, action: nil) { devices.append(found) }
                udev_device_unref(device)
            }
            entry = udev_list_entry_get_next(current)
        }
        return devices.sorted { $0.syspath < $1.syspath }
    }

    /// Drains pending uevents (`udev_monitor_receive_device` until NULL). Never blocks.
    public func receive() -> [UdevDevice] {
        dispatchPrecondition(condition: .onQueue(queue))
        var events: [UdevDevice] = []
        while let device = udev_monitor_receive_device(monitor) {
            let action = udev_device_get_action(device).map { UdevDevice.Action(String(cString: $0)) }
            if let found = self.device(device, action: action) { events.append(found) }
            udev_device_unref(device)
        }
        return events
    }

    /// A `DispatchSourceRead` on the monitor fd that hands each batch of events to `handler` on
    /// `queue`. The caller resumes it and cancels it before dropping the monitor.
    public func makeEventSource(_ handler: @escaping @Sendable ([UdevDevice]) -> Void) -> any DispatchSourceRead {
        let source = DispatchSource.makeReadSource(fileDescriptor: fileDescriptor, queue: queue)
        source.setEventHandler { [self] in
            let events = receive()
            if !events.isEmpty { handler(events) }
        }
        return source
    }

    /// Hands `handle` the devices present now and then every later event, all on `queue` and in
    /// that order (the monitor listens before enumerating, so nothing falls between). Returns the
    /// running event source, which the caller cancels before dropping the monitor.
    public func follow(_ handle: @escaping @Sendable ([UdevDevice]) -> Void) throws(SystemError) -> any DispatchSourceRead {
        dispatchPrecondition(condition: .onQueue(queue))
        let present = try enumerate()
        let source = makeEventSource(handle)
        handle(present)
        source.resume()
        return source
    }

    /// The device's facts, or nil for one whose sysname `accepts` refuses.
    private func device(_ device: OpaquePointer, action: UdevDevice.Action?) -> UdevDevice? {
        guard let syspath = udev_device_get_syspath(device).map({ String(cString: $0) }),
            let sysname = udev_device_get_sysname(device).map({ String(cString: $0) }),
            accepts(sysname)
        else { return nil }
        var properties: [String: String] = [:]
        var entry = udev_device_get_properties_list_entry(device)
        while let current = entry {
            if let name = udev_list_entry_get_name(current) {
                properties[String(cString: name)] = udev_list_entry_get_value(current).map { String(cString: $0) } ?? ""
            }
            entry = udev_list_entry_get_next(current)
        }
        let devnode = udev_device_get_devnode(device).map { String(cString: $0) } ?? properties["DEVNAME"]
        return UdevDevice(action: action, syspath: syspath, sysname: sysname, devnode: devnode, properties: properties)
    }

    /// libudev returns a negative errno on failure.
    private static func check(_ call: String, _ result: Int32) throws(SystemError) -> Int32 {
        if result < 0 { throw SystemError(call, errno: -result) }
        return result
    }
}
