/// One PMD stream (ECG or PPG) put on the host timeline: decodes each data notification, drops
/// duplicates, maps device time through `DeviceClockMapping`, and turns a device clock that reset
/// or jumped, frames that went missing and frames that cannot be decoded into recorded gaps —
/// never into reordered or invented samples. Frames are held up to `hold` so the fit
/// has seen the pairs after them. Sample times strictly increase (docs/ble.md, "One timeline").
public struct PMDStreamTimeline: Sendable {
    public struct TimedFrame: Equatable, Sendable {
        public var frame: PMDFrame
        /// Host time (receive clock, ns) of each sample, oldest first; strictly increasing.
        public var sampleTimes: [Int64]
        public var receiveTime: Int64
        /// How far the mapping may be off for this frame (ns).
        public var uncertainty: Int64
    }

    public enum GapReason: Equatable, Sendable {
        /// The device clock fell back to its power-on instant (H10: 2019-01-01).
        case deviceClockReset
        /// Device time went back, or forward by more than the time that passed on the host.
        case deviceClockJump
        /// Device time advanced by more than the frames received cover: frames were lost.
        case framesMissing
        /// A frame whose payload was not whole samples, or that could not be decoded at all.
        case undecodableFrame
        /// A frame holding more samples than the negotiated rate fits in one frame
        /// (`maximumFrameSeconds`) or in the device time since the previous frame.
        case implausibleFrame
        /// Samples arriving faster than the negotiated rate allows (`RateGuard`): a flood.
        case implausibleRate
        /// The device clock's rate disagrees with the host clock's (`ClockRateCheck`): its frames
        /// are refused until it agrees again.
        case deviceClockRate
    }

    public struct Gap: Equatable, Sendable {
        public var reason: GapReason
        /// The last sample time recorded before the gap (nil when nothing was recorded yet).
        public var after: Int64?
        public var receiveTime: Int64
    }

    public enum Event: Equatable, Sendable {
        case frame(TimedFrame)
        case gap(Gap)
    }

    public struct Counters: Equatable, Sendable {
        public var frames = 0
        public var duplicates = 0
        public var undecodable = 0
        public var otherMeasurement = 0
        public var resets = 0
        public var jumps = 0
        public var missing = 0
        /// Sample times pushed forward to keep them strictly increasing.
        public var clamped = 0
        /// Frames refused for holding more samples than their rate and time allow.
        public var implausible = 0
        /// Frames refused for arriving faster than the rate allows.
        public var overRate = 0
        /// Times the device clock's rate was found to disagree with the host's.
        public var clockRate = 0
        /// Frames refused while the device clock's rate disagrees.
        public var refusedForClock = 0
    }

    /// How long frames wait for the pairs after them before they go out: `verified` once the
    /// clock check has agreed in the current mapping, `unverified` until then.
    public struct Hold: Hashable, Sendable {
        public var verified: Int64
        public var unverified: Int64

        public init(verified: Int64, unverified: Int64) {
            self.verified = max(0, verified)
            self.unverified = max(0, unverified)
        }

        /// The study profile's: each frame timed by a fit that has seen the second after it.
        public static let fit = Hold(verified: 1_000_000_000, unverified: 4_000_000_000)
        /// The lab profile's: a live subscriber gets each frame on receipt, timed by the fit so
        /// far; only a mapping whose device clock is not yet checked still holds its frames, so
        /// none goes out timed by a clock found broken a moment later.
        public static let onReceipt = Hold(verified: 0, unverified: 4_000_000_000)
    }

    public let measurementType: PMDMeasurementType
    public let samplePeriodNanoseconds: Int64
    public let hold: Hold
    /// The most samples one frame may hold: `maximumFrameSeconds` at the negotiated rate (an
    /// H10's ECG frame holds 73 samples, 0.56 s at 130 Hz).
    public let maximumFrameSamples: Int
    public private(set) var counters = Counters()
    public static let maximumFrameSeconds = 2
    /// Samples per host second a stream may deliver: 1.5 × its rate, in bursts of 3 s of samples
    /// (frames a link held back arrive together).
    public static let rateMargin = 1.5
    public static let burstSeconds = 3.0

