import Testing

@testable import SensorDaemon

/// `ConnectionFlow` on its own: backpressure, the partial-frame deadline and the ways to the
/// close, with counts for requests and bytes (docs/protocol.md §2, §6.2).
@Suite struct ConnectionFlowTests {
    func flow() -> ConnectionFlow {
        ConnectionFlow(
            maxQueuedRequests: 4, readPauseBytes: 1000, maxPendingBytes: 5000, flushBeforeCloseBytes: 600,
            partialFrameTimeout: 10)
    }

    @Test func readingPausesAtTheBacklogAndResumesAtHalf() {
        var flow = flow()
        for _ in 0..<4 {
            #expect(flow.on(.readTurn).isEmpty)
            #expect(flow.on(.requestRead).isEmpty)
        }
        #expect(flow.on(.readTurn) == [.pauseReading, .endTurn])
        #expect(flow.on(.readTurn) == [.endTurn], "paused: no reading until it resumes")
        #expect(flow.on(.requestAnswered).isEmpty, "3 unanswered is more than half of 4")
        #expect(flow.on(.requestAnswered) == [.resumeReading, .readAgain])
        #expect(flow.on(.readTurn).isEmpty)
        // Unwritten replies pause it too, and only once both are below half does it resume.
        #expect(flow.on(.queued(bytes: 1200)) == [.flush])
        #expect(flow.on(.readTurn) == [.pauseReading, .endTurn])
        #expect(flow.on(.written(bytes: 600)).isEmpty)
        #expect(flow.on(.writeBlocked) == [.watchWritable], "600 bytes left: more than half of 1000")
        #expect(flow.on(.written(bytes: 600)).isEmpty)
        #expect(flow.on(.writesDone) == [.unwatchWritable, .resumeReading, .readAgain])
    }

    @Test func aClientThatNeverReadsIsClosedBeyondTheBound() {
        var flow = flow()
        #expect(flow.on(.queued(bytes: 4000)) == [.flush])
        #expect(flow.on(.writeBlocked) == [.watchWritable])
        #expect(flow.on(.queued(bytes: 1001)) == [.close(reason: "client left more than 5000 bytes of replies unread")])
        #expect(flow.isClosed && flow.pendingBytes == 0)
        #expect(flow.on(.readTurn) == [.endTurn] && flow.on(.queued(bytes: 10)).isEmpty && flow.on(.writesDone).isEmpty)
    }

    @Test func aPartialFrameIsTimedOnlyWhileTheClientIsTheOneToSend() {
        var flow = flow()
        #expect(flow.on(.readBlocked(buffered: 3, newFrame: false)) == [.armPartialFrameDeadline])
        #expect(flow.on(.readBlocked(buffered: 5, newFrame: false)).isEmpty, "the same frame, still arriving")
        #expect(flow.on(.readBlocked(buffered: 2, newFrame: true)) == [.armPartialFrameDeadline], "a new frame restarts it")
        #expect(flow.on(.readBlocked(buffered: 0, newFrame: true)) == [.disarmPartialFrameDeadline])
        // While the daemon does not read (backlog full) the client is not to blame.
        #expect(flow.on(.readBlocked(buffered: 3, newFrame: false)) == [.armPartialFrameDeadline])
        for _ in 0..<4 { _ = flow.on(.requestRead) }
        #expect(flow.on(.readTurn) == [.disarmPartialFrameDeadline, .pauseReading, .endTurn])
        #expect(flow.on(.partialFrameExpired(buffered: 3)).isEmpty)
        for _ in 0..<4 { _ = flow.on(.requestAnswered) }
        #expect(
            flow.on(.partialFrameExpired(buffered: 3))
                == [.replyMalformed("incomplete frame: 3 bytes of it arrived and no more within 10.0 s")])
    }

    @Test func aCloseAfterFlushWaitsOnlyForAFewQueuedBytes() {
        var few = flow()
        _ = few.on(.queued(bytes: 100))
        #expect(few.on(.closeRequested("bad framing", flushFirst: true)) == [.stopReading])
        #expect(few.on(.readTurn) == [.endTurn])
        #expect(few.on(.partialFrameExpired(buffered: 3)).isEmpty)
        #expect(few.on(.written(bytes: 100)).isEmpty)
        #expect(few.on(.writesDone) == [.close(reason: "bad framing")])
        var many = flow()
        _ = many.on(.queued(bytes: 700))
        #expect(
            many.on(.closeRequested("refused", flushFirst: true))
                == [.close(reason: "refused")])
        var paused = flow()
        for _ in 0..<4 { _ = paused.on(.requestRead) }
        _ = paused.on(.readTurn)
        _ = paused.on(.queued(bytes: 10))
        #expect(
            paused.on(.closeRequested("gone", flushFirst: false))
                == [.close(reason: "gone")],
            "a suspended read source must be resumed to be cancelled")
        #expect(paused.on(.closeRequested("again", flushFirst: false)).isEmpty)
    }
}
