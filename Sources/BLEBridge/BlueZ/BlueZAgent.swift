import Dispatch
import Synchronization
import SystemBus

/// The pairing agent bluetoothd calls back while the daemon pairs a wearable that wants bonding
/// (`org.bluez.Agent1`, registered through `AgentManager1.RegisterAgent` with capability
/// `NoInputNoOutput`: a wearable has no display or keys, so pairing is "Just Works"). It is never
/// made the default agent (the user's own pairing dialogs stay theirs), and it confirms only the
/// devices this daemon is pairing at that moment; everything else is refused.
final class BlueZAgent: Sendable {
    static let path = try! DBusObjectPath("/org/sensorkit/bluez/agent")
    static let managerPath = try! DBusObjectPath("/org/bluez")
    static let interface = "org.bluez.Agent1"
    static let capability = "NoInputNoOutput"
    static let rejected = "org.bluez.Error.Rejected"

    private let pairing = Mutex<Set<DBusObjectPath>>([])

    func expect(_ device: DBusObjectPath) { _ = pairing.withLock { $0.insert(device) } }
    func done(_ device: DBusObjectPath) { _ = pairing.withLock { $0.remove(device) } }

    func answer(_ call: DBusMethodCall) -> DBusMethodReply {
        Self.answer(call, pairing: pairing.withLock { $0 })
    }

    /// The agent's answer to one call (pure; bluez `doc/org.bluez.Agent.rst`). Anyone on the bus can
    /// call the agent, so nothing is confirmed for a device the daemon is not pairing.
    static func answer(_ call: DBusMethodCall, pairing: Set<DBusObjectPath>) -> DBusMethodReply {
        func device() -> DBusObjectPath? {
            guard case .objectPath(let path)? = call.arguments.first else { return nil }
            return path
        }
        switch call.member {
        case "Release", "Cancel", "DisplayPinCode", "DisplayPasskey":
            return .values([])
        case "RequestConfirmation", "RequestAuthorization":
            guard let device = device(), pairing.contains(device) else {
                return .error(name: rejected, message: "sensorkitd pairs only the wearables it is pairing now")
            }
            return .values([])
        case "RequestPinCode", "RequestPasskey":
            return .error(name: rejected, message: "sensorkitd has no input for a PIN or passkey")
        default:
            return .error(name: rejected, message: "sensorkitd authorizes nothing else")
        }
    }
}
