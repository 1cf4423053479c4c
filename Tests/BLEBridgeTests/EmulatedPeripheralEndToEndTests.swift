import BLETestKit
import Dispatch
import Foundation
import SensorSimulation
import Synchronization
import Testing

@testable import BLEBridge

/// The client against an emulated peripheral over a real SEQPACKET socket in an emulated
/// transport directory: scan, connect, discover, subscribe, receive, decode.
final class WearableHarness: @unchecked Sendable {
    let queue = DispatchQueue(label: "wearable-test")
    let events = Mutex<[GATTClient.Event]>([])
    var connection: GATTConnection!

    convenience init(path: String, preferredMTU: UInt16 = 247, timeoutNanoseconds: Int64 = 2_000_000_000) throws {
        try self.init(
            bearer: SeqPacketATTBearer(connectingTo: path), preferredMTU: preferredMTU, timeoutNanoseconds: timeoutNanoseconds)
    }

    init(bearer: any ATTBearer, preferredMTU: UInt16 = 247, timeoutNanoseconds: Int64 = 2_000_000_000) {
        queue.sync {
            connection = GATTConnection(
                bearer: bearer, queue: queue, preferredMTU: preferredMTU, transactionTimeoutNanoseconds: timeoutNanoseconds
            ) { [weak self] event in
                self?.events.withLock { $0.append(event) }
            }
            connection.start()
        }
    }

    /// Waits (≤ 5 s) until some event matches.
    func wait<T>(_ match: (GATTClient.Event) -> T?) -> T? {
        for _ in 0..<500 {
            let snapshot = events.withLock { $0 }
            if let found = snapshot.lazy.compactMap(match).first { return found }
            usleep(10_000)
        }
        return nil
    }

    func waitUntil(_ condition: () -> Bool) -> Bool {
        for _ in 0..<500 {
            if condition() { return true }
            usleep(10_000)
        }
        return false
    }

    var services: [GATTService]? { wait { if case .discovered(let services) = $0 { services } else { nil } } }

    func on<T>(_ body: @escaping (GATTConnection) -> T) -> T { queue.sync { body(connection) } }

    func completion(of id: GATTClient.OperationID) -> GATTClient.Event? {
        wait {
            switch $0 {
            case .readCompleted(id, _, _), .writeCompleted(id, _), .operationFailed(id, _, _): $0
            default: nil
            }
        }
    }

    func notifications(handle: UInt16) -> [[UInt8]] {
        events.withLock { $0 }.compactMap { if case .notification(handle, let value) = $0 { value } else { nil } }
    }

    func indications(handle: UInt16) -> [[UInt8]] {
        events.withLock { $0 }.compactMap { if case .indication(handle, let value) = $0 { value } else { nil } }
    }

    deinit { queue.sync { connection?.close() } }
}

@Suite(.serialized) struct EmulatedPeripheralEndToEndTests {
    let directory: String

    init() throws {
        directory = NSTemporaryDirectory() + "ble-e2e-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    @Test func scanFindsBothEntriesAndLosesThemOutOfRange() throws {
        let strap = try EmulatedPeripheral(directory: directory, profile: .strap())
        let reports = EmulatedScan.scan(directory: directory)
        #expect(reports.map(\.address) == ["C0:FF:EE:00:00:01"])
        #expect(reports.first?.data.localName == "HR Strap 0001")
        #expect(reports.first?.data.serviceUUIDs16 == [0x180D])
        strap.remove()
        #expect(EmulatedScan.scan(directory: directory).isEmpty)
        #expect(throws: ATTBearerError.self) { try SeqPacketATTBearer(connectingTo: strap.attPath) }
        do {
            _ = try SeqPacketATTBearer(connectingTo: strap.attPath)
        } catch {
            guard case .outOfRange = error else { Issue.record("\(error)"); return }
        }
    }

