import SensorTestKit
import Testing

@testable import BLEBridge

/// The user channel's host without sockets or time: HCI packets and L2CAP frames written byte by
/// byte from the Core Specification's layouts (Vol 4 Part E §5.4, §7; Vol 3 Part A §3, §4;
/// Vol 3 Part H §3.5), and the `HCIHost` state machine driven event by event.
struct HCIPacketCodecTests {
    @Test func commandsAreOpcodeLittleEndianThenLength() {
        #expect(HCICommand(opcode: HCICommand.reset).bytes == [0x01, 0x03, 0x0C, 0x00])
        #expect(HCICommand.readBDAddress == 0x1009 && HCICommand.leReadBufferSize == 0x2002)
        #expect(HCICommand.leCreateConnection == 0x200D && HCICommand.leCreateConnectionCancel == 0x200E)
        #expect(HCICommand.disconnect == 0x0406 && HCICommand.readBufferSize == 0x1005)
        #expect(
            HCICommand(opcode: HCICommand.leSetScanEnable, parameters: [0x01, 0x00]).bytes == [
                0x01, 0x0C, 0x20, 0x02, 0x01, 0x00,
            ])
    }

    @Test func commandCompleteAndStatus() throws {
        // Command Complete: packets 1, opcode LE Read Buffer Size, status 0, length 251, 8 buffers.
        #expect(
            try HCIEvent.parse([0x04, 0x0E, 0x07, 0x01, 0x02, 0x20, 0x00, 0xFB, 0x00, 0x08])
                == .commandComplete(commandPackets: 1, opcode: 0x2002, returnParameters: [0x00, 0xFB, 0x00, 0x08]))
        #expect(
            try HCIEvent.parse([0x04, 0x0F, 0x04, 0x0C, 0x01, 0x0D, 0x20])
                == .commandStatus(status: 0x0C, commandPackets: 1, opcode: 0x200D))
    }

    @Test func disconnectionAndCompletedPackets() throws {
        #expect(
            try HCIEvent.parse([0x04, 0x05, 0x04, 0x00, 0x40, 0x00, 0x08])
                == .disconnectionComplete(status: 0, handle: 0x0040, reason: 0x08))
        #expect(
            try HCIEvent.parse([0x04, 0x13, 0x09, 0x02, 0x40, 0x00, 0x03, 0x00, 0x41, 0x00, 0x01, 0x00])
                == .numberOfCompletedPackets([.init(handle: 0x40, packets: 3), .init(handle: 0x41, packets: 1)]))
        // The count says two pairs, the bytes hold one.
        #expect(throws: HCIEvent.ParseError.malformed(code: 0x13)) {
            try HCIEvent.parse([0x04, 0x13, 0x05, 0x02, 0x40, 0x00, 0x03, 0x00])
        }
    }

    @Test func leConnectionCompleteAndEnhanced() throws {
        let peer: [UInt8] = [0x55, 0x44, 0x33, 0x22, 0x11, 0xC0]
        let plain: [UInt8] = [0x01, 0x00, 0x40, 0x00, 0x00, 0x01] + peer + [0x18, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00]
        let expected = HCIConnectionComplete(
            status: 0, handle: 0x40, role: 0, peerAddressType: .random, peerAddress: "C0:11:22:33:44:55", interval: 24,
            latency: 0, supervisionTimeout: 72)
        #expect(try HCIEvent.parse([0x04, 0x3E, UInt8(plain.count)] + plain) == .leConnectionComplete(expected))
        var enhanced = plain
        enhanced[0] = 0x0A
        enhanced.insert(contentsOf: [UInt8](repeating: 0xAA, count: 12), at: 12)
        #expect(try HCIEvent.parse([0x04, 0x3E, UInt8(enhanced.count)] + enhanced) == .leConnectionComplete(expected))
        #expect(throws: HCIEvent.ParseError.malformed(code: 0x3E)) {
            try HCIEvent.parse([0x04, 0x3E, UInt8(plain.count - 1)] + plain.dropLast())
        }
    }

    @Test func advertisingReportsReuseTheirParser() throws {
        let report = HCIAdvertisingReportTests.report(
            0x00, 0x00, HCIAdvertisingReportTests.strapAddress, HCIAdvertisingReportTests.strapAdvertising, rssi: -60)
        let bytes = HCIAdvertisingReportTests.event([report])
        #expect(try HCIEvent.parse(bytes) == .leAdvertisingReports(try HCIAdvertisingReport.parse(event: bytes)))
    }

    @Test func aclHandleFlagsAndLength() throws {
        let packet = try HCIACLPacket.parse([0x02, 0x40, 0x20, 0x03, 0x00, 0xAA, 0xBB, 0xCC])
        #expect(packet == HCIACLPacket(handle: 0x40, boundary: .firstFlushable, data: [0xAA, 0xBB, 0xCC]))
        #expect(HCIACLPacket(handle: 0x40, boundary: .continuation, data: [1]).bytes == [0x02, 0x40, 0x10, 0x01, 0x00, 0x01])
        #expect(throws: HCIACLPacket.ParseError.lengthMismatch(declared: 4, actual: 3)) {
            try HCIACLPacket.parse([0x02, 0x40, 0x20, 0x04, 0x00, 0xAA, 0xBB, 0xCC])
        }
    }

    @Test func hostileBytesNeverTrap() {
        var random = SeededGenerator(seed: 26)
        var parsed = 0
        for _ in 0..<20_000 {
            let count = Int(random.next() % 40)
            var bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            if !bytes.isEmpty { bytes[0] = [0x02, 0x04][Int(random.next() % 2)] }
            if bytes.count > 2, bytes[0] == 0x04, random.next() % 2 == 0 { bytes[2] = UInt8(bytes.count - 3) }
            if (try? HCIEvent.parse(bytes)) != nil || (try? HCIACLPacket.parse(bytes)) != nil { parsed += 1 }
            var host = HCIHostTests.readyHost()
            _ = host.on(.received(bytes))
        }
        #expect(parsed > 0)
    }
}

