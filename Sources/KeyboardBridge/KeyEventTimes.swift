/// Boot-clock times for key events. The kernel stamps each event on the clock its reader chose
/// (boot time where `EVIOCSCLOCKID` was accepted, else the wall clock); only the differences
/// between events are trusted, and the result is kept between the previous event and the time
/// of the read, so a stepped wall clock or a hostile timestamp cannot move counts into another
/// interval or make time run backwards.
public struct KeyEventTimes: Hashable, Sendable {
    private var last: Int64 = .min

    public init() {}

    /// `offset` is the boot clock minus the event clock and `readAt` the boot clock, both read
    /// when the read began.
    public mutating func boot(eventTime: Int64, offset: Int64, readAt: Int64) -> Int64 {
        let (mapped, overflow) = eventTime.addingReportingOverflow(offset)
        let time = min(max(overflow ? readAt : mapped, last), max(readAt, last))
        last = time
        return time
    }
}
