import BLETestKit
import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import SensorTestKit
import Testing

/// The real daemon recording an emulated H10 whose system bus is a private bus, where the
/// bluetoothd stand-in (`Tests/Fixtures/bluez/bluetoothd_standin.py`) runs when the test says
/// so: before the daemon, after it, or beside an `hci` transport it must not race.
final class BlueZDaemonRig {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/bluez/bluetoothd_standin.py").path
    static let needs = TestEnvironment.Need.tools([
        (PrivateBus.daemonPath, "dbus-daemon"), ("/usr/bin/busctl", "systemd"), (TestEnvironment.python, "python3"),
    ])

    let bus: PrivateBus
    let rig: WearableRig
    let h10: EmulatedPeripheral
    var run: IIODaemonRun { rig.run }

    /// `transport`: the `[ble] transport =` value; nil leaves the line out (the daemon chooses).
    init(transport: String?) throws {
        bus = try PrivateBus(seconds: 120)
        rig = try WearableRig(
            sensors: "heartRate, electrocardiogram", entitlements: ["heart-rate", "ecg"],
            wearables: """
                [wearable chest]
                name = Polar H10 *
                streams = heartRate, electrocardiogram
                """, transport: transport ?? WearableRig.daemonChooses)
        h10 = try EmulatedPeripheral(directory: rig.directory, profile: .h10(address: BLEEndToEndTests.h10))
    }

    /// Starts the stand-in and waits until it owns org.bluez.
    @discardableResult
    func startStandIn() throws -> ChildProcess {
        let standIn = try bus.spawn([TestEnvironment.python, Self.script, bus.address, rig.directory], log: "bluetoothd")
        guard IIODaemonRun.eventually(15, { BLEBlueZEndToEndTests.owned("org.bluez", on: bus.address) }) else {
            throw SystemError("the stand-in did not take org.bluez\n\(bus.logText())", errno: ETIMEDOUT)
        }
        return standIn
    }

    /// Starts the daemon with the private bus as its system bus, connected as the app.
    func startDaemon() throws -> ReaderConnection {
        try rig.start(environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
    }

    /// Whether the daemon subscribed heart rate and runs ECG on the H10.
    func streaming() -> Bool { h10.runningMeasurements.contains(0) && h10.isSubscribed([0x37, 0x2A]) }

    /// Sends `seconds` of 130 Hz ECG in real time and waits until the daemon stored exactly those
    /// values; the difference, or nil when they match.
    func ecgMismatch(_ app: ReaderConnection, from startSR: Int64, seconds: Double = 1.5) throws -> String? {
        let clock = LinuxSystemClock()
        let hostBase = clock.boottimeNanoseconds() + 200_000_000
        let deviceOffset = Int64(820_000_000) * 1_000_000_000 - hostBase
        let period = BLEEndToEndTests.period, perFrame = BLEEndToEndTests.samplesPerFrame
        var sent: [Double] = []
        for frame in 0..<(Int(seconds * 130) / perFrame) {
            let first = frame * perFrame, last = first + perFrame - 1
            let lastTime = hostBase + Int64((Double(last) * period).rounded())
            let wait = lastTime - clock.boottimeNanoseconds()
            if wait > 0 { usleep(useconds_t(wait / 1000)) }
            let values = (first...last).map { Int32(($0 * 37) % 2001) - 1000 }
            if h10.sendECG(timestamp: UInt64(lastTime + deviceOffset), microvolts: values) {
                sent += values.map(Double.init)
            }
        }
        guard !sent.isEmpty else { return "no ECG frame could be sent" }
        var stored: [Double] = []
        let settled = IIODaemonRun.eventually(10) {
            guard let now = try? run.timeline(app).now else { return false }
            let (batches, _) = DaemonHarness.fetchAll(
                app, sensor: .electrocardiogram, from: startSR, to: now, device: "ble:" + BLEEndToEndTests.h10, timeout: 10)
            stored = batches.flatMap { $0.columns[0] }
            return stored.count >= sent.count
        }
        guard settled, stored == sent else {
            return "stored \(stored.count) ECG values of \(sent.count) sent, equal: \(stored == sent)"
        }
        return nil
    }

    func stop() {
        rig.stop()
        bus.close()
    }
}
