import BLETestKit
import Dispatch
import Foundation
import Glibc
import SensorSimulation
import SensorTestKit
import Synchronization
import SystemBus
import Testing

@testable import BLEBridge

/// The bluez transport against the bluetoothd stand-in (`Tests/Fixtures/bluez/bluetoothd_standin.py`)
/// on a private bus, backed by emulated peripherals over their real ATT sockets: the bytes a
/// peripheral sends are the bytes the link reports.
final class BlueZRig: @unchecked Sendable {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/bluez/bluetoothd_standin.py").path
    static let needs = TestEnvironment.Need.tools([
        (PrivateBus.daemonPath, "dbus-daemon"), ("/usr/bin/timeout", "coreutils"), (TestEnvironment.python, "python3"),
    ])
    static let patience: Double = 30

    let bus: PrivateBus
    let directory: String
    let control: DBusConnection
    private(set) var standIn: ChildProcess?
    var peripherals: [EmulatedPeripheral] = []

    /// `standInOptions`: the stand-in's (`--adapter-withheld`: bluetoothd before the kernel
    /// reported the controller).
    init(standInOptions: [String] = []) throws {
        try TestEnvironment.require(Self.needs)
        bus = try PrivateBus(seconds: 120)
        directory = bus.folder + "/emulated"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        control = try DBusConnection(.address(bus.address), description: "test")
        try startStandIn(standInOptions)
    }

    deinit {
        control.close()
        bus.close()
    }

    func add(_ profile: EmulatedPeripheral.Profile) throws -> EmulatedPeripheral {
        let peripheral = try EmulatedPeripheral(directory: directory, profile: profile)
        peripherals.append(peripheral)
        return peripheral
    }

    func startStandIn(_ options: [String] = []) throws {
        standIn = try bus.spawn([TestEnvironment.python, Self.script, bus.address, directory] + options, log: "bluetoothd")
        try waitUntil("org.bluez on the bus") { try wait { control.nameHasOwner("org.bluez", queue: $0, completion: $1) } }
    }

    func stopStandIn() {
        if let standIn { bus.stop(standIn) }
        standIn = nil
    }

    func transport(
        _ change: (inout BlueZTransport.Options) -> Void = { _ in }, log: @escaping @Sendable (String) -> Void = { _ in }
    ) throws -> BlueZTransport {
        var options = BlueZTransport.Options()
        change(&options)
        return try BlueZTransport(bus: .address(bus.address), options: options, log: log)
    }

    /// A knob or counter of the stand-in (`org.sensorkit.StandIn`).
    @discardableResult
    func knob(_ member: String, _ arguments: [DBusValue] = []) throws -> [DBusValue] {
        try wait { queue, completion in
            control.call(
                destination: "org.bluez", path: try! DBusObjectPath("/org/sensorkit/StandIn"), interface: "org.sensorkit.StandIn",
                member: member, arguments: arguments, timeout: .seconds(10), queue: queue, completion: completion)
        }
    }

    func count(_ what: String) throws -> UInt32 { try knob("Count", [.string(what)])[0].as(UInt32.self) }

    func scanUntilFound(_ transport: BlueZTransport, _ address: String) throws -> BLEScanReport {
        var found: BLEScanReport?
        try waitUntil("\(address) in a scan") {
            found = (try? transport.scan())?.first { $0.address == address }
            return found != nil
        }
        return found!
    }

    func waitUntil(_ what: String, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(Self.patience)
        while try !condition() {
            guard Date() < deadline else { throw Timeout(what: what + "\n" + bus.logText()) }
            usleep(20_000)
        }
    }

    func wait<T: Sendable>(_ start: (DispatchQueue, @escaping @Sendable (Result<T, DBusError>) -> Void) -> Void) throws -> T {
        let outcome = Mutex<Result<T, DBusError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        start(DispatchQueue(label: "test.results")) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try outcome.withLock { $0! }.get()
    }

    struct Timeout: Error, CustomStringConvertible {
        let what: String
        var description: String { "timed out waiting for \(what)" }
    }
}

