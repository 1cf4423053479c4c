/// Boot-clock times for key events. The kernel stamps each event on the clock its reader chose
/// (boot time where `EVIOCSCLOCKID` was accepted, else the wall clock); the stamp is mapped onto
/// the boot clock and then held inside what is known for certain: no earlier than the previous
/// event or the start of the previous read (which drained the node, so everything later was
/// queued after it), no later than this read. A stepped wall clock or a hostile stamp cannot
/// move a press into another interval or make time run backwards.
public struct KeyEventTimes: Hashable, Sendable {
    private var earliest: Int64

    /// `start`: when reading began (boot ns).
    public init(start: Int64) { earliest = start }

    /// `offset` is the boot clock minus the event clock and `readAt` the boot clock, both read
    /// when this read began.
    public mutating func boot(eventTime: Int64, offset: Int64, readAt: Int64) -> Int64 {
        let (mapped, overflow) = eventTime.addingReportingOverflow(offset)
        let time = min(max(overflow ? readAt : mapped, earliest), max(readAt, earliest))
        earliest = time
        return time
    }

    /// The read that began at `readAt` drained the node.
    public mutating func drained(at readAt: Int64) { earliest = max(earliest, readAt) }
}
