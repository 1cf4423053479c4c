import BLETestKit
import Foundation
import SensorKit
import SensorSimulation
import SensorTestKit
import Testing

/// How the real daemon meets bluetoothd: started before it (boot order), chosen without
/// `transport =` where bluetoothd manages the adapter (also one it exports late, at boot), and
/// refused by `transport = hci` there.
/// Through the bluetoothd stand-in on a private bus that the daemon takes for its system bus.
@Suite(.serialized) struct BLEBlueZTransportChoiceTests {
    static let absentLine =
        "bluez: bluetoothd is not running (org.bluez is not on the system bus); wearables wait until it is on the system bus"

    /// An H10 rig on `transport` (nil: none set), the stand-in started only if `standIn`, with `options`.
    static func h10Rig(transport: String?, standIn: Bool, options: [String] = []) throws -> (BlueZDaemonRig, EmulatedPeripheral) {
        let rig = try BlueZDaemonRig(
            sensors: "heartRate, electrocardiogram", entitlements: ["heart-rate", "ecg"],
            wearables: BLEBlueZEndToEndTests.h10Only, transport: transport, standIn: standIn, standInOptions: options)
        do {
            return (rig, try EmulatedPeripheral(directory: rig.directory, profile: .h10(address: BLEEndToEndTests.h10)))
        } catch {
            rig.stop()
            throw error
        }
    }

    /// Starts the daemon, records the H10's heart rate and ECG; the app and the recording's start.
    static func record(_ rig: BlueZDaemonRig) throws -> (ReaderConnection, start: Int64, anchor: Int64) {
        let app = try rig.start()
        let (start, anchor) = try rig.run.timeline(app)
        for sensor in [SRSensor.heartRate, .electrocardiogram] { try rig.run.startRecording(app, sensor) }
        return (app, start, anchor)
    }