/// One link's events, in order.
final class LinkEvents: @unchecked Sendable {
    let queue = DispatchQueue(label: "test.link")
    private let events = Mutex<[GATTLinkEvent]>([])
    var link: (any GATTLink)?

    var handler: @Sendable (GATTLinkEvent) -> Void { { [weak self] event in self?.events.withLock { $0.append(event) } } }
    var all: [GATTLinkEvent] { events.withLock { $0 } }

    func on(_ body: @escaping (any GATTLink) -> Void) { queue.sync { body(link!) } }

    func wait<T>(_ what: String, _ match: (GATTLinkEvent) -> T?) throws -> T {
        let deadline = Date().addingTimeInterval(BlueZRig.patience)
        while true {
            if let found = all.lazy.compactMap(match).first { return found }
            guard Date() < deadline else { throw BlueZRig.Timeout(what: "\(what); events: \(all)") }
            usleep(10_000)
        }
    }

    func ready() throws -> (Int, [GATTCharacteristicID: GATTClient.Properties]) {
        try wait("ready") { if case .ready(let mtu, let characteristics) = $0 { (mtu, characteristics) } else { nil } }
    }

    func subscribed(_ id: GATTCharacteristicID) throws {
        try wait("subscribed \(id)") { event -> Bool? in
            if case .subscribed(id) = event { return true }
            if case .failed(let failure) = event, failure.characteristic == id { return false }
            return nil
        }.ifFalse { throw BlueZRig.Timeout(what: "subscription of \(id) failed: \(all)") }
    }

    func notifications(_ id: GATTCharacteristicID) -> [[UInt8]] {
        all.compactMap { if case .notification(id, let value) = $0 { value } else { nil } }
    }
}

extension Bool {
    func ifFalse(_ body: () throws -> Void) rethrows { if !self { try body() } }
}

enum IDs {
    static let heartRate = GATTCharacteristicID(service: .heartRateService, characteristic: .heartRateMeasurement)
    static let manufacturer = GATTCharacteristicID(service: .deviceInformationService, characteristic: .manufacturerName)
    static let battery = GATTCharacteristicID(service: .batteryService, characteristic: .batteryLevel)
    static let controlPoint = GATTCharacteristicID(
        service: .polarMeasurementDataService, characteristic: .polarMeasurementControlPoint)
    static let data = GATTCharacteristicID(service: .polarMeasurementDataService, characteristic: .polarMeasurementData)
}