struct L2CAPFrameTests {
    @Test func fragmentsToTheBufferSize() {
        let frame = L2CAPFrame(channel: 4, payload: Array(0..<40))
        let fragments = frame.fragments(handle: 0x40, bufferSize: 27)
        #expect(fragments.map(\.data.count) == [27, 17])
        #expect(fragments.map(\.boundary) == [.firstNonFlushable, .continuation])
        #expect(Array(fragments[0].data.prefix(6)) == [40, 0, 4, 0, 0, 1])
        var joiner = L2CAPReassembler()
        #expect(joiner.add(fragments[0]) == .pending)
        #expect(joiner.add(fragments[1]) == .frame(frame))
    }

    @Test func aFirstFragmentShorterThanTheLengthField() {
        var joiner = L2CAPReassembler()
        #expect(joiner.add(HCIACLPacket(handle: 1, boundary: .firstFlushable, data: [0x01])) == .pending)
        #expect(
            joiner.add(HCIACLPacket(handle: 1, boundary: .continuation, data: [0x00, 0x04, 0x00, 0x0B]))
                == .frame(L2CAPFrame(channel: 4, payload: [0x0B])))
    }

    @Test func oversizedFramesAreDroppedWithTheirContinuations() {
        var joiner = L2CAPReassembler()
        // 518 bytes on the ATT channel: one over 517.
        #expect(joiner.add(HCIACLPacket(handle: 1, boundary: .firstFlushable, data: [0x06, 0x02, 0x04, 0x00, 1, 2])) != .pending)
        #expect(joiner.droppedFrames == 1)
        guard case .dropped = joiner.add(HCIACLPacket(handle: 1, boundary: .continuation, data: [3, 4])) else {
            Issue.record("a continuation of a dropped frame was kept")
            return
        }
        let good = L2CAPFrame(channel: 4, payload: [0x1B, 0x10, 0x00, 0x42])
        #expect(joiner.add(good.fragments(handle: 1, bufferSize: 27)[0]) == .frame(good))
        let largest = L2CAPFrame(channel: 4, payload: [UInt8](repeating: 7, count: 517))
        var last = L2CAPReassembler.Outcome.pending
        for fragment in largest.fragments(handle: 1, bufferSize: 27) { last = joiner.add(fragment) }
        #expect(last == .frame(largest))
    }

    @Test func overrunsAndOrphansAreDropped() {
        var joiner = L2CAPReassembler()
        guard case .dropped = joiner.add(HCIACLPacket(handle: 1, boundary: .continuation, data: [1, 2, 3])) else {
            Issue.record("an orphan continuation was kept")
            return
        }
        #expect(joiner.add(HCIACLPacket(handle: 1, boundary: .firstFlushable, data: [0x02, 0x00, 0x04, 0x00, 1])) == .pending)
        guard case .dropped = joiner.add(HCIACLPacket(handle: 1, boundary: .continuation, data: [2, 3])) else {
            Issue.record("a frame longer than it said was kept")
            return
        }
        #expect(joiner.droppedFrames == 2)
    }
}