    /// The H10 streams within 20 s: the daemon reached it (`when`: how, for the failure).
    static func expectStreaming(
        _ h10: EmulatedPeripheral, _ rig: BlueZDaemonRig, _ when: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            IIODaemonRun.eventually(20) { H10ECGFeed(h10).streaming }, "the daemon did not reach the H10 \(when)\n\(rig.logs)",
            sourceLocation: sourceLocation)
    }

    /// A second and a half of ECG and heart rate, every value stored exactly and on time (the
    /// feed's clock starts now: the H10's device clock is mapped from the frames' arrival).
    static func expectRecorded(
        _ h10: EmulatedPeripheral, _ app: ReaderConnection, _ rig: BlueZDaemonRig, start: Int64, anchor: Int64
    ) {
        let feed = H10ECGFeed(h10)
        feed.feed(seconds: 1.5)
        BLEBlueZEndToEndTests.expectExact(feed, feed.recorded(app, rig.run, from: start, anchor: anchor), gaps: 0, rig.logs)
    }

    @Test(.timeLimit(.minutes(3)), .needs(BlueZDaemonRig.needs))
    func bluetoothdStartingAfterTheDaemonIsWaitedFor() throws {
        let (rig, h10) = try Self.h10Rig(transport: "bluez", standIn: false)
        defer { rig.stop() }
        let (app, start, anchor) = try Self.record(rig)
        let run = rig.run
        #expect(IIODaemonRun.eventually(10) { run.log.contains(Self.absentLine) }, "\(run.log)")
        #expect(run.log.contains("ble: 1 wearable(s) over bluez (hci0)"), "\(run.log)")
        #expect(!run.log.contains("ble driver unavailable"), "\(run.log)")
        // A few scans pass without bluetoothd: the reason is still said once.
        sleep(3)
        try rig.startStandIn()
        Self.expectStreaming(h10, rig, "once bluetoothd started")
        Self.expectRecorded(h10, app, rig, start: start, anchor: anchor)
        #expect(run.log.contains("bluez: bluetoothd is on the system bus; wearables are looked for through it"), "\(run.log)")
        #expect(run.log.components(separatedBy: Self.absentLine).count == 2, "\(run.log)")
    }

    @Test(.timeLimit(.minutes(3)), .needs(BlueZDaemonRig.needs))
    func withoutATransportBluezIsChosenWhereBluetoothdManagesTheAdapter() throws {
        let (rig, h10) = try Self.h10Rig(transport: nil, standIn: true)
        defer { rig.stop() }
        let (app, start, anchor) = try Self.record(rig)
        let run = rig.run
        Self.expectStreaming(h10, rig, "through bluetoothd")
        let chosen =
            "ble: no [ble] transport set: bluetoothd manages hci0 (org.bluez exports /org/bluez/hci0), so wearables go through it: bluez"
        #expect(run.log.contains(chosen), "\(run.log)")
        #expect(run.log.components(separatedBy: "no [ble] transport set").count == 2, "\(run.log)")
        Self.expectRecorded(h10, app, rig, start: start, anchor: anchor)
    }

    /// Boot on a tablet: bluetoothd owns org.bluez but exports hci0 only a moment later (the
    /// kernel reported the controller late). Without `transport =` the daemon waits for it and
    /// takes bluez, never hci.
    @Test(.timeLimit(.minutes(3)), .needs(BlueZDaemonRig.needs))
    func withoutATransportAnAdapterBluetoothdExportsLateIsWaitedFor() throws {
        let (rig, h10) = try Self.h10Rig(transport: nil, standIn: true, options: ["--adapter-asked=3"])
        defer { rig.stop() }
        let (app, start, anchor) = try Self.record(rig)
        let run = rig.run
        Self.expectStreaming(h10, rig, "through bluetoothd")
        let chosen = run.log.split(separator: "\n").first { $0.contains("no [ble] transport set") }.map(String.init) ?? ""
        #expect(chosen.contains("bluetoothd manages hci0 (org.bluez exported /org/bluez/hci0 after "), "\(run.log)")
        #expect(chosen.hasSuffix("so wearables go through it: bluez"), "\(run.log)")
        #expect(run.log.components(separatedBy: "no [ble] transport set").count == 2, "\(run.log)")
        #expect(run.log.contains("ble: 1 wearable(s) over bluez or hci (hci0"), "\(run.log)")
        #expect(!run.log.contains("ble driver unavailable"), "\(run.log)")
        // It looked more than once: before the adapter, and after.
        #expect(try rig.count("withheld:Get") >= 2)
        Self.expectRecorded(h10, app, rig, start: start, anchor: anchor)
    }

    /// bluetoothd runs but has not exported hci0 by the end of the daemon's wait: bluez all the
    /// same (never hci beside bluetoothd), and the H10 is recorded once the adapter comes.
    @Test(.timeLimit(.minutes(3)), .needs(BlueZDaemonRig.needs))
    func withoutATransportBluezIsTakenEvenIfTheAdapterComesAfterTheWait() throws {
        let (rig, h10) = try Self.h10Rig(transport: nil, standIn: true, options: ["--adapter-withheld"])
        defer { rig.stop() }
        let (app, start, anchor) = try Self.record(rig)
        let run = rig.run
        let chosen =
            "ble: no [ble] transport set: bluetoothd is on the system bus but did not export /org/bluez/hci0 within 10 s;"
        #expect(IIODaemonRun.eventually(30) { run.log.contains(chosen) }, "\(run.log)")
        let waiting =
            "bluez: bluetoothd does not export hci0 (yet: it adds an adapter once the kernel reports its controller; `bluetoothctl list` shows the ones it has); wearables wait until it does"
        #expect(IIODaemonRun.eventually(10) { run.log.contains(waiting) }, "\(run.log)")
        try rig.knob("ExportAdapter")
        Self.expectStreaming(h10, rig, "once bluetoothd exported hci0")
        Self.expectRecorded(h10, app, rig, start: start, anchor: anchor)
        #expect(run.log.contains("bluez: bluetoothd exports hci0 now; wearables are looked for through it"), "\(run.log)")
        #expect(!run.log.contains("ble driver unavailable"), "\(run.log)")
        #expect(!run.log.contains("opened directly: hci"), "\(run.log)")
        #expect(run.log.components(separatedBy: Self.adapterMissingScan).count == 2, "\(run.log)")
    }

    static let adapterMissingScan =
        "ble: scan failed: Bluetooth unavailable: bluetoothd does not export hci0 yet (it adds an adapter once the kernel reports its controller)"

    @Test(.timeLimit(.minutes(3)), .needs(BlueZDaemonRig.needs))
    func hciRefusesAnAdapterBluetoothdManagesAndTheDaemonGoesOn() throws {
        let (rig, h10) = try Self.h10Rig(transport: "hci", standIn: true)
        defer { rig.stop() }
        let app = try rig.start()
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
        #expect(h10.connections == 0)
    }
}
