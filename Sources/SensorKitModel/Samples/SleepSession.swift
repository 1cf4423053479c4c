import Foundation

/// One sleep (Apple's `SRSleepSession`, iOS 26), one per fetch result of SensorKit's
/// `sleepSessions` sensor. No Linux source yet.
public final class SRSleepSession: NSObject, Sendable {
    public let startDate: Date
    /// Seconds; 0 when the session has no end event (Apple's end reason itself is not public).
    public let duration: TimeInterval
    public let identifier: String

    public init(startDate: Date, duration: TimeInterval, identifier: String) {
        self.startDate = startDate
        self.duration = duration
        self.identifier = identifier
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SRSleepSession else { return false }
        return startDate == other.startDate && duration == other.duration && identifier == other.identifier
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(startDate)
        hasher.combine(identifier)
        return hasher.finalize()
    }
}
