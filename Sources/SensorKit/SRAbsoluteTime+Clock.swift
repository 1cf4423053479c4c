import SensorKitModel

// Apple's clock-reading functions on SRAbsoluteTime, with Apple's exact labels. They read the
// clock and timeline of `SensorKitEnvironment.current`.
extension SRAbsoluteTime {
    /// `SRAbsoluteTimeGetCurrent()`: now on the SR timeline (ticks across sleep and reboots).
    public static func current() -> SRAbsoluteTime {
        let environment = SensorKitEnvironment.current
        return environment.timeline.now(environment.clock) ?? SRAbsoluteTime(.nan)
    }

    /// `SRAbsoluteTimeFromContinuousTime`: on Linux the continuous clock is `CLOCK_BOOTTIME` in
    /// nanoseconds of the current boot (Apple's `mach_continuous_time`, which must come from the
    /// same device and boot session).
    public static func fromContinuousTime(_continuous continuous: UInt64) -> SRAbsoluteTime {
        let environment = SensorKitEnvironment.current
        let instant = BootInstant(boot: environment.clock.bootID, nanoseconds: Int64(clamping: continuous))
        return environment.timeline.srTime(of: instant) ?? SRAbsoluteTime(.nan)
    }

    /// `SRAbsoluteTimeFromCFAbsoluteTime`, using the current wall-clock offset (as Apple documents:
    /// a wall clock 5 s fast gives a result 5 s fast).
    public static func fromCFAbsoluteTime(_cf cf: CFAbsoluteTime) -> SRAbsoluteTime {
        let environment = SensorKitEnvironment.current
        return environment.timeline.fromCFAbsoluteTime(cf, clock: environment.clock) ?? SRAbsoluteTime(.nan)
    }

    /// `SRAbsoluteTimeToCFAbsoluteTime`, using the current wall-clock offset.
    public func toCFAbsoluteTime() -> CFAbsoluteTime {
        let environment = SensorKitEnvironment.current
        return environment.timeline.toCFAbsoluteTime(self, clock: environment.clock) ?? .nan
    }
}

extension Date {
    /// Apple's `NSDate(srAbsoluteTime:)`.
    public init(srAbsoluteTime: SRAbsoluteTime) {
        self.init(timeIntervalSinceReferenceDate: srAbsoluteTime.toCFAbsoluteTime())
    }

    /// Apple's `NSDate.srAbsoluteTime`.
    public var srAbsoluteTime: SRAbsoluteTime {
        SRAbsoluteTime.fromCFAbsoluteTime(_cf: timeIntervalSinceReferenceDate)
    }
}