    @Test func heartRateStrapDiscoverReadSubscribeReceive() throws {
        let strap = try EmulatedPeripheral(directory: directory, profile: .strap())
        let harness = try WearableHarness(path: strap.attPath)
        let services = try #require(harness.services)
        #expect(Set(services.map(\.uuid)) == [.deviceInformationService, .batteryService, .heartRateService])
        let measurement = try #require(services.service(.heartRateService)?.characteristic(.heartRateMeasurement))
        let location = try #require(services.service(.heartRateService)?.characteristic(.bodySensorLocation))
        let battery = try #require(services.service(.batteryService)?.characteristic(.batteryLevel))
        let model = try #require(services.service(.deviceInformationService)?.characteristic(.modelNumber))

        let readLocation = harness.on { $0.read(location.valueHandle) }
        let readBattery = harness.on { $0.read(battery.valueHandle) }
        let readModel = harness.on { $0.read(model.valueHandle) }
        let subscribed = try #require(harness.on { $0.subscribe(measurement) })
        guard case .readCompleted(_, _, let locationValue)? = harness.completion(of: readLocation),
            case .readCompleted(_, _, let batteryValue)? = harness.completion(of: readBattery),
            case .readCompleted(_, _, let modelValue)? = harness.completion(of: readModel)
        else { Issue.record("reads did not complete"); return }
        #expect(BodySensorLocation(decoding: locationValue)?.description == "chest")
        #expect(BatteryLevel.percent(decoding: batteryValue) == 87)
        #expect(String(decoding: modelValue, as: UTF8.self) == "Strap")
        #expect(harness.completion(of: subscribed) == .writeCompleted(subscribed, handle: measurement.cccdHandle!))
        #expect(strap.isSubscribed([0x37, 0x2A]))

        #expect(strap.notifyHeartRate([0x16, 72, 0x00, 0x04, 0x10, 0x04]))
        #expect(strap.notifyHeartRate([0x14, 0]))
        #expect(harness.waitUntil { harness.notifications(handle: measurement.valueHandle).count == 2 })
        var timeline = HeartRateTimeline()
        let outputs = harness.notifications(handle: measurement.valueHandle).enumerated().map {
            timeline.receive($1, at: Int64($0))
        }
        #expect(outputs[0].beat?.rrIntervals == [1024, 1040])
        #expect(outputs[0].wristState == true)
        #expect(outputs[1].wristState == false)
        #expect(outputs[1].beat == nil)
    }

