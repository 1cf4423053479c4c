import SensorKitModel

/// What a wearable's streams store (docs/ble.md, "What is stored"): their descriptors and the
/// columns of a heart-rate measurement or a PMD frame, each named by its family's stored keys.
/// Used by the BLE driver and by the bench.
public enum WearableSamples {
    /// RR intervals kept per heart-rate measurement (`rr0`…`rr15`).
    public static let rrColumns = HeartRateFamily.rrLimit

    /// The sensors a wearable records; the configuration accepts only these.
    public static let sensors: [SRSensor] = [.heartRate, .onWristState, .electrocardiogram, .photoplethysmogram, .accelerometer]

    /// A stream's identity: the wearable's `SRDevice` fields (from its Device Information Service),
    /// how its samples are timed (a `SampleTiming` kind; the words are not stored), and its
    /// columns from its family's stored keys. A sensor outside `sensors` is a bug and traps.
    /// A PPG stream stores the columns of `ppgFrame` (docs/ble.md §8): type 0's stream has the
    /// identity PPG streams had before the wide frame types; a wide type's stream is a stream of
    /// its own (`pmdFrameType` in its details).
    public static func descriptor(
        _ sensor: SRSensor, device: SRDevice, wearable: String,
        location: BodySensorLocation?, ppgFrame: PPGFrameKind = .type0
    ) -> SourceDescriptor {
        var details: [String: String] = [
            "wearable": wearable, "deviceName": device.name, "deviceModel": device.model,
            "deviceSystemName": device.systemName, "deviceSystemVersion": device.systemVersion,
            "deviceProductType": device.productType,
        ]
        if let location { details["bodySensorLocation"] = location.description }
        func descriptor<Key>(_ timing: SampleTiming, _ schema: SourceSchema<Key>, suffix: String = "") -> SourceDescriptor {
            details[SampleTiming.detail] = timing.rawValue
            return SourceDescriptor(
                sensor: sensor, device: device.identifier, source: device.identifier + "#" + sensor.rawValue + suffix,
                schema: schema, details: details)
        }
        switch sensor {
        case .heartRate:
            return descriptor(.receipt, heartRateSchema)
        case .onWristState:
            return descriptor(.stateChangeReceipt, wristSchema)
        case .electrocardiogram:
            return descriptor(.mappedDeviceClock, electrocardiogramSchema)
        case .photoplethysmogram:
            if ppgFrame != .type0 { details[ppgFrameDetail] = String(ppgFrame.rawValue) }
            return descriptor(.mappedDeviceClock, ppgFrame.schema, suffix: ppgFrame.sourceSuffix)
        case .accelerometer:
            return descriptor(.mappedDeviceClock, accelerationSchema)
        default:
            preconditionFailure("\(sensor.rawValue) is not a wearable stream (WearableSamples.sensors)")
        }
    }

    static let heartRateSchema = SourceSchema<HeartRateFamily.Stored>(every: { column in
        switch column {
        case .bpm: .count("count/min")
        case .confidence, .rrCount: .count("")
        case .rr0, .rr1, .rr2, .rr3, .rr4, .rr5, .rr6, .rr7, .rr8, .rr9, .rr10, .rr11, .rr12, .rr13, .rr14, .rr15:
            .count(scale: 1.0 / 1024, offset: 0, unit: "s")
        // PPI carries milliseconds; −1 marks a row without them (an HRS row).
        case .ppInterval, .ppErrorEstimate: .count(scale: 0.001, offset: 0, unit: "s")
        case .ppFlags: .count("")
        case .energyExpended: .count("kJ")
        }
    })

    /// Stored acceleration: integer micro-g in m/s² as the motion family stores it (IIO's unit),
    /// so the fetch's ÷ g gives g. Micro-g, not the frame's unit: the stream's identity is fixed
    /// when it is registered, before the START response tells the FACTOR (docs/ble.md).
    public static let accelerationScale = UnitConversion.standardGravity / 1_000_000

    static let accelerationSchema = SourceSchema<MotionFamily.Stored>(every: { column in
        switch column {
        case .x, .y, .z: .count(scale: accelerationScale, offset: 0, unit: MotionFamily.storedUnit(.accelerometer))
        }
    })

    static let wristSchema = SourceSchema<WristFamily.Stored>(every: { column in
        switch column {
        case .onWrist, .wristLocation, .crownOrientation: .count("")
        }
    })

    static let electrocardiogramSchema = SourceSchema<ElectrocardiogramFamily.Stored>(every: { column in
        switch column {
        case .microvolts: .count("µV")
        case .lead, .flags: .count("")
        case .frequency: .count("Hz")
        // The boot instant the PMD stream started: the store keeps it as SR ns, the family's unit.
        case .sessionStart: .bootInstant
        }
    })

    /// The detail a wide PPG frame type's stream keeps its frame type under.
    public static let ppgFrameDetail = "pmdFrameType"