struct HCIHostTests {
    static let address: [UInt8] = [0x01, 0x00, 0x00, 0x00, 0xAD, 0xDE]  // DE:AD:00:00:00:01

    static func complete(_ opcode: UInt16, _ returned: [UInt8] = [0x00]) -> [UInt8] {
        let parameters = [0x01, UInt8(opcode & 0xFF), UInt8(opcode >> 8)] + returned
        return [0x04, 0x0E, UInt8(parameters.count)] + parameters
    }

    static func status(_ opcode: UInt16, _ status: UInt8 = 0) -> [UInt8] {
        [0x04, 0x0F, 0x04, status, 0x01, UInt8(opcode & 0xFF), UInt8(opcode >> 8)]
    }

    static func written(_ actions: [HCIHost.Action]) -> [[UInt8]] {
        actions.compactMap { if case .write(let bytes) = $0 { bytes } else { nil } }
    }

    /// Runs the init sequence with a controller of `buffers` LE buffers of 27 bytes.
    static func readyHost(buffers: UInt8 = 2) -> HCIHost {
        var host = HCIHost()
        _ = host.on(.start)
        _ = host.on(.received(complete(HCICommand.reset)))
        _ = host.on(.received(complete(HCICommand.readBDAddress, [0x00] + address)))
        _ = host.on(.received(complete(HCICommand.leReadBufferSize, [0x00, 27, 0, buffers])))
        _ = host.on(.received(complete(HCICommand.setEventMask)))
        _ = host.on(.received(complete(HCICommand.leSetEventMask)))
        return host
    }

    static func connected(_ host: inout HCIHost, handle: UInt8 = 0x40) -> UInt16 {
        _ = host.on(.connect(id: 1, address: "C0:11:22:33:44:55", addressType: .random))
        _ = host.on(.received(status(HCICommand.leCreateConnection)))
        let event: [UInt8] =
            [0x01, 0x00, handle, 0x00, 0x00, 0x01] + [0x55, 0x44, 0x33, 0x22, 0x11, 0xC0] + [
                0x18, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00,
            ]
        let actions = host.on(.received([0x04, 0x3E, UInt8(event.count)] + event))
        #expect(actions.contains(.connected(id: 1, handle: UInt16(handle))))
        return UInt16(handle)
    }

