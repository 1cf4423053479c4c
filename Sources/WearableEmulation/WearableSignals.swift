import Glibc

/// Physiological-looking signals for an emulated wearable, all driven by one beat schedule so they
/// agree with each other: a heart rate wandering between about 61 and 79 bpm (a 90 s swing plus
/// breathing at 0.25 Hz), the RR intervals of those beats, an ECG (P, QRS, T waves in µV) and a
/// PPG pulse (three optical channels and ambient) following each beat. Deterministic: the same
/// times give the same values. Times are seconds since the wearable started; a query may lag the
/// newest one by up to a minute (the beats kept).
public struct WearableSignals: Sendable {
    /// Beats kept for lookups behind the newest query (≥ 60 bpm: about a minute).
    static let keptBeats = 64

    private var beats: [Double] = []
    private var nextBeat = 0.4

    public init() {}

    /// Beats per minute at `time` (between 61 and 79).
    public static func heartRate(at time: Double) -> Double {
        70 + 7 * sin(2 * Double.pi * time / 90) + 2 * sin(2 * Double.pi * time * 0.25)
    }

    /// A Heart Rate Measurement (0x2A37) for the beats in `start..<end`: sensor contact detected,
    /// BPM as uint8 from the last RR, then the RR intervals in 1/1024 s, oldest first (none when
    /// `withRR` is false, as optical sensors send).
    public mutating func heartRateMeasurement(from start: Double, to end: Double, withRR: Bool) -> [UInt8] {
        schedule(through: end)
        var rr: [UInt16] = []
        for (index, beat) in beats.enumerated() where index > 0 && beat >= start && beat < end {
            rr.append(UInt16(min(((beat - beats[index - 1]) * 1024).rounded(), 65535)))
        }
        let bpm = UInt8(min(max(Self.heartRate(at: end).rounded(), 30), 250))
        var value: [UInt8] = [withRR && !rr.isEmpty ? 0x16 : 0x06, bpm]
        if withRR { for interval in rr { value += [UInt8(interval & 0xFF), UInt8(interval >> 8)] } }
        return value
    }

    /// One ECG sample in µV at `time`: each beat's P, Q, R, S and T waves plus a slow baseline drift.
    public mutating func electrocardiogram(at time: Double) -> Int32 {
        schedule(through: time + 1)
        var value = 40 * sin(2 * Double.pi * 0.3 * time)
        for beat in beats where abs(time - beat) < 0.6 {
            let offset = time - beat
            value += Self.wave(offset, at: -0.16, width: 0.025, height: 120)
            value += Self.wave(offset, at: -0.03, width: 0.008, height: -120)
            value += Self.wave(offset, at: 0, width: 0.010, height: 1100)
            value += Self.wave(offset, at: 0.03, width: 0.010, height: -260)
            value += Self.wave(offset, at: 0.26, width: 0.045, height: 280)
        }
        return Int32(value.rounded())
    }

    /// One PPG sample at `time`: three optical channels (different gains of the same pulse, a
    /// systolic peak 0.2 s after the beat and a dicrotic wave after it) and ambient light.
    public mutating func photoplethysmogram(at time: Double) -> [Int32] {
        schedule(through: time + 1)
        var pulse = 0.0
        for beat in beats where time - beat > -0.2 && time - beat < 1.2 {
            pulse += Self.wave(time - beat, at: 0.2, width: 0.07, height: 1)
            pulse += Self.wave(time - beat, at: 0.45, width: 0.09, height: 0.35)
        }
        let breathing = 0.2 * sin(2 * Double.pi * 0.25 * time)
        return [
            Int32((-260_000 + 3_000 * (pulse + breathing)).rounded()),
            Int32((-250_000 + 2_600 * (pulse + breathing)).rounded()),
            Int32((-240_000 + 2_200 * (pulse + breathing)).rounded()),
            Int32((-9_000 + 40 * sin(2 * Double.pi * 0.05 * time)).rounded()),
        ]
    }

    /// One accelerometer sample in mG at `time`, as a chest strap sees it: gravity along −z, the
    /// chest rising with breathing on y and a small jolt on x at each beat.
    public mutating func acceleration(at time: Double) -> [Int32] {
        schedule(through: time + 1)
        var jolt = 0.0
        for beat in beats where abs(time - beat) < 0.3 { jolt += Self.wave(time - beat, at: 0.05, width: 0.03, height: 25) }
        let breathing = 40 * sin(2 * Double.pi * 0.25 * time)
        return [Int32(jolt.rounded()), Int32((60 + breathing).rounded()), Int32((-998 + breathing / 4).rounded())]
    }

    /// The PP intervals (ms) of the beats in `start..<end`, oldest first, with the heart rate each
    /// one makes: what an optical sensor's PPI stream reports.
    public mutating func pulseIntervals(from start: Double, to end: Double) -> [(beatsPerMinute: UInt8, milliseconds: UInt16)] {
        schedule(through: end)
        var result: [(UInt8, UInt16)] = []
        for (index, beat) in beats.enumerated() where index > 0 && beat >= start && beat < end {
            let seconds = beat - beats[index - 1]
            result.append((UInt8(min(max((60 / seconds).rounded(), 30), 250)), UInt16(min((seconds * 1000).rounded(), 65535))))
        }
        return result
    }

    private static func wave(_ offset: Double, at center: Double, width: Double, height: Double) -> Double {
        let z = (offset - center) / width
        return height * exp(-0.5 * z * z)
    }

    private mutating func schedule(through time: Double) {
        while nextBeat <= time + 0.7 {
            beats.append(nextBeat)
            nextBeat += 60 / Self.heartRate(at: nextBeat)
        }
        if beats.count > Self.keptBeats { beats.removeFirst(beats.count - Self.keptBeats) }
    }
}
