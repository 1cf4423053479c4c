import Foundation

/// Apple's `SRDeletionReason` (`NSInteger`), values exactly as in the header.
public enum SRDeletionReason: Int, Hashable, Sendable, Codable, CaseIterable {
    /// A person deleted the data (`sensorkitctl delete`).
    case userInitiated = 0
    /// The disk budget evicted it.
    case lowDiskSpace = 1
    /// Recorded beyond the retention window (7 days by default).
    case ageLimit = 2
    /// Nobody held a recording stake, so nothing was recorded.
    case noInterestedClients = 3
    /// The system lost it: a torn or corrupt chunk, a sensor unplugged, a kernel FIFO overflow.
    case systemInitiated = 4
}

/// An interval with no data and the reason why (Apple's `SRDeletionRecord`), fetched through the
/// sensor's deletion-record stream (`sensor.deletionRecordSensor`).
public final class SRDeletionRecord: NSObject, Sendable {
    public let startTime: SRAbsoluteTime
    public let endTime: SRAbsoluteTime
    public let reason: SRDeletionReason

    public init(startTime: SRAbsoluteTime, endTime: SRAbsoluteTime, reason: SRDeletionReason) {
        self.startTime = startTime
        self.endTime = endTime
        self.reason = reason
    }

    public override var description: String {
        "SRDeletionRecord(\(startTime.rawValue)…\(endTime.rawValue), \(reason))"
    }
}