    private var mapping: DeviceClockMapping
    private var rate: RateGuard
    private var clockCheck = ClockRateCheck()
    /// The device clock's rate disagreed: frames are refused until the check agrees again.
    public private(set) var clockRefused = false
    /// The clock check agreed since the mapping (re)started. Until it does, frames are held four
    /// times as long (`hold.unverified`), so none goes out timed by a clock found broken a moment later.
    private var clockVerified = false
    private var pending: [(frame: PMDFrame, receive: Int64)] = []
    private var previous: (type: UInt8, frameType: UInt8, device: UInt64, receive: Int64, samples: Int)?
    /// The last frame released in the current mapping: (device time, host time of its last sample).
    private var lastReleased: (device: UInt64, time: Int64)?
    private var lastSampleTime: Int64?

    /// Frames held `holdNanoseconds`, four times as long until the clock check agreed.
    public init(measurementType: PMDMeasurementType, sampleRateHz: Int, holdNanoseconds: Int64) {
        let hold = max(0, holdNanoseconds)
        self.init(measurementType: measurementType, sampleRateHz: sampleRateHz, hold: Hold(verified: hold, unverified: hold &* 4))
    }

    public init(measurementType: PMDMeasurementType, sampleRateHz: Int, hold: Hold = .fit) {
        self.measurementType = measurementType
        samplePeriodNanoseconds = 1_000_000_000 / Int64(max(1, sampleRateHz))
        self.hold = hold
        let rate = max(1, sampleRateHz)
        maximumFrameSamples = max(16, rate * Self.maximumFrameSeconds)
        self.rate = RateGuard(perSecond: Double(rate) * Self.rateMargin, burst: Double(rate) * Self.burstSeconds)
        mapping = DeviceClockMapping()
    }

    /// One Data-characteristic notification received at `receiveTime` (host ns).
    public mutating func receive(_ value: [UInt8], at receiveTime: Int64) -> [Event] {
        let frame: PMDFrame
        do {
            frame = try PMDFrame(decoding: value, sampleLimit: maximumFrameSamples)
        } catch .unsupportedFrame(let type, _) where type != measurementType.rawValue {
            counters.otherMeasurement += 1
            return []
        } catch .tooManySamples {
            counters.implausible += 1
            return refuse(.implausibleFrame, at: receiveTime)
        } catch {
            counters.undecodable += 1
            // The frames held so far came before the lost one: they go out first, so the gap
            // starts after the last of them, not after the last frame released.
            let held = release(upTo: Int64.max)
            return held + [.gap(Gap(reason: .undecodableFrame, after: lastSampleTime, receiveTime: receiveTime))]
        }
        guard frame.measurementType == measurementType.rawValue else {
            counters.otherMeasurement += 1
            return []
        }
        var events: [Event] = []
        if let previous {
            if previous.type == frame.measurementType, previous.frameType == frame.frameType,
                previous.device == frame.deviceTimestamp
            {
                counters.duplicates += 1
                return []
            }
            let deviceAdvance =
                frame.deviceTimestamp >= previous.device ? Int64(clamping: frame.deviceTimestamp - previous.device) : -1
            let hostAdvance = receiveTime &- previous.receive
            // More samples than the device time since the previous frame holds (twice over,
            // and two samples of slack for rounding): the frame's count cannot be true.
            if deviceAdvance > 0, deviceAdvance <= max(0, hostAdvance) + 1_000_000_000,
                Int64(frame.samples.count) > 2 * (deviceAdvance / samplePeriodNanoseconds) + 2
            {
                counters.implausible += 1
                return refuse(.implausibleFrame, at: receiveTime)
            }
            if deviceAdvance <= 0 || deviceAdvance > max(0, hostAdvance) + 1_000_000_000 {
                let isReset =
                    frame.deviceTimestamp >= PMDTime.resetInstant
                    && frame.deviceTimestamp < PMDTime.resetInstant + 86_400_000_000_000
                    && !(previous.device >= PMDTime.resetInstant && previous.device < frame.deviceTimestamp)
                if isReset { counters.resets += 1 } else { counters.jumps += 1 }
                events += release(upTo: Int64.max)
                events.append(
                    .gap(
                        Gap(
                            reason: isReset ? .deviceClockReset : .deviceClockJump, after: lastSampleTime,
                            receiveTime: receiveTime)))
                mapping.reset()
                lastReleased = nil
            } else if deviceAdvance > Int64(frame.samples.count) * samplePeriodNanoseconds * 3 / 2 {
                counters.missing += 1
                events += release(upTo: Int64.max)
                events.append(.gap(Gap(reason: .framesMissing, after: lastSampleTime, receiveTime: receiveTime)))
                lastReleased = nil
            }
        }
        guard rate.admit(frame.samples.count, at: receiveTime) else {
            counters.overRate += 1
            return events + refuse(.implausibleRate, at: receiveTime)
        }
        if case .gap(let gap)? = events.last, gap.reason != .framesMissing {
            clockCheck.reset()  // a reset or jump: the new clock is checked afresh
            clockVerified = false
        }
        previous = (frame.measurementType, frame.frameType, frame.deviceTimestamp, receiveTime, frame.samples.count)
        switch clockCheck.observe(device: frame.deviceTimestamp, receive: receiveTime) {
        case .disagrees where !clockRefused:
            // Everything held was timed by the disagreeing clock: it is part of the gap.
            counters.clockRate += 1
            clockRefused = true
            clockVerified = false
            pending.removeAll()
            mapping.reset()
            lastReleased = nil
            clockCheck.reset()
            _ = clockCheck.observe(device: frame.deviceTimestamp, receive: receiveTime)
            counters.refusedForClock += 1
            return events + [.gap(Gap(reason: .deviceClockRate, after: lastSampleTime, receiveTime: receiveTime))]
        case .disagrees:
            clockCheck.reset()  // still disagrees: look at a fresh window
            _ = clockCheck.observe(device: frame.deviceTimestamp, receive: receiveTime)
        case .agrees where clockRefused:
            clockRefused = false  // frames flow again from the next one, on a new mapping
            clockVerified = true
            counters.refusedForClock += 1
            return events
        case .agrees:
            clockVerified = true
        default:
            break
        }
        if clockRefused {
            counters.refusedForClock += 1
            return events
        }
        counters.frames += 1
        mapping.observe(device: frame.deviceTimestamp, receive: receiveTime)
        pending.append((frame, receiveTime))
        events += release(upTo: heldLimit(receiveTime))
        return events
    }

