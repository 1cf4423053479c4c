import SensorKitModel
import Testing

@testable import SensorDaemon

/// The live subscription's rules without sockets (`LiveFlow`).
struct LiveFlowTests {
    typealias Flow = LiveFlow<Int>
    func offer(_ n: Int, at first: Int64) -> Flow.Event {
        .offered(.init(batch: n, count: 10, first: first, last: first + 9, bytes: 100))
    }
    func sent(_ actions: [Flow.Action]) -> [Int] {
        actions.compactMap { if case .send(let n) = $0 { return n } else { return nil } }
    }

    @Test func sendsOneFrameAtATimeWithinCredit() {
        var flow = Flow(requestID: 7, sensor: "s", device: "host", window: 2, maxBuffered: 4, maxBufferedBytes: 1_000)
        #expect(sent(flow.on(offer(1, at: 0))) == [1])
        #expect(sent(flow.on(offer(2, at: 10))) == [], "the first frame is still being written")
        #expect(sent(flow.on(.written)) == [2])
        #expect(sent(flow.on(offer(3, at: 20))) == [])
        #expect(sent(flow.on(.written)) == [], "no credit left")
        #expect(sent(flow.on(.acknowledged(batches: 5))) == [3], "credit is clamped to the window")
        #expect(flow.credit == 1)
    }

    @Test func aFullBufferEndsTheSubscriptionWithTheMissedRange() {
        var flow = Flow(requestID: 7, sensor: "s", device: "host", window: 1, maxBuffered: 2, maxBufferedBytes: 1_000)
        _ = flow.on(offer(1, at: 0))
        _ = flow.on(offer(2, at: 10))
        _ = flow.on(offer(3, at: 20))
        let actions = flow.on(offer(4, at: 30))
        guard case .reply(let reply) = actions.first, case .finish = actions.last else {
            Issue.record("\(actions)")
            return
        }
        #expect(reply.id == 7 && reply.error?.code == .overrun)
        #expect(reply.missed == WireMissed(sensor: "s", device: "host", from: 9, to: 39, samples: 30))
        #expect(flow.on(offer(5, at: 40)).isEmpty && flow.buffered.isEmpty, "nothing after the end, nothing kept")
    }

    @Test func theByteBoundEndsItToo() {
        var flow = Flow(requestID: 1, sensor: "s", device: "host", window: 1, maxBuffered: 100, maxBufferedBytes: 250)
        _ = flow.on(offer(1, at: 0))
        _ = flow.on(offer(2, at: 10))
        _ = flow.on(offer(3, at: 20))
        #expect(flow.on(offer(4, at: 30)).contains { if case .finish = $0 { true } else { false } })
    }

    @Test func theSourceStoppingEndsItWithACountAndWhatWasStillBuffered() {
        var flow = Flow(requestID: 3, sensor: "s", device: "host", window: 1, maxBuffered: 8, maxBufferedBytes: 1_000)
        _ = flow.on(offer(1, at: 0))
        _ = flow.on(offer(2, at: 10))
        let actions = flow.on(.sourceStopped("gone"))
        guard case .reply(let reply) = actions.first else {
            Issue.record("\(actions)")
            return
        }
        #expect(reply.ok == true && reply.count == 10 && reply.notice == "the subscription ended: gone")
        #expect(reply.missed?.from == 9 && reply.missed?.to == 19 && reply.missed?.samples == 10)
    }
}
