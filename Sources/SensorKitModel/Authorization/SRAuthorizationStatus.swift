/// Apple's `SRAuthorizationStatus` (`NSInteger` enum), values exactly as in the header.
public enum SRAuthorizationStatus: Int, Hashable, Sendable, Codable, CaseIterable {
    /// User has not yet made a choice.
    case notDetermined = 0
    case authorized = 1
    /// User has denied authorization to this application or data collection is disabled.
    case denied = 2
}
