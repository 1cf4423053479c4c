import CEvdev
import Glibc
import SensorSystem

/// One evdev node opened through libevdev: the only file that touches libevdev. Owned by one
/// thread (libevdev handles are not thread-safe); closed when released.
public final class EvdevDevice {
    /// One event as libevdev hands it over; key events carry their code only until
    /// `KeyClass(evdevCode:)` has classified them on the reading thread.
    public struct Event: Hashable, Sendable {
        public var type: UInt16
        public var code: UInt16
        public var value: Int32
        /// The event's kernel time (`CLOCK_REALTIME` unless the clock id could be set), ns.
        public var time: Int64
    }

    /// How a `drain` ended.
    public enum DrainEnd: Hashable, Sendable {
        /// Nothing more queued: sleep until the node is readable again.
        case empty
        /// The per-call budget ran out with events still queued: call again without sleeping.
        case more
        /// The node is gone (unplugged: ENODEV) or failed; close it.
        case gone(SystemError)
    }

    public static let keyEvent: UInt16 = 1
    /// Events handed over per `drain` call, so that a device flooding its node cannot keep the
    /// reading thread from its interval deadlines.
    public static let eventsPerDrain = 4096

    public let path: String
    public let fileDescriptor: Int32
    /// Whether the kernel accepted boot-clock event times; if not they are `CLOCK_REALTIME`.
    public let eventClockIsBoot: Bool
    private let handle: OpaquePointer

    /// Opens `path` read-only and non-blocking and asks for boot-clock event times (refused by
    /// some kernels and by umockdev; then the events carry `CLOCK_REALTIME`, which only their
    /// differences are used of).
    public init(path: String) throws(SystemError) {
        let fd = try SystemCalls.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        var device: OpaquePointer?
        let status = libevdev_new_from_fd(fd, &device)
        guard status == 0, let device else {
            _ = SystemCalls.close(fd)
            throw SystemError("libevdev_new_from_fd \(path)", errno: -status)
        }
        self.path = path
        fileDescriptor = fd
        handle = device
        eventClockIsBoot = libevdev_set_clock_id(device, CLOCK_BOOTTIME) == 0
    }

    deinit {
        libevdev_free(handle)
        _ = SystemCalls.close(fileDescriptor)
    }

    /// The device's name as its driver gives it ("AT Translated Set 2 keyboard").
    public var name: String { libevdev_get_name(handle).map { String(cString: $0) } ?? "" }

    /// Whether it has the keys of a typing keyboard (letters, space, backspace), not only a
    /// power button or media keys.
    public var isTypingKeyboard: Bool {
        [30, 57, 14].allSatisfy { libevdev_has_event_code(handle, UInt32(Self.keyEvent), $0) == 1 }
    }

    /// Hands queued events to `body`, at most `eventsPerDrain`. A kernel buffer overflow
    /// (`SYN_DROPPED`) is reported to `lost` once; the state libevdev synthesises to resync is
    /// skipped, not counted as key presses.
    public func drain(_ body: (Event) -> Void, lost: () -> Void) -> DrainEnd {
        var event = input_event()
        for _ in 0..<Self.eventsPerDrain {
            let status = libevdev_next_event(handle, LIBEVDEV_READ_FLAG_NORMAL.rawValue, &event)
            switch status {
            case Int32(LIBEVDEV_READ_STATUS_SUCCESS.rawValue):
                body(Event(type: event.type, code: event.code, value: event.value, time: Self.nanoseconds(event.time)))
            case Int32(LIBEVDEV_READ_STATUS_SYNC.rawValue):
                lost()
                if let end = resync() { return end }
            case -EAGAIN:
                return .empty
            default:
                return .gone(SystemError("libevdev_next_event \(path)", errno: -status))
            }
        }
        return .more
    }

    /// Reads libevdev's synthesised resync events until it is back in step.
    private func resync() -> DrainEnd? {
        var event = input_event()
        for _ in 0..<Self.eventsPerDrain {
            let status = libevdev_next_event(handle, LIBEVDEV_READ_FLAG_SYNC.rawValue, &event)
            if status == -EAGAIN { return nil }
            if status < 0 { return .gone(SystemError("libevdev_next_event (sync) \(path)", errno: -status)) }
        }
        return .more
    }

    private static func nanoseconds(_ time: timeval) -> Int64 {
        let (seconds, overflow) = Int64(time.tv_sec).multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return time.tv_sec < 0 ? .min : .max }
        return seconds.addingReportingOverflow(Int64(time.tv_usec) * 1000).partialValue
    }
}
