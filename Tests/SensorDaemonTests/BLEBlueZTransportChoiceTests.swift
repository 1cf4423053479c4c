import Foundation
import SensorKit
import SensorTestKit
import Testing

/// How the real daemon meets bluetoothd: started before it (boot order), chosen without
/// `transport =` where bluetoothd manages the adapter, and refused by `transport = hci` there.
/// Through the bluetoothd stand-in on a private bus that the daemon takes for its system bus.
@Suite(.serialized) struct BLEBlueZTransportChoiceTests {
    static let absentLine =
        "bluez: bluetoothd is not running (org.bluez is not on the system bus); wearables wait until it is on the system bus"

    @Test(.timeLimit(.minutes(3)), .needs(BlueZDaemonRig.needs))
    func bluetoothdStartingAfterTheDaemonIsWaitedFor() throws {
        let rig = try BlueZDaemonRig(transport: "bluez")
        defer { rig.stop() }
        let app = try rig.startDaemon()
        let run = rig.run
        let (startSR, _) = try run.timeline(app)
        for sensor in [SRSensor.heartRate, .electrocardiogram] { try run.startRecording(app, sensor) }
        #expect(IIODaemonRun.eventually(10) { run.log.contains(Self.absentLine) }, "\(run.log)")
        #expect(run.log.contains("ble: 1 wearable(s) over bluez (hci0)"), "\(run.log)")
        #expect(!run.log.contains("ble driver unavailable"), "\(run.log)")
        // A few scans pass without bluetoothd: the reason is still said once.
        sleep(3)
        try rig.startStandIn()
        #expect(
            IIODaemonRun.eventually(20, rig.streaming),
            "the daemon did not reach the H10 once bluetoothd started\n\(run.log)\n\(rig.bus.logText())")
        let mismatch = try rig.ecgMismatch(app, from: startSR)
        #expect(mismatch == nil, "\(mismatch ?? "")\n\(run.log)")
        #expect(run.log.contains("bluez: bluetoothd is on the system bus; wearables are looked for through it"), "\(run.log)")
        #expect(run.log.components(separatedBy: Self.absentLine).count == 2, "\(run.log)")
    }

    @Test(.timeLimit(.minutes(3)), .needs(BlueZDaemonRig.needs))
    func withoutATransportBluezIsChosenWhereBluetoothdManagesTheAdapter() throws {
        let rig = try BlueZDaemonRig(transport: nil)
        defer { rig.stop() }
        try rig.startStandIn()
        let app = try rig.startDaemon()
        let run = rig.run
        let (startSR, _) = try run.timeline(app)
        for sensor in [SRSensor.heartRate, .electrocardiogram] { try run.startRecording(app, sensor) }
        #expect(
            IIODaemonRun.eventually(20, rig.streaming),
            "the daemon did not reach the H10 through bluetoothd\n\(run.log)\n\(rig.bus.logText())")
        let chosen =
            "ble: no [ble] transport set: bluetoothd manages hci0 (org.bluez exports /org/bluez/hci0), so wearables go through it: bluez"
        #expect(run.log.contains(chosen), "\(run.log)")
        #expect(run.log.components(separatedBy: "no [ble] transport set").count == 2, "\(run.log)")
        let mismatch = try rig.ecgMismatch(app, from: startSR)
        #expect(mismatch == nil, "\(mismatch ?? "")\n\(run.log)")
    }

    @Test(.timeLimit(.minutes(3)), .needs(BlueZDaemonRig.needs))
    func hciRefusesAnAdapterBluetoothdManagesAndTheDaemonGoesOn() throws {
        let rig = try BlueZDaemonRig(transport: "hci")
        defer { rig.stop() }
        try rig.startStandIn()
        let app = try rig.startDaemon()
        let run = rig.run
        #expect(IIODaemonRun.eventually(10) { run.log.contains("ble driver unavailable") }, "\(run.log)")
        let refusal = run.log.split(separator: "\n").first { $0.contains("managed by bluetoothd") }.map(String.init) ?? ""
        #expect(
            refusal.contains(
                "ble driver unavailable: Bluetooth busy: hci0 is managed by bluetoothd, which owns its connections and ATT channel, so the hci transport will not race it: use `[ble] transport = bluez` (wearables through bluetoothd)"
            ), "\(run.log)")
        // One sentence: the fix ends it, nothing follows but the driver's own tail.
        #expect(refusal.components(separatedBy: ". ").count == 1, "\(refusal)")
        // The daemon keeps running without wearables, and never touched the H10.
        sleep(2)
        let timeline = try run.timeline(app)
        #expect(timeline.now > 0)
        #expect(try run.devices().allSatisfy { !$0.device.hasPrefix("ble:") })
        #expect(rig.h10.connections == 0)
    }
}
