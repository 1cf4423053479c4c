import CSensorLinux
import Glibc

/// A one-shot alarm on `CLOCK_MONOTONIC` (a timerfd): any thread may set it, and the thread that
/// sleeps in `poll` on `fileDescriptor` (a `ReadinessLoop`) wakes when it rings.
///
/// Why not a `DispatchSourceTimer`: on Linux, setting one from a worker wakes libdispatch's
/// manager thread to reprogram its own timer, and one that fires wakes the manager and then a
/// worker; an alarm costs only the wake-up of the thread that polls it (docs/store.md, "When the
/// writer wakes").
public final class AlarmTimer: Sendable {
    public let fileDescriptor: Int32

    /// `timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)`, disarmed. Does not block.
    public init() throws(SystemError) {
        fileDescriptor = try syscall("timerfd_create") { csl_alarm_timer() }
    }

    deinit { _ = SystemCalls.close(fileDescriptor) }

    /// `timerfd_settime` with an absolute deadline in monotonic nanoseconds (`DispatchTime`'s
    /// uptime clock); one already past rings at once. Replaces any earlier setting. Does not
    /// block; fails only for a bad descriptor of our own, which is a bug.
    public func set(at deadline: UInt64) {
        // 0 would disarm: the earliest deadline there is rings at once instead.
        setting(max(deadline, 1))
    }

    /// `timerfd_settime` to zero: the alarm will not ring. Does not block.
    public func disarm() {
        setting(0)
    }

    private func setting(_ deadline: UInt64) {
        do throws(SystemError) {
            _ = try syscall("timerfd_settime(\(fileDescriptor))") { csl_set_alarm(fileDescriptor, deadline) }
        } catch {
            preconditionFailure("\(error)")
        }
    }

    /// `read` of the expiry count (non-blocking), so `poll` stops reporting the descriptor.
    /// True when the alarm had rung since the last call.
    @discardableResult
    public func acknowledge() -> Bool {
        var count: UInt64 = 0
        let result = withUnsafeMutableBytes(of: &count) { bytes in
            try? SystemCalls.readNonBlocking(fileDescriptor, into: bytes, "timerfd")
        }
        if case .done? = result { return count > 0 }
        return false
    }
}
