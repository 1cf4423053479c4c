import SensorKitModel

/// One thing a source observed about the person's use of the device, reduced where it was seen
/// to what SensorKit keeps: no title, no text, no URL — an app's desktop id and its category at most.
/// Times are `CLOCK_BOOTTIME` ns of this boot.
public enum UsageEvent: Sendable, Equatable {
    /// A source starts or stops watching (logind's connection, the session agent).
    case watching(UsageObservation, Bool, at: Int64)
    /// The screen turned on or off.
    case screen(on: Bool, at: Int64, from: UsageObservation)
    /// The session locked or unlocked.
    case locked(Bool, at: Int64, from: UsageObservation)
    /// This app came to the front (nil: none in front).
    case foreground(app: UsageApp?, at: Int64)
    /// A notification event of an app.
    case notification(app: UsageApp, event: SRDeviceUsageReport.NotificationUsage.Event, at: Int64)
    /// A text-input session began in the app in front.
    case textInput(at: Int64)

    public var time: Int64 {
        switch self {
        case .watching(_, _, let at), .screen(_, let at, _), .locked(_, let at, _), .foreground(_, let at),
            .notification(_, _, let at), .textInput(let at):
            at
        }
    }
}

/// An app as a report names it: its desktop id when it could be coded (`DesktopIDCode`), else
/// unnamed, and its category.
public struct UsageApp: Sendable, Hashable {
    public let id: String?
    public let category: SRDeviceUsageReport.CategoryKey

    public init(id: String?, category: SRDeviceUsageReport.CategoryKey) {
        self.id = id.flatMap { DesktopIDCode.encode($0) == nil ? nil : $0 }
        self.category = category
    }
}
