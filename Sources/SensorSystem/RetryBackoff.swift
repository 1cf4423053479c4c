import SensorKitModel

/// How long to wait before trying again to reach something outside that is not there yet or went
/// away — a bus, a service on it, a compositor, a wearable — and whether a failure is worth a log
/// line. The wait starts at `first` and doubles up to `last`; a success starts it over. A reason is
/// worth saying once: repeating the same failure at every attempt would fill the journal of a
/// machine that simply lacks the service, and each line is a wake-up too.
public struct RetryBackoff: Equatable, Sendable {
    /// Nanoseconds before the first retry, and the most between two.
    public let first: Int64
    public let last: Int64
    /// The wait the next failure gets.
    public private(set) var next: Int64
    /// The reason of the last failure said since the last success.
    public private(set) var lastReason: String?

    public init(first: Int64, last: Int64) {
        self.first = max(1, first)
        self.last = max(self.first, last)
        next = self.first
    }

    /// An attempt failed: the wait before the next, and whether `reason` is new since the last
    /// success (say it) or the same as last time (stay quiet).
    public mutating func failed(because reason: String = "") -> (wait: Int64, worthSaying: Bool) {
        let wait = next
        next = min(last, next.multipliedSaturating(by: 2))
        let worthSaying = reason != lastReason
        lastReason = reason
        return (wait, worthSaying)
    }

    /// An attempt succeeded: the next failure waits `first` again. True when failures came before
    /// it (worth a line saying it is back).
    @discardableResult
    public mutating func succeeded() -> Bool {
        defer {
            next = first
            lastReason = nil
        }
        return lastReason != nil
    }

    /// A link that stayed up at least `stableFor` ns before it was lost starts the waits over; one
    /// lost sooner keeps doubling them, so a link that drops at once is not hammered.
    public mutating func lost(upFor: Int64, stableFor: Int64, because reason: String = "") -> (
        wait: Int64, worthSaying: Bool
    ) {
        if upFor >= stableFor { succeeded() }
        return failed(because: reason)
    }
}
