import Foundation

/// Steps (and, where known, distance and floors) over an interval (CoreMotion's `CMPedometerData`),
/// one per fetch result of SensorKit's `pedometerData` sensor.
///
/// On Linux: the step count is the difference of two polled readings of IIO `in_steps_input`
/// over `startDate…endDate`; step counters give nothing else, so the optional values are nil
/// unless a source supplies them. Types follow Apple's (`NSNumber`, nil when unavailable).
public final class CMPedometerData: NSObject, Sendable {
    public let startDate: Date
    public let endDate: Date
    /// Steps taken between `startDate` and `endDate`.
    public let numberOfSteps: NSNumber
    /// Estimated distance in metres.
    public let distance: NSNumber?
    public let floorsAscended: NSNumber?
    public let floorsDescended: NSNumber?
    /// Current pace in seconds per metre.
    public let currentPace: NSNumber?
    /// Current cadence in steps per second.
    public let currentCadence: NSNumber?
    /// Average pace while active, in seconds per metre.
    public let averageActivePace: NSNumber?

    public init(
        startDate: Date, endDate: Date, numberOfSteps: NSNumber, distance: NSNumber? = nil,
        floorsAscended: NSNumber? = nil, floorsDescended: NSNumber? = nil, currentPace: NSNumber? = nil,
        currentCadence: NSNumber? = nil, averageActivePace: NSNumber? = nil
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.numberOfSteps = numberOfSteps
        self.distance = distance
        self.floorsAscended = floorsAscended
        self.floorsDescended = floorsDescended
        self.currentPace = currentPace
        self.currentCadence = currentCadence
        self.averageActivePace = averageActivePace
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CMPedometerData else { return false }
        return startDate == other.startDate && endDate == other.endDate && numberOfSteps == other.numberOfSteps
            && distance == other.distance && floorsAscended == other.floorsAscended
            && floorsDescended == other.floorsDescended && currentPace == other.currentPace
            && currentCadence == other.currentCadence && averageActivePace == other.averageActivePace
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(startDate)
        hasher.combine(endDate)
        hasher.combine(numberOfSteps)
        return hasher.finalize()
    }

    public override var description: String {
        "CMPedometerData(\(numberOfSteps) steps, \(startDate) – \(endDate)"
            + (distance.map { ", \($0) m" } ?? "") + ")"
    }
}
