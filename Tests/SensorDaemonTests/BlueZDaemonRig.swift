import Dispatch
import Foundation
import SensorKit
import SensorSimulation
import SensorTestKit
import Synchronization
import SystemBus

/// The real `sensorkitd` with `[ble] transport = bluez`, taking a private bus for its system bus,
/// and the bluetoothd stand-in (`Tests/Fixtures/bluez/bluetoothd_standin.py`) on that bus, backed
/// by the emulated peripherals of the rig's folder. The test adds peripherals and turns the
/// stand-in's knobs (`org.sensorkit.StandIn`) between `init` and `start`, and reads its counters.
final class BlueZDaemonRig {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/bluez/bluetoothd_standin.py").path
    static let needs = TestEnvironment.Need.tools([
        (PrivateBus.daemonPath, "dbus-daemon"), ("/usr/bin/busctl", "systemd"), (TestEnvironment.python, "python3"),
    ])

    let bus: PrivateBus
    let wearables: WearableRig
    private let control: DBusConnection
    private var standIn: ChildProcess?
    /// The stand-in's options (`--adapter-asked=SECONDS`, `--adapter-withheld`: bluetoothd
    /// before the kernel reported the controller).
    let standInOptions: [String]

    var directory: String { wearables.directory }
    var run: IIODaemonRun { wearables.run }

    /// A private bus with the stand-in on it (unless `standIn` is false: the test starts it, as
    /// bluetoothd may start after the daemon), and a daemon configured (not started) for
    /// `wearables` with `[ble] transport = TRANSPORT` (nil: no such line, the daemon chooses).
    init(
        sensors: String, entitlements: [String], wearables: String, transport: String? = "bluez", standIn: Bool = true,
        standInOptions: [String] = []
    ) throws {
        self.standInOptions = standInOptions
        bus = try PrivateBus(seconds: 120)
        do {
            self.wearables = try WearableRig(
                sensors: sensors, entitlements: entitlements, wearables: wearables,
                transport: transport ?? WearableRig.daemonChooses)
            control = try DBusConnection(.address(bus.address), description: "standin-knobs")
            if standIn { try startStandIn() }
        } catch {
            bus.close()
            throw error
        }
    }

    /// Installs the app and starts the daemon on the private bus; connects as the app.
    func start() throws -> ReaderConnection {
        try wearables.start(environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
    }

    func stop() {
        wearables.stop()
        control.close()
        bus.close()
    }

    /// Starts bluetoothd (the stand-in) and waits until it owns `org.bluez`.
    func startStandIn() throws {
        standIn = try bus.spawn(
            [TestEnvironment.python, Self.script, bus.address, directory] + standInOptions, log: "bluetoothd")
        guard IIODaemonRun.eventually(15, { BLEBlueZEndToEndTests.owned("org.bluez", on: bus.address) }) else {
            throw TestFailure("the stand-in did not start\n\(bus.logText())")
        }
    }

    /// Stops bluetoothd as a crash or `systemctl restart` would: its connections and names go.
    func stopStandIn() {
        if let standIn { bus.stop(standIn) }
        standIn = nil
    }

    /// A knob of the stand-in (`org.sensorkit.StandIn`), called synchronously.
    @discardableResult
    func knob(_ member: String, _ arguments: [DBusValue] = []) throws -> [DBusValue] {
        let outcome = Mutex<Result<[DBusValue], DBusError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        control.call(
            destination: "org.bluez", path: try DBusObjectPath("/org/sensorkit/StandIn"), interface: "org.sensorkit.StandIn",
            member: member, arguments: arguments, timeout: .seconds(10), queue: DispatchQueue(label: "standin-knobs")
        ) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try outcome.withLock { $0! }.get()
    }

    /// How often the stand-in saw `what` ("Connect", "Connect:ADDRESS", "AcquireNotify", …).
    func count(_ what: String) throws -> UInt32 { try knob("Count", [.string(what)])[0].as(UInt32.self) }

    /// Everything the daemon and the stand-in said, for a failing expectation.
    var logs: String { "--- daemon ---\n\(run.log)\n--- bus ---\n\(bus.logText())" }
}