@Suite(.timeLimit(.minutes(3))) struct BlueZTransportTests {
    /// Discovery → connect → ready → DIS and battery → heart rate and PMD subscribed → the
    /// emulated H10's bytes arrive exactly; notifications come through the acquired socket,
    /// not as D-Bus messages; closing stops what it started and disconnects what it connected.
    @Test func anH10ThroughBluetoothd() throws {
        let rig = try BlueZRig()
        let h10 = try rig.add(.h10())
        let transport = try rig.transport()
        defer { transport.close() }
        let report = try rig.scanUntilFound(transport, "C0:FF:EE:00:00:10")
        #expect(report.data.localName == "Polar H10 0A0B0C0D")
        #expect(try rig.count("StartDiscovery") == 1)
        let filter = try rig.count("SetDiscoveryFilter")
        #expect(filter == 1)

        let events = LinkEvents()
        events.link = try transport.connect(report, queue: events.queue, onEvent: events.handler)
        let (mtu, characteristics) = try events.ready()
        #expect(mtu == 247)
        #expect(characteristics[IDs.heartRate] == [.notify])
        #expect(characteristics[IDs.controlPoint]?.contains(.indicate) == true)
        #expect(characteristics[IDs.battery] == [.read, .notify])

        events.on { $0.read(IDs.manufacturer) }
        events.on { $0.read(IDs.battery) }
        let manufacturer = try events.wait("DIS") {
            if case .readCompleted(IDs.manufacturer, let value) = $0 { value } else { nil }
        }
        #expect(manufacturer == Array("Polar Electro Oy".utf8))
        let battery = try events.wait("battery") { if case .readCompleted(IDs.battery, let value) = $0 { value } else { nil } }
        #expect(battery == [87])

        for id in [IDs.heartRate, IDs.controlPoint, IDs.data] { events.on { $0.subscribe(id) } }
        for id in [IDs.heartRate, IDs.controlPoint, IDs.data] { try events.subscribed(id) }
        // The control point only indicates: AcquireNotify is refused (NotSupported), StartNotify serves it.
        #expect(try rig.count("StartNotify") == 1)

        let measurement: [UInt8] = [0x16, 72, 0x00, 0x04, 0x10, 0x04]
        try rig.waitUntil("heart rate delivered") {
            h10.notifyHeartRate(measurement) && !events.notifications(IDs.heartRate).isEmpty
        }
        // Notified again until the first arrived: every copy is the measurement, byte for byte.
        #expect(events.notifications(IDs.heartRate).allSatisfy { $0 == measurement })

        let start: [UInt8] = [0x02, 0x00, 0x00, 0x01, 0x82, 0x00, 0x01, 0x01, 0x0E, 0x00]
        events.on { $0.write(IDs.controlPoint, start) }
        _ = try events.wait("write") { if case .writeCompleted(IDs.controlPoint) = $0 { true } else { nil } }
        let response = try events.wait("PMD response") { event -> [UInt8]? in
            if case .notification(IDs.controlPoint, let value) = event { value } else { nil }
        }
        #expect(Array(response.prefix(4)) == [0xF0, 0x02, 0x00, 0x00])
        #expect(h10.runningMeasurements == [0])

        var frame: [UInt8] = [0x00] + withUnsafeBytes(of: UInt64(800_000_000_000_000_000).littleEndian, Array.init) + [0x00]
        for sample in 0..<73 { frame += [UInt8(sample), 0x01, 0x00] }
        #expect(h10.sendRawFrame(frame))
        try rig.waitUntil("ECG frame delivered") { events.notifications(IDs.data).count == 1 }
        #expect(events.notifications(IDs.data) == [frame])
        // Two notifications went through acquired sockets: no PropertiesChanged carried them.
        #expect(try rig.count("notification:fd") >= 2)
        #expect(try rig.count("notification:signal") == 1)  // the control point's indication only

        events.on { $0.write(IDs.controlPoint, [0x03, 0x00]) }
        _ = try events.wait("stop") {
            if case .notification(IDs.controlPoint, let value) = $0, value.starts(with: [0xF0, 0x03]) { true } else { nil }
        }
        #expect(h10.runningMeasurements == [])
        events.on { $0.close() }
        try rig.waitUntil("disconnected") { !h10.isConnected }
        #expect(try rig.count("Disconnect") == 1)
        #expect(!events.all.contains { if case .linkLost = $0 { true } else { false } })
    }

    /// The emulated transport's ECG check through bluetoothd: twenty frames of the simulated H10
    /// clock arrive through the acquired socket and map onto the host timeline within one sample
    /// period of the truth; a Verity's compressed and raw PPG frames decode to what it sent.
    @Test func ecgOnTheHostTimelineAndPPGThroughBluetoothd() throws {
        let rig = try BlueZRig()
        let h10 = try rig.add(.h10())
        let sense = try rig.add(.veritySense())
        let transport = try rig.transport()
        defer { transport.close() }
        let events = LinkEvents()
        events.link = try transport.connect(
            try rig.scanUntilFound(transport, "C0:FF:EE:00:00:10"), queue: events.queue, onEvent: events.handler)
        _ = try events.ready()
        for id in [IDs.controlPoint, IDs.data] { events.on { $0.subscribe(id) } }
        for id in [IDs.controlPoint, IDs.data] { try events.subscribed(id) }
        events.on { $0.write(IDs.controlPoint, PMDCommand.startECG.encoded()) }
        let response = try events.wait("ECG start answered") { event -> PMDControlPointIndication? in
            guard case .notification(IDs.controlPoint, let value) = event else { return nil }
            return try? PMDControlPointIndication(decoding: value)
        }
        #expect(response == .response(PMDResponse(opcode: 2, measurementType: 0, status: .success, more: false, parameters: [])))
        var simulation = H10ClockSimulation(seed: 21)
        var truth: [UInt64: (samples: [Int64], receive: Int64)] = [:]
        for _ in 0..<20 {
            let frame = simulation.next()
            truth[frame.deviceTimestamp] = (frame.trueSampleTimes, frame.receiveTime)
            #expect(h10.sendECG(timestamp: frame.deviceTimestamp, microvolts: (0..<73).map { Int32($0 * 100 - 3600) }))
        }
        try rig.waitUntil("20 ECG frames") { events.notifications(IDs.data).count == 20 }
        var timeline = PMDStreamTimeline(measurementType: .ecg, sampleRateHz: 130)
        var released: [PMDStreamTimeline.TimedFrame] = []
        for value in events.notifications(IDs.data) {
            let stamp = try #require(truth[try PMDFrame(decoding: value).deviceTimestamp]).receive
            released += timeline.receive(value, at: stamp).compactMap { if case .frame(let f) = $0 { f } else { nil } }
        }
        released += timeline.finish().compactMap { if case .frame(let f) = $0 { f } else { nil } }
        #expect(released.count == 20)
        for frame in released where frame.frame.deviceTimestamp > released[2].frame.deviceTimestamp {
            #expect(frame.frame.samples.first == [-3600] && frame.frame.samples.last == [3600])
            for (time, trueTime) in zip(frame.sampleTimes, truth[frame.frame.deviceTimestamp]!.samples) {
                #expect(abs(time - trueTime) < Int64(1e9 / 130))
            }
        }

        let ppg = LinkEvents()
        ppg.link = try transport.connect(
            try rig.scanUntilFound(transport, "C0:FF:EE:00:00:20"), queue: ppg.queue, onEvent: ppg.handler)
        _ = try ppg.ready()
        for id in [IDs.controlPoint, IDs.data] { ppg.on { $0.subscribe(id) } }
        for id in [IDs.controlPoint, IDs.data] { try ppg.subscribed(id) }
        ppg.on {
            $0.write(IDs.controlPoint, PMDCommand.startMeasurement(.ppg, settings: [PMDSetting(.sampleRate, [55])]).encoded())
        }
        try rig.waitUntil("PPG running") { sense.runningMeasurements == [1] }
        let samples: [[Int32]] = (0..<40).map { [-517_445 + $0 * 3, -484_483 - $0 * 200, -476_780 + ($0 % 5), 1_000 + $0] }
        #expect(sense.sendPPG(timestamp: 799_443_547_265_317_677, samples: samples, compressed: true))
        #expect(sense.sendPPG(timestamp: 799_443_548_265_317_677, samples: Array(samples.prefix(18)), compressed: false))
        try rig.waitUntil("2 PPG frames") { ppg.notifications(IDs.data).count == 2 }
        let frames = try ppg.notifications(IDs.data).map { try PMDFrame(decoding: $0) }
        #expect(frames.map(\.isCompressed) == [true, false])
        #expect(frames.first?.samples == samples && frames.last?.samples == Array(samples.prefix(18)))
        // Each link got only its own device's notifications.
        #expect(events.notifications(IDs.data).count == 20)

        events.on { $0.write(IDs.controlPoint, PMDCommand.stopMeasurement(.ecg).encoded()) }
        try rig.waitUntil("ECG stopped") { h10.runningMeasurements.isEmpty }
        events.on { $0.close() }
        ppg.on { $0.close() }
        try rig.waitUntil("both disconnected") { !h10.isConnected && !sense.isConnected }
    }

    /// `AcquireNotify` refused with `InProgress` (another client started notifications) falls back to
    /// `StartNotify`; a `StopNotify` from another client closes an acquired socket, and the link
    /// subscribes again with `StartNotify` without losing the stream.
    @Test func refusedAndStolenNotifications() throws {
        let rig = try BlueZRig()
        let strap = try rig.add(.h10())
        let transport = try rig.transport()
        defer { transport.close() }
        let report = try rig.scanUntilFound(transport, "C0:FF:EE:00:00:10")
        let events = LinkEvents()
        events.link = try transport.connect(report, queue: events.queue, onEvent: events.handler)
        _ = try events.ready()
        try rig.knob(
            "RefuseAcquireNotify", [.string("00002a37-0000-1000-8000-00805f9b34fb"), .string("org.bluez.Error.InProgress")])
        events.on { $0.subscribe(IDs.heartRate) }
        events.on { $0.subscribe(IDs.data) }
        try events.subscribed(IDs.heartRate)
        try events.subscribed(IDs.data)
        #expect(try rig.count("StartNotify") == 1)
        try rig.waitUntil("heart rate by signal") {
            strap.notifyHeartRate([0x00, 61]) && !events.notifications(IDs.heartRate).isEmpty
        }
        #expect(events.notifications(IDs.heartRate).allSatisfy { $0 == [0x00, 61] })

        try rig.knob("StopNotifyFromOtherClient", [.string("fb005c82-02e7-f387-1cad-8acd2d8df0c8")])
        try rig.waitUntil("StartNotify after the stolen socket") { try rig.count("StartNotify") == 2 }
        let frame: [UInt8] = [0x00] + Array(repeating: 0, count: 8) + [0x00, 1, 2, 3]
        try rig.waitUntil("frame after the fallback") { strap.sendRawFrame(frame) && !events.notifications(IDs.data).isEmpty }
        #expect(events.notifications(IDs.data).first == frame)
        #expect(!events.all.contains { if case .linkLost = $0 { true } else { false } })
        #expect(transport.problems.contains { $0.contains("restarted with StartNotify") })
    }

    /// A wearable bluetoothd already holds (paired and connected by the user) is used through that
    /// connection: no Connect, and closing the link does not disconnect it.
    @Test func aConnectionBluetoothdAlreadyHoldsIsNotFoughtOver() throws {
        let rig = try BlueZRig()
        let strap = try rig.add(.strap())
        let transport = try rig.transport()
        defer { transport.close() }
        let report = try rig.scanUntilFound(transport, "C0:FF:EE:00:00:01")
        _ = try rig.wait { queue, completion in
            rig.control.call(
                destination: "org.bluez", path: try! DBusObjectPath(report.endpoint), interface: "org.bluez.Device1",
                member: "Connect", timeout: .seconds(10), queue: queue, completion: completion)
        }
        // As with a wearable bluetoothd connected long ago: the transport has seen it connected.
        try rig.waitUntil("the transport sees the connection") {
            transport.queue.sync { transport.tree.device(address: "C0:FF:EE:00:00:01")?.connected == true }
        }
        let events = LinkEvents()
        events.link = try transport.connect(report, queue: events.queue, onEvent: events.handler)
        _ = try events.ready()
        #expect(try rig.count("Connect") == 1)
        events.on { $0.close() }
        Thread.sleep(forTimeInterval: 0.3)
        #expect(strap.isConnected)
        #expect(try rig.count("Disconnect") == 0)
    }

    /// bluetoothd stopped mid-stream: the link is lost (once), scans say bluetoothd is away; started
    /// again: discovery resumes and the wearable connects again. The peripheral dropping the link
    /// is a loss too.
    @Test func aBluetoothdRestartIsALinkLossAndANewDiscovery() throws {
        let rig = try BlueZRig()
        let h10 = try rig.add(.h10())
        let transport = try rig.transport()
        defer { transport.close() }
        var report = try rig.scanUntilFound(transport, "C0:FF:EE:00:00:10")
        let events = LinkEvents()
        events.link = try transport.connect(report, queue: events.queue, onEvent: events.handler)
        _ = try events.ready()
        rig.stopStandIn()
        let why = try events.wait("link lost") { if case .linkLost(let why) = $0 { why } else { nil } }
        #expect(why.contains("bluetoothd"))
        try rig.waitUntil("scan refused while bluetoothd is away") {
            do { _ = try transport.scan(); return false } catch {
                return "\(error)".contains("bluetoothd is not on the system bus")
            }
        }
        try rig.startStandIn()
        report = try rig.scanUntilFound(transport, "C0:FF:EE:00:00:10")
        try rig.waitUntil("the old ATT link closed") { !h10.isConnected }
        let again = LinkEvents()
        again.link = try transport.connect(report, queue: again.queue, onEvent: again.handler)
        _ = try again.ready()
        #expect(events.all.filter { if case .linkLost = $0 { true } else { false } }.count == 1)

        h10.disconnect()
        let dropped = try again.wait("peripheral dropped") { if case .linkLost(let why) = $0 { why } else { nil } }
        #expect(dropped.contains("disconnected"))
    }

    /// Property values no bluetoothd would send do not crash the transport: the objects are left
    /// out or cut, the problems reported, and a real wearable beside them is still found.
    @Test func hostilePropertiesAreReportedNotTrusted() throws {
        let rig = try BlueZRig()
        _ = try rig.add(.strap())
        let transport = try rig.transport()
        defer { transport.close() }
        _ = try rig.scanUntilFound(transport, "C0:FF:EE:00:00:01")
        try rig.knob("Hostile")
        try rig.waitUntil("the hostile objects read") {
            _ = try transport.scan()
            return transport.problems.contains { $0.contains("MTU 65535") }
        }
        let hostile = transport.queue.sync { transport.tree.device(address: "66:66:66:66:66:62") }
        #expect(hostile?.rssi == nil)
        #expect(hostile?.name?.utf8.count == BlueZObjectTree.maximumNameBytes)
        #expect(hostile?.advertisingData.localName?.utf8.count == BlueZObjectTree.maximumNameBytes)
        // Without a valid RSSI and not connected it was not heard: no scan report.
        #expect(try !transport.scan().contains { $0.address == "66:66:66:66:66:62" })
        let problems = transport.problems.joined(separator: "\n")
        for expected in ["Device1 without a valid Address", "RSSI", "UUIDs holds 100000 entries", "MTU 65535", "is not a UUID"] {
            #expect(problems.contains(expected), "\(expected) in \(problems)")
        }
        #expect(try transport.scan().contains { $0.address == "C0:FF:EE:00:00:01" })
    }

    /// `transport = hci` on an adapter bluetoothd manages refuses before touching the kernel, with
    /// one sentence naming the fix; the same adapter without bluetoothd gets as far as the kernel
    /// (which here has no Bluetooth).
    @Test func hciRefusesAnAdapterBluetoothdManages() throws {
        let rig = try BlueZRig()
        #expect(BluetoothdPresence.probe(adapter: "hci0", bus: .address(rig.bus.address)) == .managesAdapter)
        #expect(BluetoothdPresence.probe(adapter: "hci1", bus: .address(rig.bus.address)) == .runsWithoutAdapter)
        #expect {
            _ = try HCITransport.open(adapter: "hci0", bus: .address(rig.bus.address))
        } throws: { error in
            guard case .busy(let why) = error as? BLETransportError else { return false }
            return why.contains("hci0 is managed by bluetoothd") && why.contains("[ble] transport = bluez")
        }
        rig.stopStandIn()
        try rig.waitUntil("org.bluez gone") {
            !(try rig.wait { rig.control.nameHasOwner("org.bluez", queue: $0, completion: $1) })
        }
        #expect(BluetoothdPresence.probe(adapter: "hci0", bus: .address(rig.bus.address)) == .absent)
        #expect {
            _ = try HCITransport.open(adapter: "hci0", bus: .address(rig.bus.address))
        } throws: { error in
            if case .busy = error as? BLETransportError { return false }
            return true
        }
    }

    /// A wearable that wants bonding: bluetoothd refuses a read with NotPermitted "Not paired"; the
    /// link pairs it once through bluetoothd, which calls back the daemon's NoInputNoOutput agent,
    /// and the read goes through.
    @Test func aWearableThatWantsBondingIsPairedThroughTheAgent() throws {
        let rig = try BlueZRig()
        _ = try rig.add(.strap())
        let transport = try rig.transport()
        defer { transport.close() }
        let report = try rig.scanUntilFound(transport, "C0:FF:EE:00:00:01")
        try rig.waitUntil("the agent registered") { try rig.count("RegisterAgent:NoInputNoOutput") == 1 }
        try rig.knob("RequirePairing", [.string("C0:FF:EE:00:00:01")])
        let events = LinkEvents()
        events.link = try transport.connect(report, queue: events.queue, onEvent: events.handler)
        _ = try events.ready()
        events.on { $0.read(IDs.manufacturer) }
        let value = try events.wait("the read after pairing") { event -> [UInt8]? in
            if case .readCompleted(IDs.manufacturer, let value) = event { return value }
            if case .failed(let failure) = event { return Array("failed: \(failure)".utf8) }
            return nil
        }
        #expect(String(decoding: value, as: UTF8.self) == "Emulated")
        #expect(try rig.count("Pair") == 1)
        #expect(try rig.count("agent confirmed") == 1)
        #expect(transport.pairedWearables == ["C0:FF:EE:00:00:01"])
        // What `sensorkitctl devices` shows of it, through the link's status.
        #expect(transport.status(of: "c0:ff:ee:00:00:01")["pairing"]?.hasPrefix("paired by sensorkitd") == true)
        #expect(transport.status(of: "C0:FF:EE:00:00:02").isEmpty)
        #expect(try rig.count("RequestDefaultAgent") == 0)
    }

    /// Discovery runs only while scans come (the driver scans while a wearable is missing), with
    /// the filter set first; it stops once they stop, and starts again with the next scan.
    @Test func discoveryRunsOnlyWhileScansCome() throws {
        let rig = try BlueZRig()
        _ = try rig.add(.strap())
        let transport = try rig.transport { $0.discoveryLinger = .milliseconds(200) }
        defer { transport.close() }
        #expect(try rig.count("StartDiscovery") == 0)
        _ = try rig.scanUntilFound(transport, "C0:FF:EE:00:00:01")
        #expect(try rig.count("SetDiscoveryFilter") == 1 && rig.count("StartDiscovery") == 1)
        try rig.waitUntil("discovery stopped") { try rig.count("StopDiscovery") == 1 }
        _ = try transport.scan()
        try rig.waitUntil("discovery started again") { try rig.count("StartDiscovery") == 2 }
        #expect(try rig.count("SetDiscoveryFilter") == 2)
    }

    /// Three scans in a row are refused as unavailable, each for a reason `why` accepts.
    static func expectScansRefused(
        _ transport: BlueZTransport, sourceLocation: SourceLocation = #_sourceLocation, because why: (String) -> Bool
    ) {
        for _ in 0..<3 {
            #expect(sourceLocation: sourceLocation) {
                _ = try transport.scan()
            } throws: { error in
                if case .unavailable(let reason)? = error as? BLETransportError { why(reason) } else { false }
            }
        }
    }

    /// bluetoothd starting after the transport (boot order): the transport waits for it, says
    /// why once however often it is scanned meanwhile, and finds the wearable once it is there.
    @Test func bluetoothdStartingLaterIsWaitedFor() throws {
        let rig = try BlueZRig()
        let h10 = try rig.add(.h10())
        rig.stopStandIn()
        try rig.waitUntil("org.bluez gone") {
            !(try rig.wait { rig.control.nameHasOwner("org.bluez", queue: $0, completion: $1) })
        }
        let lines = Mutex<[String]>([])
        let transport = try rig.transport(log: { line in lines.withLock { $0.append(line) } })
        defer { transport.close() }
        Self.expectScansRefused(transport) { $0.contains("bluetoothd is not on the system bus") }
        try rig.startStandIn()
        let report = try rig.scanUntilFound(transport, "C0:FF:EE:00:00:10")
        let events = LinkEvents()
        events.link = try transport.connect(report, queue: events.queue, onEvent: events.handler)
        _ = try events.ready()
        #expect(h10.isConnected)
        let said = lines.withLock { $0 }
        #expect(
            said.filter { $0.hasPrefix("bluez: bluetoothd is not running (org.bluez is not on the system bus)") }.count == 1,
            "\(said)")
        #expect(said.contains("bluez: bluetoothd is on the system bus; wearables are looked for through it"), "\(said)")
    }

    /// bluetoothd on the bus before it exported the adapter (the kernel reported the controller
    /// late, at boot): the transport starts all the same, scans say why and start no discovery,
    /// and once InterfacesAdded brings `Adapter1` discovery starts and the wearable is reached.
    @Test func anAdapterExportedLaterIsWaitedFor() throws {
        let rig = try BlueZRig(standInOptions: ["--adapter-withheld"])
        let h10 = try rig.add(.h10())
        #expect(BluetoothdPresence.probe(adapter: "hci0", bus: .address(rig.bus.address)) == .runsWithoutAdapter)
        let lines = Mutex<[String]>([])
        let transport = try rig.transport(log: { line in lines.withLock { $0.append(line) } })
        defer { transport.close() }
        Self.expectScansRefused(transport) { $0.hasPrefix("bluetoothd does not export hci0 yet") }
        #expect(try rig.count("StartDiscovery") == 0)
        try rig.knob("ExportAdapter")
        let report = try rig.scanUntilFound(transport, "C0:FF:EE:00:00:10")
        #expect(try rig.count("StartDiscovery") == 1)
        let events = LinkEvents()
        events.link = try transport.connect(report, queue: events.queue, onEvent: events.handler)
        _ = try events.ready()
        #expect(h10.isConnected)
        let said = lines.withLock { $0 }
        #expect(said.filter { $0.hasPrefix("bluez: bluetoothd does not export hci0 (yet:") }.count == 1, "\(said)")
        #expect(said.contains("bluez: bluetoothd exports hci0 now; wearables are looked for through it"), "\(said)")
    }

    /// The system bus itself going away (the broker killed) and coming back at the same address:
    /// the link is lost, the bus is opened again after RetryBackoff's waits, each reason said
    /// once, and the wearable is found and connected again through the new connection.
    @Test func aBusThatEndsIsOpenedAgain() throws {
        let rig = try BlueZRig()
        _ = try rig.add(.h10())
        let lines = Mutex<[String]>([])
        let transport = try rig.transport(
            { $0.firstRetry = .milliseconds(100) }, log: { line in lines.withLock { $0.append(line) } })
        defer { transport.close() }
        let events = LinkEvents()
        events.link = try transport.connect(
            try rig.scanUntilFound(transport, "C0:FF:EE:00:00:10"), queue: events.queue, onEvent: events.handler)
        _ = try events.ready()
        rig.bus.kill()
        rig.stopStandIn()
        let why = try events.wait("link lost") { if case .linkLost(let why) = $0 { why } else { nil } }
        #expect(why.contains("the system bus connection ended"))
        // Several attempts fail while the broker is away (100, 200, 400, 800 ms …).
        usleep(1_500_000)
        try rig.bus.start()
        _ = try rig.bus.spawn([TestEnvironment.python, BlueZRig.script, rig.bus.address, rig.directory], log: "bluetoothd")
        let again = LinkEvents()
        again.link = try transport.connect(
            try rig.scanUntilFound(transport, "C0:FF:EE:00:00:10"), queue: again.queue, onEvent: again.handler)
        _ = try again.ready()
        let said = lines.withLock { $0 }
        #expect(
            said.filter { $0.hasPrefix("bluez: the system bus connection ended; the bus is opened again") }.count == 1, "\(said)")
        #expect(said.filter { $0.hasPrefix("bluez: the system bus cannot be reached") }.count == 1, "\(said)")
        #expect(said.contains("bluez: the system bus is reachable again"), "\(said)")
    }
}
