import SystemBus

/// What a refusal from bluetoothd means for the link (pure; bluez `doc/org.bluez.GattCharacteristic.rst`,
/// `org.bluez.Device.rst`).
public enum BlueZRefusal: Equatable, Sendable {
    /// Acquiring notifications was refused but `StartNotify` may work: `NotSupported` (an
    /// indicate-only characteristic such as the PMD control point), `InProgress` / `NotPermitted`
    /// (another client already started notifications: BlueZ 5.66 then refuses to hand out the fd).
    case useStartNotify
    /// The device is gone or not connected: the link is lost.
    case linkLost
    /// The device wants bonding (insufficient authentication or encryption).
    case needsPairing
    /// bluetoothd is not on the bus (stopped or restarting).
    case serviceGone
    /// Anything else: this one operation failed.
    case operationFailed

    public static func classify(_ error: DBusError, acquiringNotify: Bool = false) -> BlueZRefusal {
        switch error {
        case .disconnected: return .serviceGone
        case .remote(let name, let message):
            switch name {
            // bluetoothd answers an ATT Insufficient Authentication/Encryption with NotPermitted
            // "Not paired" (src/gatt-client.c), a plain ATT Read/Write Not Permitted with another text.
            case "org.bluez.Error.NotPermitted" where message.lowercased().contains("not paired"):
                return .needsPairing
            case "org.bluez.Error.NotSupported", "org.bluez.Error.InProgress", "org.bluez.Error.NotPermitted":
                return acquiringNotify ? .useStartNotify : .operationFailed
            case "org.bluez.Error.NotConnected", "org.bluez.Error.DoesNotExist", "org.freedesktop.DBus.Error.UnknownObject",
                "org.freedesktop.DBus.Error.UnknownMethod":
                return .linkLost
            case "org.bluez.Error.NotAuthorized", "org.bluez.Error.AuthenticationRequired",
                "org.bluez.Error.AuthenticationFailed":
                return .needsPairing
            // NoReply from the broker: bluetoothd left the bus with our call unanswered.
            case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
                "org.freedesktop.DBus.Error.NoReply":
                return .serviceGone
            case "org.bluez.Error.Failed" where message.lowercased().contains("not connected"):
                return .linkLost
            default: return .operationFailed
            }
        default: return .operationFailed
        }
    }
}
