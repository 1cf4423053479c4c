import Testing

@testable import SensorKit

/// `ReaderSessionState` on its own: every request gets exactly one final reply, whether the
/// daemon answers, a chunk cannot be decoded, or the connection ends before or after it is made.
@Suite struct ReaderSessionStateTests {
    typealias State = ReaderSessionState<String>

    /// What the actions say, as text, so a test reads as the sequence it expects.
    func describe(_ actions: [State.Action]) -> [String] {
        actions.map {
            switch $0 {
            case .write(let id): "write \(id)"
            case .deliverBatch(let handler): "batch to \(handler)"
            case .deliverReply(let handler): "reply to \(handler)"
            case .fail(let id, let handler, let why): "fail \(id) \(handler): \(why)"
            case .cancel(let id): "cancel \(id)"
            }
        }
    }

    @Test func repliesAndBatchesGoToTheirRequestUntilItsFinalReply() {
        var state = State()
        #expect(describe(state.on(.request("a"))) == ["write 1"])
        #expect(describe(state.on(.request("b"))) == ["write 2"])
        #expect(describe(state.on(.batch(2))) == ["batch to b"])
        #expect(describe(state.on(.reply(2))) == ["reply to b"])
        // After its final reply a request hears nothing more; unknown ids are dropped.
        #expect(state.on(.batch(2)).isEmpty && state.on(.reply(2)).isEmpty && state.on(.reply(99)).isEmpty)
        #expect(state.waitingCount == 1)
    }

    @Test func anUndecodableChunkCancelsAndFailsItsFetchOnce() {
        var state = State()
        _ = state.on(.request("fetch"))
        #expect(describe(state.on(.undecodable(1, "bad chunk"))) == ["cancel 1", "fail 1 fetch: bad chunk"])
        #expect(state.on(.undecodable(1, "again")).isEmpty && state.on(.reply(1)).isEmpty)
    }

    @Test func theEndFailsEveryWaitingRequestAndEveryLaterOne() {
        var state = State()
        _ = state.on(.request("a"))
        _ = state.on(.request("b"))
        _ = state.on(.reply(1))
        #expect(describe(state.on(.ended("daemon gone"))) == ["fail 2 b: daemon gone"])
        #expect(state.phase == .closed(reason: "daemon gone"))
        #expect(describe(state.on(.request("c"))) == ["fail 3 c: connection to sensorkitd closed: daemon gone"])
        // Late frames and a second end change nothing.
        #expect(state.on(.reply(2)).isEmpty && state.on(.batch(2)).isEmpty && state.on(.ended("again")).isEmpty)
        #expect(state.waitingCount == 0)
    }

}