    /// One heart-rate row from the Heart Rate Service: bpm, confidence, RR count and `rrColumns`
    /// RR columns (1/1024 s; zero when unused), its energy expended (kJ, −1 when not sent) and no
    /// PP interval (−1). HRS carries no confidence: skin contact reported → high (2); contact not
    /// supported → medium (1). RR intervals beyond `rrColumns` are dropped (the caller counts them).
    public static func heartRate(
        _ beat: HeartRateTimeline.Beat, contact: HeartRateMeasurement.SensorContact?
    ) -> BatchValues<HeartRateFamily.Stored> {
        let rr = beat.rrIntervals.prefix(rrColumns).map(Int64.init)
        var values = BatchValues<HeartRateFamily.Stored>()
        values[.bpm] = [Int64(beat.beatsPerMinute)]
        values[.confidence] = [contact == .inContact ? 2 : 1]
        values[.rrCount] = [Int64(rr.count)]
        for (index, slot) in HeartRateFamily.Stored.rrSlots.enumerated() { values[slot] = [index < rr.count ? rr[index] : 0] }
        values[.ppInterval] = [-1]
        values[.ppErrorEstimate] = [-1]
        values[.ppFlags] = [-1]
        values[.energyExpended] = [beat.energyExpendedKilojoules.map(Int64.init) ?? -1]
        return values
    }

    /// One heart-rate row per PP interval of a PPI frame: the heart rate the device gave with it,
    /// one interval (`rrCount` 1) kept in `ppInterval` (ms) with its error estimate and flags, RR
    /// slots zero, no energy expended (−1). Confidence: the blocker bit (motion) or skin contact
    /// reported lost → low (0); contact reported → high (2); contact not supported → medium (1).
    public static func pulseIntervals(_ beats: [PulseIntervalTimeline.Beat]) -> BatchValues<HeartRateFamily.Stored> {
        var values = BatchValues<HeartRateFamily.Stored>()
        let intervals = beats.map(\.interval)
        values[.bpm] = intervals.map { Int64($0.beatsPerMinute) }
        values[.confidence] = intervals.map { $0.blocker || $0.skinContact == false ? 0 : $0.skinContact == true ? 2 : 1 }
        values[.rrCount] = .init(repeating: 1, count: beats.count)
        for slot in HeartRateFamily.Stored.rrSlots { values[slot] = .init(repeating: 0, count: beats.count) }
        values[.ppInterval] = intervals.map { Int64($0.milliseconds) }
        values[.ppErrorEstimate] = intervals.map { Int64($0.errorEstimateMilliseconds) }
        values[.ppFlags] = intervals.map { Int64($0.flags) }
        values[.energyExpended] = .init(repeating: -1, count: beats.count)
        return values
    }

    /// One wrist-state row: on or off the wrist; location and crown orientation unknown (0).
    public static func wrist(onWrist: Bool) -> BatchValues<WristFamily.Stored> {
        var values = BatchValues<WristFamily.Stored>()
        values[.onWrist] = [onWrist ? 1 : 0]
        values[.wristLocation] = [0]
        values[.crownOrientation] = [0]
        return values
    }

    /// The columns of a PMD ECG frame's samples: µV, lead (2: left arm minus right arm, lead I as
    /// a chest strap sees it), flags, rate and the session's start (boot ns).
    public static func electrocardiogram(
        _ timed: PMDStreamTimeline.TimedFrame, sampleRate: Int, sessionStart: Int64
    ) -> BatchValues<ElectrocardiogramFamily.Stored> {
        let count = timed.sampleTimes.count
        var values = BatchValues<ElectrocardiogramFamily.Stored>()
        values[.microvolts] = timed.frame.samples.map { Int64($0.first ?? 0) }
        values[.lead] = .init(repeating: 2, count: count)
        values[.flags] = .init(repeating: 0, count: count)
        values[.frequency] = .init(repeating: Int64(sampleRate), count: count)
        values[.sessionStart] = .init(repeating: sessionStart, count: count)
        return values
    }

    /// The columns of a PMD PPG frame's samples, each value in the column its frame type's kind
    /// names (`PPGFrameKind.columns`), the status word as its 24 bits. Nil for a frame that is not
    /// of `kind` or whose samples do not have its values (never stored in the wrong columns).
    public static func photoplethysmogram(
        _ timed: PMDStreamTimeline.TimedFrame, kind: PPGFrameKind
    ) -> BatchValues<PhotoplethysmogramFamily.Stored>? {
        let samples = timed.frame.samples
        let columns = kind.columns
        guard PPGFrameKind(frame: timed.frame) == kind, samples.allSatisfy({ $0.count == columns.count }) else { return nil }
        var values = BatchValues<PhotoplethysmogramFamily.Stored>()
        for (index, column) in columns.enumerated() {
            values[column] =
                column == .status
                ? samples.map { Int64($0[index]) & PPGFrameKind.statusMask } : samples.map { Int64($0[index]) }
        }
        return values
    }

    /// The columns of a PMD ACC frame's samples in micro-g (`accelerationScale`): each value in
    /// its frame type's unit (`PMDFrame.accelerationUnitMicroG`) times the START response's
    /// FACTOR, rounded to the micro-g. Exact integers when FACTOR is 1 (the H10). Nil when a value
    /// does not fit (a factor the link machine would have refused; never stored wrong).
    public static func acceleration(_ timed: PMDStreamTimeline.TimedFrame, factor: Float) -> BatchValues<MotionFamily.Stored>? {
        guard let unit = timed.frame.accelerationUnitMicroG else { return nil }
        var axes: [[Int64]] = [[], [], []]
        for sample in timed.frame.samples {
            guard sample.count >= 3 else { return nil }
            for axis in 0..<3 {
                if factor == 1 {
                    axes[axis].append(Int64(sample[axis]) * unit)
                } else {
                    guard let value = Int64(exactly: (Double(sample[axis]) * Double(unit) * Double(factor)).rounded()) else {
                        return nil
                    }
                    axes[axis].append(value)
                }
            }
        }
        var values = BatchValues<MotionFamily.Stored>()
        values[.x] = axes[0]
        values[.y] = axes[1]
        values[.z] = axes[2]
        return values
    }
}
