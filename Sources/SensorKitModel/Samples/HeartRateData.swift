import Foundation

/// How far to trust a heart-rate value (CoreMotion's `CMHighFrequencyHeartRateDataConfidence`,
/// `NSInteger`, values as in the header).
public enum CMHighFrequencyHeartRateDataConfidence: Int, Sendable, CaseIterable {
    case low = 0
    case medium = 1
    case high = 2
    case highest = 3
}

/// One heart-rate value (CoreMotion's `CMHighFrequencyHeartRateData`), one per fetch result of
/// SensorKit's `heartRate` sensor.
///
/// On Linux: one Heart Rate Measurement notification of a BLE Heart Rate Service (0x180D).
/// HRS has no device clock, so `date` and `timestamp` are the time of receipt (docs/design-notes/0001-time.md).
public final class CMHighFrequencyHeartRateData: CMLogItem, @unchecked Sendable {
    // @unchecked: immutable; see CMLogItem.
    /// Beats per minute.
    public let heartRate: Double
    public let confidence: CMHighFrequencyHeartRateDataConfidence
    /// The wall-clock time of the value, when known.
    public let date: Date?
    /// **sensorkitd addition, not in Apple's API.** The RR intervals (time between successive
    /// R-waves) that the Heart Rate Measurement carried, in seconds, oldest first; the
    /// characteristic sends them in units of 1/1024 s (`UnitConversion.seconds(fromRRInterval:)`).
    /// Empty when the wearable sent none. HRV studies need these; Apple exposes no equivalent.
    public let rrIntervals: [TimeInterval]

    public init(
        heartRate: Double, confidence: CMHighFrequencyHeartRateDataConfidence, date: Date?,
        timestamp: TimeInterval, rrIntervals: [TimeInterval] = []
    ) {
        self.heartRate = heartRate
        self.confidence = confidence
        self.date = date
        self.rrIntervals = rrIntervals
        super.init(timestamp: timestamp)
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard super.isEqual(object), let other = object as? CMHighFrequencyHeartRateData else { return false }
        return heartRate == other.heartRate && confidence == other.confidence && date == other.date
            && rrIntervals == other.rrIntervals
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(timestamp)
        hasher.combine(heartRate)
        hasher.combine(confidence)
        hasher.combine(date)
        hasher.combine(rrIntervals)
        return hasher.finalize()
    }

    public override var description: String {
        "CMHighFrequencyHeartRateData(\(heartRate) BPM, confidence: \(confidence), "
            + "date: \(date.map { "\($0)" } ?? "nil"), timestamp: \(timestamp), rrIntervals: \(rrIntervals))"
    }
}
