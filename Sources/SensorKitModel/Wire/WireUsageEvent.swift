/// One observation the session agent hands the daemon in a `usage` request (docs/protocol.md
/// §3.7): only a kind, an app's desktop id and category, a notification event's number, a state —
/// never a title or a text. The daemon stamps it when it arrives: an agent's clock is not trusted.
public struct WireUsageEvent: Codable, Hashable, Sendable {
    public enum Kind: String, Codable, Sendable, CaseIterable {
        /// The agent starts or stops watching a source (`source`, `on`).
        case watching
        /// The screen turned on or off (`on`, `source`).
        case screen
        /// The session locked (`on` true) or unlocked (`source`).
        case locked
        /// An app came to the front (`app`, `category`; no `app`: none in front).
        case foreground
        /// A notification event of an app (`app`, `category`, `event`).
        case notification
        /// A text-input session began in the app in front.
        case textInput
        /// A visit to a place ended (`distance`, `ages`, `category`, `place`): `visits`, not
        /// device usage; the agent says it watches location with `watching` source `location`.
        case visit
    }

    public var kind: Kind
    /// A desktop id (`DesktopIDCode`'s characters, at most its length).
    public var app: String?
    /// The index of the app's `SRDeviceUsageReport.CategoryKey` in Apple's header order.
    public var category: Int?
    /// `SRDeviceUsageReport.NotificationUsage.Event` raw value.
    public var event: Int?
    public var on: Bool?
    /// `UsageObservation.name`, or `location`.
    public var source: String?
    /// visit: whole metres from home, −1 while no home is known.
    public var distance: Int64?
    /// visit: ms before the request of the arrival's start (−1: nothing observed before) and
    /// end, and the departure's start and end.
    public var ages: [Int64]?
    /// visit: the place's UUID.
    public var place: String?

    public init(
        kind: Kind, app: String? = nil, category: Int? = nil, event: Int? = nil, on: Bool? = nil, source: String? = nil
    ) {
        self.kind = kind
        self.app = app
        self.category = category
        self.event = event
        self.on = on
        self.source = source
    }

    /// A `visit` event; `category` is the `SRVisit.LocationCategory` raw value.
    public static func visit(distance: Int64, ages: [Int64], category: Int, place: String) -> WireUsageEvent {
        var event = WireUsageEvent(kind: .visit, category: category)
        event.distance = distance
        event.ages = ages
        event.place = place
        return event
    }
}
