import Foundation

/// Media shown on or removed from the screen in a messaging app (Apple's `SRMediaEvent`,
/// iOS 16.4), one per fetch result of SensorKit's `mediaEvents` sensor. No Linux source yet.
public final class SRMediaEvent: NSObject, Sendable {
    /// Apple's `SRMediaEventType` (`NSInteger`), starting at 1.
    public enum EventType: Int, Sendable, CaseIterable {
        case onScreen = 1
        case offScreen = 2
    }

    /// Identifies the media item, to pair its on- and off-screen events.
    public let mediaIdentifier: String
    public let eventType: EventType

    public init(mediaIdentifier: String, eventType: EventType) {
        self.mediaIdentifier = mediaIdentifier
        self.eventType = eventType
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SRMediaEvent else { return false }
        return mediaIdentifier == other.mediaIdentifier && eventType == other.eventType
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(mediaIdentifier)
        hasher.combine(eventType)
        return hasher.finalize()
    }
}
