/// Steps per polling interval from a cumulative `in_steps_input` counter (steps "since the last
/// reboot while activated", sysfs-bus-iio), for `CMPedometerData.numberOfSteps`. Pure.
public enum StepCounting {
    /// The steps taken between two reads. The first read after start has no predecessor and
    /// counts nothing (the counter's history is not ours). A counter that went backwards was
    /// reset (chip power-cycle, `in_steps_en` toggled, resume): the new value is what was counted
    /// since the reset, the best lower bound available.
    public static func steps(previous: Int64?, current: Int64) -> Int64 {
        guard let previous else { return 0 }
        // A counter is never below zero: a negative reading is a glitch, taken as a reset like a
        // counter that went backwards (it also keeps `current − previous` from overflowing).
        guard previous >= 0, current >= previous else { return max(0, current) }
        return current - previous
    }
}
