import SystemBus

/// ModemManager 1.20's D-Bus names and the enum values this bridge reads (its introspection XML
/// and `ModemManager-enums.h`). Calls and SMS are exported beside the ObjectManager, not in it, so
/// they are found through `Voice.ListCalls`, `Messaging.List` and their signals.
public enum ModemManagerInterface {
    public static let service = "org.freedesktop.ModemManager1"
    public static let root = try! DBusObjectPath("/org/freedesktop/ModemManager1")
    public static let modem = "org.freedesktop.ModemManager1.Modem"
    public static let voice = "org.freedesktop.ModemManager1.Modem.Voice"
    public static let messaging = "org.freedesktop.ModemManager1.Modem.Messaging"
    public static let call = "org.freedesktop.ModemManager1.Call"
    public static let sms = "org.freedesktop.ModemManager1.Sms"
}

/// `MMCallDirection`.
public enum CallDirection: Int32, Hashable, Sendable {
    case unknown = 0, incoming = 1, outgoing = 2

    public init(dbus value: Int32) { self = CallDirection(rawValue: value) ?? .unknown }
}

/// `MMCallState`.
public enum CallState: Int32, Hashable, Sendable {
    case unknown = 0, dialing = 1, ringingOut = 2, ringingIn = 3, active = 4, held = 5, waiting = 6, terminated = 7

    public init(dbus value: Int32) { self = CallState(rawValue: value) ?? .unknown }

    /// Whether the parties are connected: the time counted as `totalPhoneCallDuration`.
    public var isConnected: Bool { self == .active || self == .held }
}

/// Whether a message came in or went out.
public enum MessageDirection: Hashable, Sendable {
    case incoming, outgoing
}

/// One call as its `org.freedesktop.ModemManager1.Call` properties describe it. The number is
/// held only until it is hashed (`ContactKey.digest`), never kept in this value longer.
public struct CallProperties: Sendable {
    public var state: CallState
    public var direction: CallDirection
    public var number: String

    /// Reads `State (i)`, `Direction (i)`, `Number (s)`; a missing or mistyped property reads as
    /// unknown (a hostile bus cannot make a call count twice or trap).
    public init(_ properties: DBusProperties) {
        state = CallState(dbus: (try? properties["State"]?.as(Int32.self)) ?? 0)
        direction = CallDirection(dbus: (try? properties["Direction"]?.as(Int32.self)) ?? 0)
        number = (try? properties["Number"]?.as(String.self)) ?? ""
    }
}

/// One SMS as its `org.freedesktop.ModemManager1.Sms` properties describe it.
public struct SmsProperties: Sendable {
    /// `MMSmsState`.
    public var state: UInt32
    /// `MMSmsPduType`.
    public var pduType: UInt32
    public var number: String

    public init(_ properties: DBusProperties) {
        state = (try? properties["State"]?.as(UInt32.self)) ?? 0
        pduType = (try? properties["PduType"]?.as(UInt32.self)) ?? 0
        number = (try? properties["Number"]?.as(String.self)) ?? ""
    }

    public init(state: UInt32, pduType: UInt32, number: String) {
        self.state = state
        self.pduType = pduType
        self.number = number
    }

    /// The direction of a complete message: a DELIVER (1, or CDMA DELIVER 32) in state RECEIVED
    /// (3) came in, a SUBMIT (2, or CDMA SUBMIT 33) in state SENT (5) went out; nil for anything
    /// else (still receiving or sending, stored drafts, status reports).
    public var completed: MessageDirection? {
        switch (pduType, state) {
        case (1, 3), (32, 3): .incoming
        case (2, 5), (33, 5): .outgoing
        default: nil
        }
    }
}
