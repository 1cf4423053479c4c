/// A SensorKit sensor, spelled exactly as Apple's `SRSensor` (an `NSString` typed enum in ObjC).
///
/// Any string is representable, so data from a newer peer or a typo never crashes anything:
/// `SRSensor(rawValue: "nonsense")` exists and `SensorCatalog` reports it as unsupported.
public struct SRSensor: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    // Apple's raw values, not derivable from the Swift names (docs/sensorkit-mapping.md).
    public static let ambientLightSensor = SRSensor("com.apple.SensorKit.als")
    public static let accelerometer = SRSensor("com.apple.SensorKit.motion.accelerometer")
    public static let rotationRate = SRSensor("com.apple.SensorKit.motion.gyroscope")
    public static let visits = SRSensor("com.apple.SensorKit.visits")
    public static let pedometerData = SRSensor("com.apple.SensorKit.pedometer.data")
    public static let deviceUsageReport = SRSensor("com.apple.SensorKit.deviceUsageReport")
    public static let messagesUsageReport = SRSensor("com.apple.SensorKit.messagesUsageReport")
    public static let phoneUsageReport = SRSensor("com.apple.SensorKit.phoneUsageReport")
    public static let onWristState = SRSensor("com.apple.SensorKit.onWristState")
    public static let keyboardMetrics = SRSensor("com.apple.SensorKit.keyboardMetrics")
    public static let siriSpeechMetrics = SRSensor("com.apple.SensorKit.speechMetrics.siri")
    public static let telephonySpeechMetrics = SRSensor("com.apple.SensorKit.speechMetrics.telephony")
    public static let ambientPressure = SRSensor("com.apple.SensorKit.ambientPressure")
    public static let mediaEvents = SRSensor("com.apple.SensorKit.mediaEvents")
    public static let wristTemperature = SRSensor("com.apple.SensorKit.wristTemperature")
    public static let heartRate = SRSensor("com.apple.SensorKit.heart.rate")
    public static let faceMetrics = SRSensor("com.apple.SensorKit.faceMetrics")
    public static let odometer = SRSensor("com.apple.SensorKit.odometer")
    public static let electrocardiogram = SRSensor("com.apple.SensorKit.ECG")
    public static let photoplethysmogram = SRSensor("com.apple.SensorKit.PPG")
    public static let acousticSettings = SRSensor("com.apple.SensorKit.hearing.acousticSettings")
    public static let sleepSessions = SRSensor("com.apple.SensorKit.sleep.sessions")
    public static let headphoneMotion = SRSensor("com.apple.SensorKit.motion.headphone")
    public static let headphoneSettings = SRSensor("com.apple.SensorKit.hearing.headphoneSettings")

    /// Every public sensor constant, in the order of Apple's header.
    public static let allKnown: [SRSensor] = [
        .ambientLightSensor, .accelerometer, .rotationRate, .visits, .pedometerData,
        .deviceUsageReport, .messagesUsageReport, .phoneUsageReport, .onWristState, .keyboardMetrics,
        .siriSpeechMetrics, .telephonySpeechMetrics, .ambientPressure, .mediaEvents, .wristTemperature,
        .heartRate, .faceMetrics, .odometer, .electrocardiogram, .photoplethysmogram,
        .acousticSettings, .sleepSessions, .headphoneMotion, .headphoneSettings,
    ]

    /// Suffix of the derived deletion-record stream (`<raw>.tombstones`, inferred, not
    /// documented by Apple: docs/sensorkit-mapping.md).
    static let deletionRecordSuffix = ".tombstones"

    /// The deletion-record stream of this sensor, like Apple's
    /// `sensor.rawValue.sr_sensorForDeletionRecordsFromSensor()`; nil for an unknown sensor or one
    /// that is itself a deletion-record stream.
    public var deletionRecordSensor: SRSensor? {
        guard SRSensor.allKnown.contains(self) else { return nil }
        return SRSensor(rawValue + SRSensor.deletionRecordSuffix)
    }

    /// For a deletion-record stream, the sensor it belongs to.
    public var parentOfDeletionRecords: SRSensor? {
        guard rawValue.hasSuffix(SRSensor.deletionRecordSuffix) else { return nil }
        let parent = SRSensor(String(rawValue.dropLast(SRSensor.deletionRecordSuffix.count)))
        return SRSensor.allKnown.contains(parent) ? parent : nil
    }
}

extension String {
    /// Apple's `NSString (SRDeletionRecord)` category: the deletion-record stream of a sensor.
    public func sr_sensorForDeletionRecordsFromSensor() -> SRSensor? {
        SRSensor(rawValue: self).deletionRecordSensor
    }
}
