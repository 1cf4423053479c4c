import SensorKitModel
import Synchronization
import SystemBus

/// What the agent watches on the session bus, as a monitor (`org.freedesktop.DBus.Monitoring`):
/// the Desktop Notifications `Notify` calls and their replies (which carry the notification's
/// id), its `ActionInvoked` and `NotificationClosed` signals, and `org.gnome.ScreenSaver`'s
/// `ActiveChanged`. Which arguments are read is decided per message before any is read
/// (`select`): a `Notify` call's app name, replaced id and hints — never its summary or body; a
/// reply's id only when it answers a `Notify` call seen; nothing of any other message.
public final class SessionBusWatch: Sendable {
    public static let rules = [
        "type='method_call',interface='org.freedesktop.Notifications',member='Notify'",
        "type='method_return'",
        "type='signal',interface='org.freedesktop.Notifications'",
        "type='signal',interface='org.gnome.ScreenSaver',member='ActiveChanged'",
    ]
    /// `Notify` calls waiting for their reply at most (a flood of calls never answered cannot grow it).
    static let maximumPending = 256

    struct CallKey: Hashable, Sendable {
        let sender: String
        let serial: UInt64
    }

    private let pending = Mutex<[CallKey]>([])

    public init() {}

    /// The arguments to read of `message` (on the bus thread, before any is read).
    public func select(_ message: DBusMonitoredMessage) -> Set<Int> {
        switch (message.kind, message.interface, message.member) {
        case (.methodCall, NotificationFlow.interface, "Notify"):
            if let sender = message.sender {
                pending.withLock { calls in
                    if calls.count >= Self.maximumPending { calls.removeFirst() }
                    calls.append(CallKey(sender: sender, serial: message.serial))
                }
            }
            return [0, 1, 6]
        case (.methodReturn, _, _):
            guard let destination = message.destination, let serial = message.replySerial else { return [] }
            let key = CallKey(sender: destination, serial: serial)
            let answersNotify = pending.withLock { calls in
                guard let index = calls.firstIndex(of: key) else { return false }
                calls.remove(at: index)
                return true
            }
            return answersNotify ? [0] : []
        case (.signal, NotificationFlow.interface, "ActionInvoked"), (.signal, NotificationFlow.interface, "NotificationClosed"):
            return [0, 1]
        case (.signal, NotificationFlow.screenSaver, "ActiveChanged"):
            return [0]
        default:
            return []
        }
    }
}
