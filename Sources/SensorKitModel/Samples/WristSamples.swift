import Foundation

/// Whether the wearable is worn, and how (Apple's `SRWristDetection`), one per fetch result of
/// SensorKit's `onWristState` sensor.
///
/// On Linux: a change of the sensor-contact bit of a BLE Heart Rate Measurement; only state
/// changes are recorded. Chest straps have no wrist or crown, so sources report `left`/`left`
/// (the zero values) there.
public final class SRWristDetection: NSObject, Sendable {
    /// Apple's `SRWristLocation` (`NSInteger`).
    public enum WristLocation: Int, Sendable, CaseIterable {
        case left = 0
        case right = 1
    }

    /// Apple's `SRCrownOrientation` (`NSInteger`).
    public enum CrownOrientation: Int, Sendable, CaseIterable {
        case left = 0
        case right = 1
    }

    public let onWrist: Bool
    public let wristLocation: WristLocation
    public let crownOrientation: CrownOrientation
    /// Start of the most recent on-wrist state. On a transition only the date of the new state
    /// changes; the other keeps its earlier value (Apple, iOS 16.4).
    public let onWristDate: Date?
    /// Start of the most recent off-wrist state.
    public let offWristDate: Date?

    public init(
        onWrist: Bool, wristLocation: WristLocation, crownOrientation: CrownOrientation,
        onWristDate: Date? = nil, offWristDate: Date? = nil
    ) {
        self.onWrist = onWrist
        self.wristLocation = wristLocation
        self.crownOrientation = crownOrientation
        self.onWristDate = onWristDate
        self.offWristDate = offWristDate
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SRWristDetection else { return false }
        return onWrist == other.onWrist && wristLocation == other.wristLocation
            && crownOrientation == other.crownOrientation && onWristDate == other.onWristDate
            && offWristDate == other.offWristDate
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(onWrist)
        hasher.combine(wristLocation)
        hasher.combine(crownOrientation)
        hasher.combine(onWristDate)
        hasher.combine(offWristDate)
        return hasher.finalize()
    }

    public override var description: String {
        "SRWristDetection(onWrist: \(onWrist), wristLocation: \(wristLocation), crownOrientation: "
            + "\(crownOrientation), onWristDate: \(onWristDate.map { "\($0)" } ?? "nil"), "
            + "offWristDate: \(offWristDate.map { "\($0)" } ?? "nil"))"
    }
}

/// One wrist-temperature value taken while the wearer slept (Apple's `SRWristTemperature`).
/// No Linux source yet.
public final class SRWristTemperature: NSObject, Sendable {
    /// Apple's `SRWristTemperatureCondition` (`NS_OPTIONS`): what may have spoiled the value.
    public struct Condition: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }

        public static let offWrist = Condition(rawValue: 1 << 0)
        public static let onCharger = Condition(rawValue: 1 << 1)
        public static let inMotion = Condition(rawValue: 1 << 2)
    }

    public let timestamp: Date
    /// The temperature, held in degrees Celsius.
    public let value: Measurement<UnitTemperature>
    public let condition: Condition
    /// The estimated error of `value`, held in degrees Celsius.
    public let errorEstimate: Measurement<UnitTemperature>

    public init(
        timestamp: Date, value: Measurement<UnitTemperature>, condition: Condition,
        errorEstimate: Measurement<UnitTemperature>
    ) {
        self.timestamp = timestamp
        self.value = value.expressed(in: .celsius)
        self.condition = condition
        self.errorEstimate = errorEstimate.expressed(in: .celsius)
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SRWristTemperature else { return false }
        return timestamp == other.timestamp && value == other.value && condition == other.condition
            && errorEstimate == other.errorEstimate
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(timestamp)
        hasher.combine(value.value)
        return hasher.finalize()
    }
}

/// The wrist temperatures of one sleep (Apple's `SRWristTemperatureSession`), one per fetch result
/// of SensorKit's `wristTemperature` sensor. No Linux source yet.
///
/// Apple's Swift overlay types `temperatures` as `some Sequence<SRWristTemperature>`; an array is
/// such a sequence, so `for t in session.temperatures` compiles unchanged.
public final class SRWristTemperatureSession: NSObject, Sendable {
    public let startDate: Date
    /// Precise number of seconds the session lasted.
    public let duration: TimeInterval
    /// The version of the algorithm that produced the values.
    public let version: String
    public let temperatures: [SRWristTemperature]

    public init(startDate: Date, duration: TimeInterval, version: String, temperatures: [SRWristTemperature]) {
        self.startDate = startDate
        self.duration = duration
        self.version = version
        self.temperatures = temperatures
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SRWristTemperatureSession else { return false }
        return startDate == other.startDate && duration == other.duration && version == other.version
            && temperatures == other.temperatures
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(startDate)
        hasher.combine(duration)
        hasher.combine(version)
        return hasher.finalize()
    }
}
