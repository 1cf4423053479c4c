import Dispatch
import SensorSystem
import Synchronization
import SystemBus

/// Whether bluetoothd manages an adapter: asked on the bus (does `org.bluez` export
/// `/org/bluez/hciN` with `Adapter1`?), and, where the bus cannot tell, whether a bluetoothd
/// process exists. The `hci` transport refuses an adapter bluetoothd manages (raw HCI scanning and
/// an L2CAP ATT socket beside bluetoothd race its own connections and auto-connect, and the ATT
/// channel is its); without `[ble] transport`, `bluez` is taken wherever bluetoothd is.
public enum BluetoothdPresence: Equatable, Sendable {
    case managesAdapter
    /// `org.bluez` is on the bus but exports no such adapter.
    case runsWithoutAdapter
    case absent

    /// Asks `bus` (at most `timeout`); a bus that cannot be reached counts as `absent`.
    public static func probe(adapter: String, bus: DBusBus = .system, timeout: Duration = .seconds(2)) -> BluetoothdPresence {
        guard let path = try? DBusObjectPath("/org/bluez/" + adapter),
            let connection = try? DBusConnection(bus, description: "bluez-probe")
        else { return .absent }
        defer { connection.close() }
        let answer = Mutex<Result<DBusValue, DBusError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        connection.property(
            destination: BlueZName.service, path: path, interface: BlueZName.adapter, name: "Address", timeout: timeout,
            queue: DispatchQueue(label: "ble.bluez.probe")
        ) { result in
            answer.withLock { $0 = result }
            done.signal()
        }
        _ = done.wait(timeout: .now() + timeout.seconds + 1)
        return classify(answer.withLock { $0 })
    }

    /// The answer to `Get(Adapter1, Address)` on `/org/bluez/hciN` (pure).
    public static func classify(_ answer: Result<DBusValue, DBusError>?) -> BluetoothdPresence {
        switch answer {
        case .success?: return .managesAdapter
        case .failure(let error)?:
            return BlueZRefusal.classify(error) == .serviceGone || error == .timedOut ? .absent : .runsWithoutAdapter
        case nil: return .absent
        }
    }

    /// Whether a process named `bluetoothd` runs (its `/proc/PID/comm`).
    public static func processRunning(procRoot: String = "/proc") -> Bool {
        guard let entries = try? SystemCalls.directoryEntries(procRoot) else { return false }
        for entry in entries where entry.allSatisfy(\.isNumber) {
            if SystemFiles.readTrimmed(procRoot + "/" + entry + "/comm") == "bluetoothd" { return true }
        }
        return false
    }

    /// The sentence the `hci` transport refuses an adapter with, or nil when it may take it (pure).
    /// `adapterUp` is nil before the adapter was opened.
    public static func hciRefusal(adapter: String, presence: BluetoothdPresence, processRunning: Bool, adapterUp: Bool?)
        -> String?
    {
        let fix =
            "use `[ble] transport = bluez` (wearables through bluetoothd), or keep `hci` for a dedicated adapter bluetoothd does not manage (stop bluetooth.service, or give the rig its own dongle)"
        switch presence {
        case .managesAdapter:
            return
                "\(adapter) is managed by bluetoothd, which owns its connections and ATT channel, so the hci transport will not race it: \(fix)"
        case .runsWithoutAdapter:
            return nil
        case .absent:
            guard processRunning, adapterUp != false else { return nil }
            return
                "bluetoothd is running and may manage \(adapter) (the system bus could not say), so the hci transport will not race it: \(fix)"
        }
    }
}
