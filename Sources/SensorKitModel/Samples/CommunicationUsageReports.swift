import Foundation

/// Messages sent and received over a period (Apple's `SRMessagesUsageReport`), one per fetch
/// result of SensorKit's `messagesUsageReport` sensor. No Linux source yet.
public final class SRMessagesUsageReport: NSObject, Sendable {
    public let duration: TimeInterval
    public let totalOutgoingMessages: Int
    public let totalIncomingMessages: Int
    public let totalUniqueContacts: Int

    public init(
        duration: TimeInterval, totalOutgoingMessages: Int, totalIncomingMessages: Int, totalUniqueContacts: Int
    ) {
        self.duration = duration
        self.totalOutgoingMessages = totalOutgoingMessages
        self.totalIncomingMessages = totalIncomingMessages
        self.totalUniqueContacts = totalUniqueContacts
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SRMessagesUsageReport else { return false }
        return duration == other.duration && totalOutgoingMessages == other.totalOutgoingMessages
            && totalIncomingMessages == other.totalIncomingMessages
            && totalUniqueContacts == other.totalUniqueContacts
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(duration)
        hasher.combine(totalOutgoingMessages)
        hasher.combine(totalIncomingMessages)
        return hasher.finalize()
    }
}

/// Phone calls over a period (Apple's `SRPhoneUsageReport`), one per fetch result of SensorKit's
/// `phoneUsageReport` sensor. No Linux source yet.
public final class SRPhoneUsageReport: NSObject, Sendable {
    public let duration: TimeInterval
    public let totalOutgoingCalls: Int
    public let totalIncomingCalls: Int
    public let totalUniqueContacts: Int
    public let totalPhoneCallDuration: TimeInterval

    public init(
        duration: TimeInterval, totalOutgoingCalls: Int, totalIncomingCalls: Int, totalUniqueContacts: Int,
        totalPhoneCallDuration: TimeInterval
    ) {
        self.duration = duration
        self.totalOutgoingCalls = totalOutgoingCalls
        self.totalIncomingCalls = totalIncomingCalls
        self.totalUniqueContacts = totalUniqueContacts
        self.totalPhoneCallDuration = totalPhoneCallDuration
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SRPhoneUsageReport else { return false }
        return duration == other.duration && totalOutgoingCalls == other.totalOutgoingCalls
            && totalIncomingCalls == other.totalIncomingCalls && totalUniqueContacts == other.totalUniqueContacts
            && totalPhoneCallDuration == other.totalPhoneCallDuration
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(duration)
        hasher.combine(totalOutgoingCalls)
        hasher.combine(totalIncomingCalls)
        return hasher.finalize()
    }
}
