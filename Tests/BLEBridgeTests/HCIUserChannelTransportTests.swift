import BLETestKit
import Dispatch
import Foundation
import Glibc
import SensorSystem
import Synchronization
import Testing

@testable import BLEBridge

/// `HCITransport` against the emulated controller (`WearableEmulation.EmulatedController`, written
/// from the specification without `BLEBridge`): H4 packets over a SEQPACKET socket as a user
/// channel carries them, the emulated H10 behind it. Scan, connect, discovery and ATT through
/// 27-byte ACL fragments, the LE signaling and SMP answers, a link loss, a hostile controller.
@Suite(.serialized, .timeLimit(.minutes(3))) struct HCIUserChannelTransportTests {
    let directory: String

    init() throws {
        directory = "/tmp/hci-user-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    final class Recorder: Sendable {
        let events = Mutex<[GATTLinkEvent]>([])

        func wait(until done: ([GATTLinkEvent]) -> Bool) -> [GATTLinkEvent] {
            for _ in 0..<500 {
                let snapshot = events.withLock { $0 }
                if done(snapshot) { return snapshot }
                usleep(10_000)
            }
            return events.withLock { $0 }
        }
    }

    static func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<300 {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    @Test func anH10ThroughTheControllerFromScanToLinkLoss() throws {
        let h10 = try EmulatedPeripheral(directory: directory, profile: .h10())
        defer { h10.remove() }
        var controllerOptions = EmulatedController.Options()
        controllerOptions.sharedBuffers = true  // the host must fall back to Read Buffer Size
        let controller = try EmulatedController(
            directory: directory, socketPath: directory + "/controller", options: controllerOptions)
        defer { controller.stop() }
        var options = HCITransport.Options()
        options.scanDurationMilliseconds = 300
        let transport = try HCITransport.open(controllerSocket: directory + "/controller", options: options)
        defer { transport.shutDown() }
        #expect(transport.controllerAddress == "0E:C0:00:00:00:01")
        #expect(Array(controller.history.opcodes.prefix(6)) == [0x0C03, 0x1009, 0x2002, 0x1005, 0x0C01, 0x2001])

        let reports = try transport.scan()
        let report = try #require(reports.first { $0.address == "C0:FF:EE:00:00:10" }, "\(reports)")
        #expect(report.data.localName == h10.profile.name)
        #expect(report.rssi == -58)
        #expect(Self.eventually { controller.history.opcodes.suffix(3) == [0x200B, 0x200C, 0x200C] })

        let queue = DispatchQueue(label: "hci-user-link")
        let recorder = Recorder()
        let link = try transport.connect(report, queue: queue) { event in recorder.events.withLock { $0.append(event) } }
        let ready = recorder.wait { !$0.isEmpty }
        guard case .ready(let mtu, let characteristics)? = ready.first else {
            Issue.record("no .ready: \(ready)")
            return
        }
        #expect(mtu == 247)
        #expect(characteristics[.pmdControlPoint] != nil && characteristics[.heartRateMeasurement] != nil)

        queue.sync {
            link.subscribe(.heartRateMeasurement)
            link.subscribe(.pmdControlPoint)
            link.read(.batteryLevel)
        }
        let answered = recorder.wait { $0.count >= 4 }
        #expect(answered.contains(.readCompleted(.batteryLevel, value: [87])), "\(answered)")
        #expect(h10.notifyHeartRate([0x10, 64, 0xE8, 0x03]))
        // 200 bytes: eight 27-byte fragments from the controller, the confirmation back.
        let long = (0..<200).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        #expect(h10.indicateControlPoint(long))
        let notified = recorder.wait { $0.count >= 6 }
        #expect(notified.contains(.notification(.heartRateMeasurement, value: [0x10, 64, 0xE8, 0x03])))
        #expect(notified.contains(.notification(.pmdControlPoint, value: long)), "\(notified)")
        #expect(Self.eventually { h10.confirmations == 1 })

        // The peripheral asks for other parameters and to pair: accepted, and refused.
        controller.requestParameterUpdate()
        controller.requestPairing()
        #expect(Self.eventually { controller.history.securityManager == [[0x05, 0x05]] })
        #expect(controller.history.signaling == [[0x13, 0x21, 0x02, 0x00, 0x00, 0x00]])
        #expect(Self.eventually { controller.history.opcodes.last == 0x2013 })

        // A hostile controller: a truncated event, an unknown handle's ACL, an L2CAP frame of
        // 600 bytes on the ATT channel. The link lives on.
        controller.inject([0x04, 0x0E, 0x09, 0x01])
        controller.inject([0x02, 0x99, 0x0E, 0x01, 0x00, 0xFF])
        controller.injectFrame(declaredLength: 600, payload: [0x1B, 0x26, 0x00])
        queue.sync { link.read(.batteryLevel) }
        let after = recorder.wait { $0.count >= 7 }
        #expect(after.last == .readCompleted(.batteryLevel, value: [87]), "\(after)")
        let counters = transport.statistics.host
        #expect(counters.malformedPackets == 2 && counters.droppedFrames == 1, "\(counters)")

        // The radio drops the link: Disconnection Complete, timeout.
        controller.dropLinks()
        let lost = recorder.wait { $0.count >= 8 }
        guard case .linkLost? = lost.last else {
            Issue.record("no .linkLost: \(lost)")
            return
        }
        #expect(controller.connectedAddresses.isEmpty)

        // Connect again, then close from our side: Disconnect goes to the controller.
        let again = Recorder()
        let second = try transport.connect(report, queue: queue) { event in again.events.withLock { $0.append(event) } }
        guard case .ready? = again.wait(until: { !$0.isEmpty }).first else {
            Issue.record("no second .ready")
            return
        }
        queue.sync { second.close() }
        #expect(Self.eventually { controller.history.opcodes.last == 0x0406 && controller.connectedAddresses.isEmpty })
        #expect(controller.history.connections == 2)
    }

    @Test func aPeripheralOutOfRangeTimesOutAndIsCancelled() throws {
        let controller = try EmulatedController(directory: directory, socketPath: directory + "/controller")
        defer { controller.stop() }
        var options = HCITransport.Options()
        options.host.connectTimeoutMilliseconds = 200
        let transport = try HCITransport.open(controllerSocket: directory + "/controller", options: options)
        defer { transport.shutDown() }
        let report = BLEScanReport(address: "C0:FF:EE:00:00:99", data: AdvertisingData(structures: []))
        let error = #expect(throws: BLETransportError.self) {
            _ = try transport.connect(report, queue: DispatchQueue(label: "nowhere")) { _ in }
        }
        #expect(error?.description.contains("did not answer within 200 ms") == true, "\(String(describing: error))")
        #expect(controller.history.opcodes.suffix(2) == [0x200D, 0x200E])
    }

    @Test func aControllerThatStopsAnsweringIsAClearError() throws {
        // A listener that accepts and never answers.
        let path = directory + "/mute"
        let listener = try SeqPacketSocket.listen(path: path)
        defer { close(listener) }
        var options = HCITransport.Options()
        options.host.commandTimeoutMilliseconds = 100
        let mute = #expect(throws: BLETransportError.self) {
            _ = try HCITransport.open(controllerSocket: path, options: options)
        }
        guard case .unavailable(let why)? = mute else {
            Issue.record("\(String(describing: mute))")
            return
        }
        #expect(why.contains("did not answer command 0x0c03 within 100 ms"), "\(why)")
        let nobody = #expect(throws: BLETransportError.self) {
            _ = try HCITransport.open(controllerSocket: directory + "/nobody")
        }
        guard case .unavailable(let absent)? = nobody else {
            Issue.record("\(String(describing: nobody))")
            return
        }
        #expect(absent.contains("no HCI controller listens at"))
    }
}
