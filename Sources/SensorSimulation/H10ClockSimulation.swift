import Glibc

/// An H10 streaming ECG (130 Hz, 73 samples a frame) whose crystal runs `driftPPM` fast against
/// the host, seen through a BLE link: a frame is ready when its last sample is taken, waits for
/// the next connection event (every `connectionIntervalNanoseconds`), now and then misses one,
/// and the host adds scheduling jitter before stamping it. Gives each frame's bytes, its receive
/// time and the true host time of every sample — the truth a clock mapping is judged against.
/// Deterministic for a given seed.
public struct H10ClockSimulation: Sendable {
    public struct Frame: Sendable {
        public var bytes: [UInt8]
        public var deviceTimestamp: UInt64
        public var receiveTime: Int64
        public var trueSampleTimes: [Int64]
    }

    public static let sampleRate = 130
    public static let samplesPerFrame = 73
    /// One device sample period in device nanoseconds.
    public static let devicePeriod = 1e9 / Double(sampleRate)

    public var driftPPM: Double
    public var connectionIntervalNanoseconds: Int64
    /// Chance that a frame misses its connection event and goes one interval later.
    public var missedEventProbability: Double
    /// Fixed part of the link and host latency.
    public var baseLatencyNanoseconds: Int64
    /// Mean of the exponential host scheduling jitter.
    public var schedulingJitterNanoseconds: Double
    public var hostStart: Int64
    public var deviceStart: UInt64

    private var frameIndex = 0
    private var random: UInt64
    private let eventPhase: Int64

    public init(
        seed: UInt64, driftPPM: Double = 20, connectionIntervalNanoseconds: Int64 = 30_000_000,
        missedEventProbability: Double = 0.02, baseLatencyNanoseconds: Int64 = 500_000,
        schedulingJitterNanoseconds: Double = 300_000, hostStart: Int64 = 5_000_000_000,
        deviceStart: UInt64 = 820_000_000_000_000_000
    ) {
        self.driftPPM = driftPPM
        self.connectionIntervalNanoseconds = connectionIntervalNanoseconds
        self.missedEventProbability = missedEventProbability
        self.baseLatencyNanoseconds = baseLatencyNanoseconds
        self.schedulingJitterNanoseconds = schedulingJitterNanoseconds
        self.hostStart = hostStart
        self.deviceStart = deviceStart
        random = seed | 1
        eventPhase = Int64(seed % UInt64(max(1, connectionIntervalNanoseconds)))
    }

    private mutating func uniform() -> Double {
        // SplitMix64.
        random &+= 0x9E37_79B9_7F4A_7C15
        var z = random
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Double(z >> 11) / Double(1 << 53)
    }

    /// The true host time of device sample `index`.
    public func hostTime(ofSample index: Int) -> Int64 {
        hostStart + Int64((Double(index) * Self.devicePeriod / (1 + driftPPM * 1e-6)).rounded())
    }

    public mutating func next() -> Frame {
        let first = frameIndex * Self.samplesPerFrame
        let last = first + Self.samplesPerFrame - 1
        frameIndex += 1
        let deviceTimestamp = deviceStart + UInt64((Double(last) * Self.devicePeriod).rounded())
        let truth = (first...last).map(hostTime(ofSample:))
        let ready = truth[truth.count - 1] + baseLatencyNanoseconds
        let interval = connectionIntervalNanoseconds
        var event = ready + (interval - ((ready - eventPhase) % interval + interval) % interval)
        while uniform() < missedEventProbability { event += interval }
        let receive = event + Int64(-schedulingJitterNanoseconds * log(1 - uniform()))
        var bytes: [UInt8] = [0x00]
        bytes += (0..<8).map { UInt8(truncatingIfNeeded: deviceTimestamp >> (8 * $0)) }
        bytes.append(0x00)
        for index in first...last {
            let microvolts = UInt32(bitPattern: Int32(index % 400) - 200)
            bytes += [UInt8(microvolts & 0xFF), UInt8(microvolts >> 8 & 0xFF), UInt8(microvolts >> 16 & 0xFF)]
        }
        return Frame(bytes: bytes, deviceTimestamp: deviceTimestamp, receiveTime: receive, trueSampleTimes: truth)
    }
}
