/// PMD PPI frames put on the host timeline. A PPI frame's device timestamp is often 0, and its
/// intervals are irregular, so no device clock can be fitted: the last interval of a frame ends
/// when the frame is received, and each earlier one ends where the next one began (its end minus
/// the next interval). Times strictly increase across frames (a time that would not is pushed 1 ns
/// past its predecessor and counted). Frames that cannot be true — an interval of 0 or longer
/// than `longestIntervalMilliseconds`, more intervals than one notification holds, intervals
/// arriving faster than any heart beats — are dropped as gaps (docs/ble.md, "PPI").
public struct PulseIntervalTimeline: Sendable {
    public struct Beat: Equatable, Sendable {
        /// Host time (receive clock, ns) of the end of the interval: the pulse that closed it.
        public var time: Int64
        public var interval: PMDPulseInterval
    }

    public enum GapReason: Equatable, Sendable {
        case undecodableFrame
        case implausibleFrame
        case implausibleRate
    }

    public enum Event: Equatable, Sendable {
        case beats([Beat], receiveTime: Int64)
        /// Intervals were lost; `after` is the last beat time recorded before (nil when none).
        case gap(GapReason, after: Int64?, receiveTime: Int64)
    }

    public struct Counters: Equatable, Sendable {
        public var frames = 0
        public var duplicates = 0
        public var undecodable = 0
        public var implausible = 0
        public var overRate = 0
        public var clamped = 0
    }

    /// 20 bpm: a longer interval is not a pulse-to-pulse interval.
    public static let longestIntervalMilliseconds: UInt16 = 3000
    /// What one notification of the largest LE ATT MTU (517) can hold: (517 − 3 − 10) / 6.
    public static let maximumFrameIntervals = 84
    /// Beats per host second: 5 (300 bpm), in bursts of 150 (a device that held its first
    /// intervals back sends them together).
    public static let rateBound = (perSecond: 5.0, burst: 150.0)

    public private(set) var counters = Counters()
    private var lastTime: Int64?
    private var previousTimestamp: UInt64?
    private var rate = RateGuard(perSecond: rateBound.perSecond, burst: rateBound.burst)

    public init() {}

    public mutating func receive(_ value: [UInt8], at receiveTime: Int64) -> [Event] {
        let frame: PMDPulseIntervalFrame
        do {
            frame = try PMDPulseIntervalFrame(decoding: value, sampleLimit: Self.maximumFrameIntervals)
        } catch .tooManySamples {
            counters.implausible += 1
            return [.gap(.implausibleFrame, after: lastTime, receiveTime: receiveTime)]
        } catch {
            counters.undecodable += 1
            return [.gap(.undecodableFrame, after: lastTime, receiveTime: receiveTime)]
        }
        if frame.deviceTimestamp != 0, frame.deviceTimestamp == previousTimestamp {
            counters.duplicates += 1
            return []
        }
        guard frame.intervals.allSatisfy({ $0.milliseconds > 0 && $0.milliseconds <= Self.longestIntervalMilliseconds })
        else {
            counters.implausible += 1
            return [.gap(.implausibleFrame, after: lastTime, receiveTime: receiveTime)]
        }
        guard rate.admit(frame.intervals.count, at: receiveTime) else {
            counters.overRate += 1
            return [.gap(.implausibleRate, after: lastTime, receiveTime: receiveTime)]
        }
        previousTimestamp = frame.deviceTimestamp
        counters.frames += 1
        var ends = [Int64](repeating: receiveTime, count: frame.intervals.count)
        for index in ends.indices.dropLast().reversed() {
            ends[index] = ends[index + 1] &- Int64(frame.intervals[index + 1].milliseconds) &* 1_000_000
        }
        var beats: [Beat] = []
        beats.reserveCapacity(ends.count)
        for (end, interval) in zip(ends, frame.intervals) {
            var time = end
            if let previous = beats.last?.time ?? lastTime, time <= previous {
                time = previous &+ 1
                counters.clamped += 1
            }
            beats.append(Beat(time: time, interval: interval))
        }
        lastTime = beats.last?.time ?? lastTime
        return [.beats(beats, receiveTime: receiveTime)]
    }

    /// The stream stopped or the link went down: the next frame starts afresh (its duplicate
    /// check and rate bound), times still never go back.
    public mutating func restart() {
        previousTimestamp = nil
        rate = RateGuard(perSecond: Self.rateBound.perSecond, burst: Self.rateBound.burst)
    }
}
