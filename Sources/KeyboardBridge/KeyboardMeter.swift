/// Typing metrics over fixed intervals: key classes and times in, one `KeyboardInterval` out per
/// interval that ends. A pure value, driven by the reading thread with times from the boot clock.
public struct KeyboardMeter: Hashable, Sendable {
    /// Intervals a long sleep (or a suspend) may close at once; longer stretches close as one
    /// interval up to the present, so a wake after days cannot emit unbounded records.
    public static let maximumIntervalsPerClose = 96

    public let intervalLength: Int64
    public private(set) var intervalStart: Int64
    private var tally: TypingTally

    /// Starts the first interval at `start` (boot ns); `intervalLength` ns each (at least 1 s).
    public init(start: Int64, intervalLength: Int64, thresholds: TypingTally.Thresholds = .init()) {
        self.intervalLength = max(1_000_000_000, intervalLength)
        intervalStart = start
        tally = TypingTally(thresholds: thresholds)
    }

    /// When the current interval ends; nil when that is past the clock's range.
    public var intervalEnd: Int64? {
        let (end, overflow) = intervalStart.addingReportingOverflow(intervalLength)
        return overflow ? nil : end
    }

    /// A key event: first closes the intervals that ended before `time`, then counts it in the
    /// interval it falls in. Returns the intervals closed.
    public mutating func record(_ key: KeyClass, _ action: KeyAction, at time: Int64) -> [KeyboardInterval] {
        let closed = close(upTo: time)
        tally.record(key, action, at: time)
        return closed
    }

    /// The kernel dropped events at `time`.
    public mutating func eventsLost(at time: Int64) -> [KeyboardInterval] {
        let closed = close(upTo: time)
        tally.eventsLost()
        return closed
    }

    /// Closes every interval that ended at or before `now`.
    public mutating func close(upTo now: Int64) -> [KeyboardInterval] {
        var closed: [KeyboardInterval] = []
        while let end = intervalEnd, end <= now {
            if closed.count == Self.maximumIntervalsPerClose - 1 {
                closed.append(finish(at: now))
                break
            }
            closed.append(finish(at: end))
        }
        return closed
    }

    /// Closes the current interval early at `now` (recording stops, the keyboard is unplugged);
    /// the next one starts there.
    public mutating func finish(at now: Int64) -> KeyboardInterval {
        let end = max(now, intervalStart)
        let interval = KeyboardInterval(start: intervalStart, end: end, counts: tally.takeCounts())
        intervalStart = end
        return interval
    }
}

/// What one interval of one keyboard counted, from `start` to `end` (boot ns).
public struct KeyboardInterval: Hashable, Sendable {
    public var start: Int64
    public var end: Int64
    public var counts: TypingTally.Counts

    public init(start: Int64, end: Int64, counts: TypingTally.Counts) {
        self.start = start
        self.end = end
        self.counts = counts
    }
}