    private func heldLimit(_ now: Int64) -> Int64 {
        now &- (clockVerified ? hold.verified : hold.unverified)
    }

    /// Drops the frame just received as a gap: what was held before it goes out first.
    private mutating func refuse(_ reason: GapReason, at receiveTime: Int64) -> [Event] {
        let held = release(upTo: Int64.max)
        return held + [.gap(Gap(reason: reason, after: lastSampleTime, receiveTime: receiveTime))]
    }

    /// Releases the frames held longer than their `hold` at host time `now`: a stream whose
    /// frames stop coming still delivers its last second.
    public mutating func releaseHeld(now: Int64) -> [Event] {
        release(upTo: heldLimit(now))
    }

    /// Releases every held frame (the stream stopped or the link went down) and forgets the
    /// device clock: the next frame starts a new mapping.
    public mutating func finish() -> [Event] {
        let events = release(upTo: Int64.max)
        mapping.reset()
        clockCheck.reset()
        clockRefused = false
        clockVerified = false
        previous = nil
        lastReleased = nil
        return events
    }

    private mutating func release(upTo limit: Int64) -> [Event] {
        var events: [Event] = []
        while let first = pending.first, first.receive <= limit {
            pending.removeFirst()
            events.append(.frame(timed(first.frame, receivedAt: first.receive)))
        }
        return events
    }

    private mutating func timed(_ frame: PMDFrame, receivedAt receive: Int64) -> TimedFrame {
        let estimate = mapping.estimate(device: frame.deviceTimestamp) ?? (receive, 0)
        // The last sample cannot have been taken after it was received.
        var last = min(estimate.time, receive)
        let count = Int64(frame.samples.count)
        var spacing = samplePeriodNanoseconds
        if let lastReleased, frame.deviceTimestamp > lastReleased.device, last > lastReleased.time {
            spacing = (last - lastReleased.time) / count
        } else {
            spacing = Int64((Double(samplePeriodNanoseconds) * (1 + mapping.drift)).rounded())
        }
        spacing = max(1, spacing)
        var times: [Int64] = []
        times.reserveCapacity(frame.samples.count)
        for index in 0..<count {
            var time = last &- (count - 1 - index) &* spacing
            if let previousTime = times.last ?? lastSampleTime, time <= previousTime {
                time = previousTime &+ 1
                counters.clamped += 1
            }
            times.append(time)
        }
        last = times.last ?? last
        lastSampleTime = last
        lastReleased = (frame.deviceTimestamp, last)
        return TimedFrame(frame: frame, sampleTimes: times, receiveTime: receive, uncertainty: estimate.uncertainty)
    }
}
