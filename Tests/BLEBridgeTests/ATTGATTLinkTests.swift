import BLETestKit
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import BLEBridge

/// The GATT-level link of the ATT transports against an emulated peripheral over a real SEQPACKET
/// socket: `.ready` after discovery, one answer per request, notifications by characteristic,
/// `.linkLost` once (docs/ble.md, "The GATT link").
@Suite(.serialized, .timeLimit(.minutes(3))) struct ATTGATTLinkTests {
    let directory: String

    init() throws {
        directory = NSTemporaryDirectory() + "att-link-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    final class Recorder: Sendable {
        let events = Mutex<[GATTLinkEvent]>([])

        func wait(for count: Int) -> [GATTLinkEvent] {
            for _ in 0..<500 {
                let snapshot = events.withLock { $0 }
                if snapshot.count >= count { return snapshot }
                usleep(10_000)
            }
            return events.withLock { $0 }
        }
    }

    @Test func requestsAreAnsweredOnceByCharacteristicAndALostLinkIsReportedOnce() throws {
        let strap = try EmulatedPeripheral(directory: directory, profile: .strap())
        strap.setFaults { $0.readErrors = [0x2A24: 0x02] }  // model number: Read Not Permitted
        defer { strap.remove() }
        let transport = EmulatedBLETransport(directory: directory)
        let report = try #require(try transport.scan().first)
        let queue = DispatchQueue(label: "att-link-test")
        let recorder = Recorder()
        let link = try queue.sync {
            let link = try transport.connect(report, queue: queue) { event in recorder.events.withLock { $0.append(event) } }
            #expect(recorder.events.withLock { $0.isEmpty }, "no event before connect returns")
            return link
        }
        guard case .ready(let mtu, let characteristics)? = recorder.wait(for: 1).first else {
            Issue.record("no .ready: \(recorder.events.withLock { $0 })")
            return
        }
        #expect(mtu == 247)
        #expect(characteristics[.heartRateMeasurement]?.contains(.notify) == true)
        #expect(characteristics[.batteryLevel]?.contains(.read) == true)
        #expect(characteristics[.pmdControlPoint] == nil)

        let model = GATTCharacteristicID.deviceInformation(.modelNumber)
        queue.sync {
            link.read(.batteryLevel)
            link.read(model)
            link.read(.pmdControlPoint)  // not offered by a strap
            link.subscribe(.heartRateMeasurement)
            link.subscribe(.bodySensorLocation)  // read only: nothing to subscribe to
        }
        let answers = Array(recorder.wait(for: 6).dropFirst())
        #expect(answers.count == 5, "\(answers)")
        #expect(answers.contains(.readCompleted(.batteryLevel, value: [87])))
        #expect(answers.contains(.subscribed(.heartRateMeasurement)))
        let failures = answers.compactMap { if case .failed(let failure) = $0 { failure } else { nil } }
        #expect(Set(failures.map(\.characteristic)) == [model, .pmdControlPoint, .bodySensorLocation])
        #expect(failures.first { $0.characteristic == model }?.attError == ATTErrorCode(rawValue: 0x02))
        #expect(failures.first { $0.characteristic == model }?.operation == .read)
        #expect(failures.first { $0.characteristic == .bodySensorLocation }?.operation == .subscribe)

        #expect(strap.notifyHeartRate([0x06, 72]))
        #expect(recorder.wait(for: 7).last == .notification(.heartRateMeasurement, value: [0x06, 72]))
        strap.disconnect()
        let all = recorder.wait(for: 8)
        #expect(all.last.map { if case .linkLost = $0 { true } else { false } } == true, "\(all)")
        usleep(100_000)
        queue.sync { link.read(.batteryLevel) }  // after the loss: no answer, the loss was the answer
        usleep(100_000)
        #expect(recorder.events.withLock { $0.count } == 8)
        #expect(recorder.events.withLock { $0 }.filter { if case .linkLost = $0 { true } else { false } }.count == 1)
        queue.sync { link.close() }
    }
}