    /// An H10: MTU 247, subscribe CP (indicate) and data (notify), feature read, START ECG, frames
    /// with µV values and device timestamps, mapped to within one sample period of the truth; STOP
    /// before the planned disconnect.
    @Test func h10StreamsECGOnTheHostTimeline() throws {
        let h10 = try EmulatedPeripheral(directory: directory, profile: .h10())
        let harness = try WearableHarness(path: h10.attPath)
        let services = try #require(harness.services)
        #expect(harness.on { $0.client.mtu } == 247)
        let pmd = try #require(services.service(.polarMeasurementDataService))
        let controlPoint = try #require(pmd.characteristic(.polarMeasurementControlPoint))
        let data = try #require(pmd.characteristic(.polarMeasurementData))
        let features = harness.on { $0.read(controlPoint.valueHandle) }
        let cp = try #require(harness.on { $0.subscribe(controlPoint) })
        let dataSubscription = try #require(harness.on { $0.subscribe(data) })
        guard case .readCompleted(_, _, let featureBytes)? = harness.completion(of: features) else {
            Issue.record("no features"); return
        }
        #expect(PMDFeatures(decoding: featureBytes)?.types == [.ecg, .acc])
        #expect(harness.completion(of: cp) == .writeCompleted(cp, handle: controlPoint.cccdHandle!))
        #expect(harness.completion(of: dataSubscription) == .writeCompleted(dataSubscription, handle: data.cccdHandle!))

        let start = harness.on { $0.write(controlPoint.valueHandle, value: PMDCommand.startECG.encoded()) }
        #expect(harness.completion(of: start) == .writeCompleted(start, handle: controlPoint.valueHandle))
        #expect(harness.waitUntil { !harness.indications(handle: controlPoint.valueHandle).isEmpty })
        let response = try PMDControlPointIndication(decoding: harness.indications(handle: controlPoint.valueHandle)[0])
        #expect(response == .response(PMDResponse(opcode: 2, measurementType: 0, status: .success, more: false, parameters: [])))
        #expect(harness.waitUntil { h10.confirmations == 1 })

        // Twenty frames of the simulated strap, each notified and stamped when it arrives here.
        var simulation = H10ClockSimulation(seed: 21)
        var truth: [UInt64: (samples: [Int64], receive: Int64)] = [:]
        for _ in 0..<20 {
            let frame = simulation.next()
            truth[frame.deviceTimestamp] = (frame.trueSampleTimes, frame.receiveTime)
            #expect(h10.sendECG(timestamp: frame.deviceTimestamp, microvolts: (0..<73).map { Int32($0 * 100 - 3600) }))
        }
        #expect(harness.waitUntil { harness.notifications(handle: data.valueHandle).count == 20 })
        var timeline = PMDStreamTimeline(measurementType: .ecg, sampleRateHz: 130)
        var released: [PMDStreamTimeline.TimedFrame] = []
        for value in harness.notifications(handle: data.valueHandle) {
            let stamp = truth[try PMDFrame(decoding: value).deviceTimestamp]!.receive
            released += timeline.receive(value, at: stamp).compactMap { if case .frame(let f) = $0 { f } else { nil } }
        }
        released += timeline.finish().compactMap { if case .frame(let f) = $0 { f } else { nil } }
        #expect(released.count == 20)
        for frame in released {
            #expect(frame.frame.samples.first == [-3600])
            #expect(frame.frame.samples.last == [3600])
            let real = truth[frame.frame.deviceTimestamp]!.samples
            // After the first second the fit has the pairs it needs.
            if frame.frame.deviceTimestamp > released[2].frame.deviceTimestamp {
                for (time, trueTime) in zip(frame.sampleTimes, real) { #expect(abs(time - trueTime) < Int64(1e9 / 130)) }
            }
        }

        let stop = harness.on { $0.write(controlPoint.valueHandle, value: PMDCommand.stopMeasurement(.ecg).encoded()) }
        #expect(harness.completion(of: stop) == .writeCompleted(stop, handle: controlPoint.valueHandle))
        #expect(h10.runningMeasurements.isEmpty)
        harness.on { $0.close() }
        #expect(harness.waitUntil { !h10.isConnected })
    }

    /// A Verity Sense-like PPG device: compressed and raw PPG frames (three optical channels +
    /// ambient) decode to the values the peripheral sent.
    @Test func veritySenseStreamsPPG() throws {
        let sense = try EmulatedPeripheral(directory: directory, profile: .veritySense())
        let harness = try WearableHarness(path: sense.attPath)
        let pmd = try #require(harness.services?.service(.polarMeasurementDataService))
        let controlPoint = try #require(pmd.characteristic(.polarMeasurementControlPoint))
        let data = try #require(pmd.characteristic(.polarMeasurementData))
        _ = harness.on { $0.subscribe(controlPoint) }
        _ = harness.on { $0.subscribe(data) }
        let start = harness.on {
            $0.write(
                controlPoint.valueHandle,
                value: PMDCommand.startMeasurement(.ppg, settings: [PMDSetting(.sampleRate, [55])]).encoded())
        }
        #expect(harness.completion(of: start) == .writeCompleted(start, handle: controlPoint.valueHandle))
        #expect(harness.waitUntil { sense.runningMeasurements == [1] })
        let samples: [[Int32]] = (0..<40).map { [-517_445 + $0 * 3, -484_483 - $0 * 200, -476_780 + ($0 % 5), 1_000 + $0] }
        #expect(sense.sendPPG(timestamp: 799_443_547_265_317_677, samples: samples, compressed: true))
        // Raw frames carry 12 bytes a sample: 18 fit the 244 bytes a notification may hold at MTU 247.
        #expect(sense.sendPPG(timestamp: 799_443_548_265_317_677, samples: Array(samples.prefix(18)), compressed: false))
        #expect(harness.waitUntil { harness.notifications(handle: data.valueHandle).count == 2 })
        let frames = try harness.notifications(handle: data.valueHandle).map { try PMDFrame(decoding: $0) }
        #expect(frames.map(\.isCompressed) == [true, false])
        #expect(frames.first?.samples == samples)
        #expect(frames.last?.samples == Array(samples.prefix(18)))
        #expect(frames.allSatisfy { $0.measurementType == 1 })
    }

    /// Over the socket: a duplicated frame, a device clock that jumps an hour ahead, then one that
    /// falls back to 2019 — one duplicate dropped, two gaps, sample times still strictly increasing.
    @Test func duplicateJumpAndResetFromThePeripheral() throws {
        let h10 = try EmulatedPeripheral(directory: directory, profile: .h10())
        let harness = try WearableHarness(path: h10.attPath)
        let pmd = try #require(harness.services?.service(.polarMeasurementDataService))
        let controlPoint = try #require(pmd.characteristic(.polarMeasurementControlPoint))
        let data = try #require(pmd.characteristic(.polarMeasurementData))
        _ = harness.on { $0.subscribe(data) }
        let start = harness.on { $0.write(controlPoint.valueHandle, value: PMDCommand.startECG.encoded()) }
        _ = harness.completion(of: start)
        let frameNanoseconds: UInt64 = 73 * 7_692_308
        var stamps: [UInt64] = (1...4).map { 820_000_000_000_000_000 + $0 * frameNanoseconds }
        stamps.append(stamps[3])  // duplicate
        stamps += (5...6).map { 820_000_000_000_000_000 + 3_600_000_000_000 + $0 * frameNanoseconds }  // jump ahead
        stamps += (1...2).map { PMDTime.resetInstant + $0 * frameNanoseconds }  // reset
        for stamp in stamps { #expect(h10.sendECG(timestamp: stamp, microvolts: [Int32](repeating: 5, count: 73))) }
        #expect(harness.waitUntil { harness.notifications(handle: data.valueHandle).count == stamps.count })
        var timeline = PMDStreamTimeline(measurementType: .ecg, sampleRateHz: 130, holdNanoseconds: 0)
        var events: [PMDStreamTimeline.Event] = []
        for (index, value) in harness.notifications(handle: data.valueHandle).enumerated() {
            events += timeline.receive(value, at: 10_000_000_000 + Int64(index) * Int64(frameNanoseconds))
        }
        events += timeline.finish()
        let reasons = events.compactMap { if case .gap(let gap) = $0 { gap.reason } else { nil } }
        #expect(reasons == [.deviceClockJump, .deviceClockReset])
        #expect(timeline.counters.duplicates == 1)
        let times: [Int64] = events.flatMap { event -> [Int64] in
            if case .frame(let frame) = event { return frame.sampleTimes }
            return []
        }
        #expect(times.count == 8 * 73)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test func mtuTooSmallForPMDIsReportedByTheDevice() throws {
        let h10 = try EmulatedPeripheral(directory: directory, profile: .h10())
        h10.setFaults { $0.serverMTU = 185 }
        let harness = try WearableHarness(path: h10.attPath)
        let services = try #require(harness.services)
        #expect(harness.on { $0.client.mtu } == 185)
        let controlPoint = try #require(
            services.service(.polarMeasurementDataService)?.characteristic(.polarMeasurementControlPoint))
        _ = harness.on { $0.subscribe(controlPoint) }
        let start = harness.on { $0.write(controlPoint.valueHandle, value: PMDCommand.startECG.encoded()) }
        _ = harness.completion(of: start)
        #expect(harness.waitUntil { !harness.indications(handle: controlPoint.valueHandle).isEmpty })
        guard
            case .response(let response) = try PMDControlPointIndication(
                decoding: harness.indications(handle: controlPoint.valueHandle)[0])
        else {
            Issue.record("no response"); return
        }
        #expect(response.status == .invalidMTU)
        #expect(h10.runningMeasurements.isEmpty)
    }

    @Test func errorResponsesReachTheOperation() throws {
        let strap = try EmulatedPeripheral(directory: directory, profile: .strap())
        strap.setFaults { $0.readErrors[0x2A19] = 0x05 }
        let harness = try WearableHarness(path: strap.attPath)
        let battery = try #require(harness.services?.service(.batteryService)?.characteristic(.batteryLevel))
        let read = harness.on { $0.read(battery.valueHandle) }
        #expect(
            harness.completion(of: read)
                == .operationFailed(read, handle: battery.valueHandle, error: .insufficientAuthentication))
    }

