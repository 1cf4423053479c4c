import SensorKitModel
import SystemBus

/// The notifications of a session as the monitor sees them, a value fed messages in order
/// (`on`) that returns what happened: a notification received (its app from the `desktop-entry`
/// hint, else the app name), its default or another action invoked, its closing by reason
/// (1 expired, 2 dismissed by the person, 3 closed by a call) — mapped onto
/// `SRDeviceUsageReport.NotificationUsage.Event` — and the screen saver's state. Notification
/// ids are kept to name the app of later signals, at most `maximumTracked` of them.
public struct NotificationFlow: Sendable {
    public static let interface = "org.freedesktop.Notifications"
    public static let screenSaver = "org.gnome.ScreenSaver"
    public static let maximumTracked = 1_024

    public enum Output: Sendable, Equatable {
        case notification(app: String?, event: SRDeviceUsageReport.NotificationUsage.Event)
        case screenSaver(active: Bool)
    }

    /// `Notify` calls waiting for their id, by caller and serial.
    private var calls: [SessionBusWatch.CallKey: String?] = [:]
    private var callOrder: [SessionBusWatch.CallKey] = []
    /// Notification id → app.
    private var apps: [UInt32: String?] = [:]
    private var appOrder: [UInt32] = []

    public init() {}

    public mutating func on(_ message: DBusMonitoredMessage) -> [Output] {
        switch (message.kind, message.interface, message.member) {
        case (.methodCall, Self.interface, "Notify"):
            guard let sender = message.sender else { return [] }
            let app = Self.app(message.arguments)
            let replaces = message.arguments[1].flatMap { try? $0.as(UInt32.self) } ?? 0
            if replaces != 0 {
                remember(id: replaces, app: app)
            } else {
                let key = SessionBusWatch.CallKey(sender: sender, serial: message.serial)
                if callOrder.count >= Self.maximumTracked { calls[callOrder.removeFirst()] = nil }
                calls[key] = .some(app)
                callOrder.append(key)
            }
            return [.notification(app: app, event: .received)]
        case (.methodReturn, _, _):
            guard let destination = message.destination, let serial = message.replySerial,
                let id = message.arguments[0].flatMap({ try? $0.as(UInt32.self) })
            else { return [] }
            let key = SessionBusWatch.CallKey(sender: destination, serial: serial)
            guard let app = calls.removeValue(forKey: key) else { return [] }
            callOrder.removeAll { $0 == key }
            remember(id: id, app: app)
            return []
        case (.signal, Self.interface, "ActionInvoked"):
            guard let id = message.arguments[0].flatMap({ try? $0.as(UInt32.self) }), let app = apps[id] else { return [] }
            let key = message.arguments[1].flatMap { try? $0.as(String.self) }
            return [.notification(app: app, event: key == "default" ? .defaultAction : .supplementaryAction)]
        case (.signal, Self.interface, "NotificationClosed"):
            guard let id = message.arguments[0].flatMap({ try? $0.as(UInt32.self) }), let app = apps.removeValue(forKey: id)
            else { return [] }
            appOrder.removeAll { $0 == id }
            let reason = message.arguments[1].flatMap { try? $0.as(UInt32.self) } ?? 4
            return [.notification(app: app, event: Self.event(closedBy: reason))]
        case (.signal, Self.screenSaver, "ActiveChanged"):
            guard let active = message.arguments[0].flatMap({ try? $0.as(Bool.self) }) else { return [] }
            return [.screenSaver(active: active)]
        default:
            return []
        }
    }

    /// `NotificationClosed`'s reason as SensorKit's event: 1 expired, 2 dismissed (`clear`),
    /// 3 closed by a call (`removed`), anything else `unknown`.
    public static func event(closedBy reason: UInt32) -> SRDeviceUsageReport.NotificationUsage.Event {
        switch reason {
        case 1: .expired
        case 2: .clear
        case 3: .removed
        default: .unknown
        }
    }

    /// The `desktop-entry` hint when it is a string, else the app name.
    static func app(_ arguments: [Int: DBusValue]) -> String? {
        if case .dictionary(_, _, let entries)? = arguments[6] {
            for entry in entries where entry.key == .string("desktop-entry") {
                if let name = try? entry.value.unwrappingVariant().as(String.self), !name.isEmpty { return name }
            }
        }
        return arguments[0].flatMap { try? $0.as(String.self) }.flatMap { $0.isEmpty ? nil : $0 }
    }

    private mutating func remember(id: UInt32, app: String?) {
        if apps[id] == nil {
            if appOrder.count >= Self.maximumTracked { apps[appOrder.removeFirst()] = nil }
            appOrder.append(id)
        }
        apps[id] = .some(app)
    }
}
