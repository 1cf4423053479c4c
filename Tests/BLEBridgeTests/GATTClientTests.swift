import Testing

@testable import BLEBridge

/// The client state machine against a scripted peer: PDUs in, actions out, no socket.
@Suite struct GATTClientTests {
    /// A Heart Rate service at handles 1–4: declaration, measurement declaration, value, CCCD.
    static func discovered() -> GATTClient {
        var client = GATTClient(preferredMTU: 247)
        _ = client.start()
        _ = client.received([0x03, 0xF7, 0x00])
        _ = client.received([0x11, 0x06, 0x01, 0x00, 0x04, 0x00, 0x0D, 0x18])
        _ = client.received([0x01, 0x10, 0x05, 0x00, 0x0A])
        _ = client.received([0x09, 0x07, 0x02, 0x00, 0x10, 0x03, 0x00, 0x37, 0x2A])
        _ = client.received([0x01, 0x08, 0x03, 0x00, 0x0A])
        _ = client.received([0x05, 0x01, 0x04, 0x00, 0x02, 0x29])
        return client
    }

    @Test func mtuThenDiscoveryOneRequestAtATime() {
        var client = GATTClient(preferredMTU: 247)
        #expect(client.start() == [.send([0x02, 0xF7, 0x00]), .startTimer])
        #expect(
            client.received([0x03, 0x00, 0x01]) == [
                .event(.mtuExchanged(247)), .send([0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28]), .startTimer,
            ])
        #expect(
            client.received([0x11, 0x06, 0x01, 0x00, 0x04, 0x00, 0x0D, 0x18]) == [
                .send([0x10, 0x05, 0x00, 0xFF, 0xFF, 0x00, 0x28]), .startTimer,
            ])
        #expect(
            client.received([0x01, 0x10, 0x05, 0x00, 0x0A]) == [.send([0x08, 0x01, 0x00, 0x04, 0x00, 0x03, 0x28]), .startTimer])
        #expect(
            client.received([0x09, 0x07, 0x02, 0x00, 0x10, 0x03, 0x00, 0x37, 0x2A]) == [
                .send([0x08, 0x03, 0x00, 0x04, 0x00, 0x03, 0x28]), .startTimer,
            ])
        #expect(client.received([0x01, 0x08, 0x03, 0x00, 0x0A]) == [.send([0x04, 0x04, 0x00, 0x04, 0x00]), .startTimer])
        let done = client.received([0x05, 0x01, 0x04, 0x00, 0x02, 0x29])
        let characteristic = GATTCharacteristic(
            uuid: .heartRateMeasurement, declarationHandle: 2, valueHandle: 3, properties: .notify,
            descriptors: [.init(handle: 4, uuid: .clientCharacteristicConfiguration)])
        #expect(
            done == [
                .event(.discovered([GATTService(uuid: .heartRateService, start: 1, end: 4, characteristics: [characteristic])])),
                .stopTimer,
            ])
        #expect(client.isReady)
    }

    @Test func smallServerMTUWinsAndNoMTUSupportKeepsTheDefault() {
        var client = GATTClient(preferredMTU: 247)
        _ = client.start()
        _ = client.received([0x03, 0x17, 0x00])
        #expect(client.mtu == 23)
        var old = GATTClient(preferredMTU: 247)
        _ = old.start()
        #expect(old.received([0x01, 0x02, 0x00, 0x00, 0x06]).first == .event(.mtuExchanged(23)))
    }

    @Test func subscribeWritesTheCCCDAndNotificationsFlow() throws {
        var client = Self.discovered()
        let characteristic = try #require(client.services.service(.heartRateService)?.characteristic(.heartRateMeasurement))
        let subscription = client.subscribe(characteristic)
        let (id, actions) = try #require(subscription)
        #expect(actions == [.send([0x12, 0x04, 0x00, 0x01, 0x00]), .startTimer])
        // A notification between request and response is delivered, not taken for the response.
        #expect(client.received([0x1B, 0x03, 0x00, 0x10, 0x58]) == [.event(.notification(handle: 3, value: [0x10, 0x58]))])
        #expect(client.received([0x13]) == [.event(.writeCompleted(id, handle: 4)), .stopTimer])
    }

    @Test func indicationsAreConfirmed() {
        var client = Self.discovered()
        #expect(
            client.received([0x1D, 0x0E, 0x00, 0xF0, 0x02]) == [
                .send([0x1E]), .event(.indication(handle: 14, value: [0xF0, 0x02])),
            ])
    }

    @Test func operationsQueueBehindTheOutstandingOne() {
        var client = Self.discovered()
        let (first, a) = client.read(7)
        let (second, b) = client.read(9)
        #expect(a == [.send([0x0A, 0x07, 0x00]), .startTimer])
        #expect(b.isEmpty)
        #expect(
            client.received([0x01, 0x0A, 0x07, 0x00, 0x02]) == [
                .event(.operationFailed(first, handle: 7, error: .readNotPermitted)), .send([0x0A, 0x09, 0x00]), .startTimer,
            ])
        #expect(client.received([0x0B, 0x57]) == [.event(.readCompleted(second, handle: 9, value: [0x57])), .stopTimer])
    }

    @Test func longValuesAreReadOnWithReadBlob() {
        var client = GATTClient(preferredMTU: 23)
        _ = client.start()
        _ = client.received([0x03, 0x17, 0x00])
        _ = client.received([0x01, 0x10, 0x01, 0x00, 0x0A])
        let (id, _) = client.read(3)
        let part = [UInt8](repeating: 0x41, count: 22)
        #expect(client.received([0x0B] + part) == [.send([0x0C, 0x03, 0x00, 0x16, 0x00]), .startTimer])
        #expect(client.received([0x0D, 0x42]) == [.event(.readCompleted(id, handle: 3, value: part + [0x42])), .stopTimer])
    }

    @Test func timeoutFailsTheLinkForGood() {
        var client = GATTClient()
        _ = client.start()
        #expect(client.timedOut() == [.stopTimer, .event(.linkFailed("request timed out"))])
        #expect(client.received([0x03, 0xF7, 0x00]).isEmpty)
        #expect(client.timedOut().isEmpty)
    }

    @Test func peerRequestsAreRefusedAndGarbageIsIgnored() {
        var client = Self.discovered()
        #expect(client.received([0x02, 0x17, 0x00]) == [.send([0x01, 0x02, 0x00, 0x00, 0x06])])
        #expect(client.received([0x20, 0x01]).first == .send([0x01, 0x20, 0x00, 0x00, 0x06]))
        if case .event(.ignoredPDU) = client.received([0x1B, 0x03]).first {
        } else {
            Issue.record("truncated notification not ignored")
        }
        if case .event(.ignoredPDU) = client.received([0x13]).first {} else { Issue.record("unsolicited response not ignored") }
        if case .event(.ignoredPDU) = client.received([]).first {} else { Issue.record("empty PDU not ignored") }
    }

    @Test func brokenDiscoveryFailsTheLinkInsteadOfLooping() {
        var client = GATTClient()
        _ = client.start()
        _ = client.received([0x03, 0xF7, 0x00])
        // A service that ends before it starts.
        #expect(
            client.received([0x11, 0x06, 0x05, 0x00, 0x04, 0x00, 0x0D, 0x18]).last
                == .event(.linkFailed("malformed service discovery response")))
        #expect(client.isFailed)
    }
}
