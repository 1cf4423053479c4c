import SensorKitModel

/// The parts of a device-usage report, each observed only while one of its sources watches
/// (docs/device-usage.md, "Deletion records"): a stretch in which any part goes unobserved is a
/// deletion record, so a count of 0 is never mistaken for a part nobody could see.
public struct UsageParts: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Locks and unlocks: logind's hint and signals, or the screen saver on the session bus.
    public static let lockState = UsageParts(rawValue: 1)
    /// The app in front and the screen's wakes beside it: only the compositor names the app
    /// (logind's idle hint guesses wakes, never the app).
    public static let appInFront = UsageParts(rawValue: 2)
    /// Notifications: seen by the session agent on the session bus; the daemon knows the agent
    /// watches while it speaks for the compositor or the screen saver.
    public static let notifications = UsageParts(rawValue: 4)
    public static let all: UsageParts = [.lockState, .appInFront, .notifications]

    /// The parts no source in `watching` observes.
    public static func unobserved(watching: Set<UsageObservation>) -> UsageParts {
        var missing = UsageParts.all
        if !watching.isDisjoint(with: [.logindLockedHint, .logindLockSignal, .screenSaver]) { missing.remove(.lockState) }
        if watching.contains(.compositor) { missing.remove(.appInFront) }
        if !watching.isDisjoint(with: [.compositor, .screenSaver]) { missing.remove(.notifications) }
        return missing
    }

    /// Why a stretch missing these parts is a deletion record: for the log, never the store.
    public var why: String {
        var parts: [String] = []
        if contains(.lockState) { parts.append("the lock state (logind gone and no screen saver on the session bus)") }
        if contains(.appInFront) {
            parts.append("the app in front (no session agent, or a compositor without the wlr protocols)")
        }
        if contains(.notifications) { parts.append("notifications (no session agent)") }
        return "not observed: " + parts.joined(separator: "; ")
    }
}