    @Test func unansweredRequestTimesOutAndDropsTheLink() throws {
        let strap = try EmulatedPeripheral(directory: directory, profile: .strap())
        strap.setFaults { $0.ignoreRequests = true }
        let harness = try WearableHarness(path: strap.attPath, timeoutNanoseconds: 200_000_000)
        #expect(harness.wait { if case .linkFailed(let why) = $0 { why } else { nil } } == "request timed out")
        #expect(harness.waitUntil { !strap.isConnected })
    }

    @Test func disconnectMidStreamAndMalformedPDUs() throws {
        let h10 = try EmulatedPeripheral(directory: directory, profile: .h10())
        let harness = try WearableHarness(path: h10.attPath)
        let services = try #require(harness.services)
        let data = try #require(services.service(.polarMeasurementDataService)?.characteristic(.polarMeasurementData))
        let controlPoint = try #require(
            services.service(.polarMeasurementDataService)?.characteristic(.polarMeasurementControlPoint))
        _ = harness.on { $0.subscribe(data) }
        let start = harness.on { $0.write(controlPoint.valueHandle, value: PMDCommand.startECG.encoded()) }
        _ = harness.completion(of: start)
        // Garbage on the link: a truncated notification, an unknown opcode, a truncated frame.
        h10.sendPacket([0x1B, 0x05])
        h10.sendPacket([0xFF, 0x00])
        #expect(h10.sendRawFrame([0x00, 0x01, 0x02]))
        #expect(h10.sendECG(timestamp: 820_000_000_000_000_000, microvolts: [1, 2, 3]))
        #expect(harness.waitUntil { harness.notifications(handle: data.valueHandle).count == 2 })
        #expect(harness.on { $0.ignoredPDUs } == 2)
        var timeline = PMDStreamTimeline(measurementType: .ecg, sampleRateHz: 130, holdNanoseconds: 0)
        let events = harness.notifications(handle: data.valueHandle).flatMap { timeline.receive($0, at: 1_000_000_000) }
        #expect(timeline.counters.undecodable == 1)
        #expect(events.count == 2)
        h10.disconnect()
        #expect(harness.wait { if case .linkFailed(let why) = $0 { why } else { nil } } == "disconnected")
    }
}
