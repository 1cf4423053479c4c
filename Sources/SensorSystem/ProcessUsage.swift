import Glibc

/// What the whole process has cost so far (`getrusage(RUSAGE_SELF)`): every thread's, those that
/// have ended included — which per-thread counts under /proc/PID/task miss when libdispatch's
/// worker threads come and go.
public struct ProcessUsage: Sendable, Equatable {
    /// User plus system CPU time, microseconds.
    public var cpuMicroseconds: Int64
    /// Times a thread gave up the CPU to wait (a wake-up when it ran again).
    public var voluntarySwitches: Int64
    /// Times a thread was preempted.
    public var involuntarySwitches: Int64

    /// Nil when the kernel refuses (it does not for RUSAGE_SELF).
    public static var current: ProcessUsage? {
        var usage = rusage()
        guard (try? syscall("getrusage(RUSAGE_SELF)", { getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage) })) != nil else {
            return nil
        }
        func microseconds(_ time: timeval) -> Int64 {
            Int64(time.tv_sec).multipliedReportingOverflow(by: 1_000_000).partialValue &+ Int64(time.tv_usec)
        }
        return ProcessUsage(
            cpuMicroseconds: microseconds(usage.ru_utime) &+ microseconds(usage.ru_stime),
            voluntarySwitches: Int64(usage.ru_nvcsw), involuntarySwitches: Int64(usage.ru_nivcsw))
    }
}