    @Test func initSequenceOneCommandAtATime() {
        var host = HCIHost()
        #expect(Self.written(host.on(.start)) == [[0x01, 0x03, 0x0C, 0x00]])
        #expect(Self.written(host.on(.received(Self.complete(HCICommand.reset)))) == [[0x01, 0x09, 0x10, 0x00]])
        #expect(
            Self.written(host.on(.received(Self.complete(HCICommand.readBDAddress, [0x00] + Self.address)))) == [
                [0x01, 0x02, 0x20, 0x00]
            ])
        // LE buffers 0: LE shares the BR/EDR ones, so Read Buffer Size comes next.
        #expect(
            Self.written(host.on(.received(Self.complete(HCICommand.leReadBufferSize, [0x00, 0, 0, 0])))) == [
                [0x01, 0x05, 0x10, 0x00]
            ])
        let mask = host.on(.received(Self.complete(HCICommand.readBufferSize, [0x00, 0x1B, 0x00, 0x40, 0x05, 0x00, 0x00, 0x00])))
        #expect(Self.written(mask).first?.prefix(4) == [0x01, 0x01, 0x0C, 0x08])
        #expect(host.aclBufferSize == 27 && host.aclBufferCount == 5)
        let le = host.on(.received(Self.complete(HCICommand.setEventMask)))
        #expect(Self.written(le) == [[0x01, 0x01, 0x20, 0x08, 0x07, 0, 0, 0, 0, 0, 0, 0]])
        #expect(host.on(.received(Self.complete(HCICommand.leSetEventMask))).contains(.ready(address: "DE:AD:00:00:00:01")))
        #expect(host.isReady)
    }

    @Test func refusedAndSilentControllersAreClearErrors() {
        var host = HCIHost()
        _ = host.on(.start)
        let refused = host.on(.received(Self.complete(HCICommand.reset, [0x0C])))
        guard case .failed(.unavailable(let why)) = refused.last else {
            Issue.record("a refused Reset did not fail: \(refused)")
            return
        }
        #expect(why.contains("refused Reset") && why.contains("0x0c"))
        var silent = HCIHost()
        _ = silent.on(.start)
        let timedOut = silent.on(.timerExpired(.command))
        guard case .failed(.unavailable(let quiet)) = timedOut.last else {
            Issue.record("a silent controller did not fail")
            return
        }
        #expect(quiet.contains("did not answer command 0x0c03"))
        #expect(silent.on(.startScan) == [.scanFailed(.unavailable("the HCI controller failed; restart the daemon"))])
    }

    @Test func scanPassCollectsReportsAndTurnsTheScanOff() {
        var host = Self.readyHost()
        let parameters = host.on(.startScan)
        #expect(Self.written(parameters) == [[0x01, 0x0B, 0x20, 0x07, 0x01, 0x10, 0x00, 0x10, 0x00, 0x00, 0x00]])
        #expect(
            Self.written(host.on(.received(Self.complete(HCICommand.leSetScanParameters)))) == [
                [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00]
            ])
        #expect(host.on(.received(Self.complete(HCICommand.leSetScanEnable))).contains(.scanStarted))
        let report = HCIAdvertisingReportTests.report(
            0x00, 0x01, HCIAdvertisingReportTests.strapAddress, HCIAdvertisingReportTests.strapAdvertising, rssi: -60)
        _ = host.on(.received(HCIAdvertisingReportTests.event([report])))
        _ = host.on(.received([0x04, 0x3E, 0x02, 0x02, 0x1A]))  // a report count of 26
        let end = host.on(.stopScan)
        #expect(Self.written(end) == [[0x01, 0x0C, 0x20, 0x02, 0x00, 0x00]])
        guard case .scanEnded(let reports) = end.last else {
            Issue.record("no reports")
            return
        }
        #expect(reports.map(\.address) == ["C0:11:22:33:44:55"] && reports.first?.addressType == .random)
        #expect(host.counters.malformedReports == 1)
    }

    @Test func aRefusedScanIsBusy() {
        var host = Self.readyHost()
        _ = host.on(.startScan)
        let refused = host.on(.received(Self.complete(HCICommand.leSetScanParameters, [0x0C])))
        guard case .scanFailed(.busy(let why)) = refused.dropFirst().first else {
            Issue.record("\(refused)")
            return
        }
        #expect(why.contains("LE Set Scan Parameters") && why.contains("0x0c"))
    }

    @Test func connectBytesAndTimeoutCancels() {
        var host = Self.readyHost()
        let create = host.on(.connect(id: 7, address: "C0:11:22:33:44:55", addressType: .random))
        let bytes = Self.written(create).first ?? []
        #expect(bytes.prefix(4) == [0x01, 0x0D, 0x20, 25])
        #expect(
            Array(bytes[4...]) == [
                0x60, 0x00, 0x30, 0x00, 0x00, 0x01, 0x55, 0x44, 0x33, 0x22, 0x11, 0xC0, 0x00, 24, 0, 40, 0, 0, 0, 0x90, 0x01, 0,
                0, 0, 0,
            ])
        #expect(create.contains(.startTimer(.connect(id: 7), milliseconds: 10_000)))
        _ = host.on(.received(Self.status(HCICommand.leCreateConnection)))
        #expect(Self.written(host.on(.timerExpired(.connect(id: 7)))) == [[0x01, 0x0E, 0x20, 0x00]])
        _ = host.on(.received(Self.complete(HCICommand.leCreateConnectionCancel)))
        // The controller ends the attempt: LE Connection Complete with Unknown Connection Identifier.
        let event: [UInt8] = [0x01, 0x02, 0x00, 0x00, 0x00, 0x01] + [UInt8](repeating: 0, count: 6) + [0, 0, 0, 0, 0, 0, 0]
        let ended = host.on(.received([0x04, 0x3E, UInt8(event.count)] + event))
        guard case .connectFailed(7, .failed(let why)) = ended.last else {
            Issue.record("\(ended)")
            return
        }
        #expect(why.contains("did not answer within 10000 ms"))
    }

    @Test func attFramesBothWaysWithCredits() {
        var host = Self.readyHost(buffers: 2)
        let handle = Self.connected(&host)
        // 60 bytes of ATT: 64 with the header → three 27-byte fragments, two buffers free.
        let pdu = [UInt8](repeating: 0x1B, count: 60)
        let sent = Self.written(host.on(.send(handle: handle, pdu: pdu)))
        #expect(sent.count == 2)
        #expect(sent[0].prefix(9) == [0x02, 0x40, 0x00, 27, 0, 60, 0, 4, 0])
        // One completed: the third fragment goes.
        let more = Self.written(host.on(.received([0x04, 0x13, 0x05, 0x01, 0x40, 0x00, 0x01, 0x00])))
        #expect(more.count == 1 && more[0].prefix(5) == [0x02, 0x40, 0x10, 10, 0])
        // A controller completing more than it was given frees no more than were in flight.
        _ = host.on(.received([0x04, 0x13, 0x05, 0x01, 0x40, 0x00, 0xFF, 0x00]))
        #expect(Self.written(host.on(.send(handle: handle, pdu: [0x0A, 0x03, 0x00]))).count == 1)
        // A notification in two fragments from the controller.
        let notification = L2CAPFrame(channel: 4, payload: [0x1B, 0x26, 0x00] + [UInt8](repeating: 9, count: 30))
        var delivered: [HCIHost.Action] = []
        for fragment in notification.fragments(handle: handle, bufferSize: 27) {
            var packet = fragment
            if packet.boundary == .firstNonFlushable { packet.boundary = .firstFlushable }
            delivered += host.on(.received(packet.bytes))
        }
        #expect(delivered == [.deliver(handle: handle, pdu: notification.payload)])
    }

    @Test func aFullQueueIsCongested() {
        var options = HCIHost.Options()
        options.queuedFragmentsPerLink = 4
        var host = HCIHost(options: options)
        _ = host.on(.start)
        for packet in [
            Self.complete(HCICommand.reset), Self.complete(HCICommand.readBDAddress, [0x00] + Self.address),
            Self.complete(HCICommand.leReadBufferSize, [0x00, 27, 0, 1]), Self.complete(HCICommand.setEventMask),
            Self.complete(HCICommand.leSetEventMask),
        ] { _ = host.on(.received(packet)) }
        let handle = Self.connected(&host)
        let pdu = [UInt8](repeating: 0x52, count: 80)  // 84 bytes: four fragments
        #expect(Self.written(host.on(.send(handle: handle, pdu: pdu))).count == 1)
        #expect(host.on(.send(handle: handle, pdu: pdu)) == [.congested(handle: handle)])
    }

    @Test func closeSendsDisconnectAndCompletionEndsTheLink() {
        var host = Self.readyHost()
        let handle = Self.connected(&host)
        #expect(Self.written(host.on(.close(handle: handle))) == [[0x01, 0x06, 0x04, 0x03, 0x40, 0x00, 0x13]])
        _ = host.on(.received(Self.status(HCICommand.disconnect)))
        #expect(host.on(.received([0x04, 0x05, 0x04, 0x00, 0x40, 0x00, 0x16])) == [.disconnected(handle: handle, reason: 0x16)])
        // A link lost on the controller's side (supervision timeout).
        let other = Self.connected(&host, handle: 0x41)
        #expect(host.on(.received([0x04, 0x05, 0x04, 0x00, 0x41, 0x00, 0x08])) == [.disconnected(handle: other, reason: 0x08)])
        #expect(host.on(.send(handle: other, pdu: [0x0A, 0x03, 0x00])).isEmpty)
    }

    @Test func parameterUpdateAcceptedOrRejected() {
        var host = Self.readyHost(buffers: 8)
        let handle = Self.connected(&host)
        // Request id 3: interval 40…56 (50–70 ms), latency 0, timeout 400 (4 s).
        let request = L2CAPFrame(channel: 5, payload: [0x12, 0x03, 0x08, 0x00, 40, 0, 56, 0, 0, 0, 0x90, 0x01])
        let answer = Self.written(host.on(.received(Self.flushable(request, handle))))
        #expect(answer.first == [0x02, 0x40, 0x00, 10, 0, 6, 0, 5, 0, 0x13, 0x03, 0x02, 0x00, 0x00, 0x00])
        #expect(answer.last == [0x01, 0x13, 0x20, 14, 0x40, 0, 40, 0, 56, 0, 0, 0, 0x90, 0x01, 0, 0, 0, 0])
        // Timeout 1 (10 ms) is invalid: rejected, nothing applied.
        let invalid = L2CAPFrame(channel: 5, payload: [0x12, 0x04, 0x08, 0x00, 40, 0, 56, 0, 0, 0, 1, 0])
        #expect(
            Self.written(host.on(.received(Self.flushable(invalid, handle)))) == [
                [0x02, 0x40, 0x00, 10, 0, 6, 0, 5, 0, 0x13, 0x04, 0x02, 0x00, 0x01, 0x00]
            ])
        // An unknown request: Command Reject, not understood.
        let unknown = L2CAPFrame(channel: 5, payload: [0x06, 0x05, 0x04, 0x00, 0x40, 0x00, 0x40, 0x00])
        #expect(
            Self.written(host.on(.received(Self.flushable(unknown, handle)))) == [
                [0x02, 0x40, 0x00, 10, 0, 6, 0, 5, 0, 0x01, 0x05, 0x02, 0x00, 0x00, 0x00]
            ])
        #expect(host.counters.parameterUpdates == 1)
    }

    @Test func pairingIsRefused() {
        var host = Self.readyHost(buffers: 8)
        let handle = Self.connected(&host)
        let request = L2CAPFrame(channel: 6, payload: [0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07])
        #expect(
            Self.written(host.on(.received(Self.flushable(request, handle)))) == [
                [0x02, 0x40, 0x00, 6, 0, 2, 0, 6, 0, 0x05, 0x05]
            ])
        #expect(host.counters.refusedPairings == 1)
    }

    static func flushable(_ frame: L2CAPFrame, _ handle: UInt16) -> [UInt8] {
        var packet = frame.fragments(handle: handle, bufferSize: 251)[0]
        packet.boundary = .firstFlushable
        return packet.bytes
    }
}
