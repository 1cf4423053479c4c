import SensorKitModel
import Testing

@testable import SensorDaemon

/// `FetchFlow` on its own: credit, read-ahead, one frame in the socket, parking and the idle
/// timeout, with batches as numbers and time as a number (docs/protocol.md §6.1).
@Suite struct FetchFlowTests {
    /// Carries out a flow's actions the way `FetchStream` does, against a list of batch sizes.
    struct Shell {
        var flow: FetchFlow<Int>
        var batches: [Int]
        var nextBatch = 0
        var inSocket: [Int] = []
        var replies: [WireReply] = []
        var stepsQueued = 0
        var parks = 0
        var finished = 0
        var watchdogPeriod: Int64?
        var failReads = false

        init(batches: [Int], window: Int, idleTimeout: Int64 = 60_000_000_000) {
            flow = FetchFlow(requestID: 7, window: window, idleTimeout: idleTimeout, parkAfter: 1_000_000_000)
            self.batches = batches
        }

        mutating func send(_ event: FetchFlow<Int>.Event) {
            var events = [event]
            while !events.isEmpty {
                for action in flow.on(events.removeFirst()) {
                    switch action {
                    case .startWatchdog(let period): watchdogPeriod = period
                    case .read:
                        if failReads {
                            events.append(.readFailed("disk gone"))
                        } else if nextBatch < batches.count {
                            events.append(.read(nextBatch, count: batches[nextBatch]))
                            nextBatch += 1
                        } else {
                            events.append(.read(nil, count: 0))
                        }
                    case .send(let batch): inSocket.append(batch)
                    case .scheduleStep: stepsQueued += 1
                    case .park: parks += 1
                    case .reply(let reply): replies.append(reply)
                    case .finish: finished += 1
                    }
                }
            }
        }

        /// Runs the queued turns until none is left.
        mutating func drain() {
            while stepsQueued > 0 {
                stepsQueued -= 1
                send(.step)
            }
        }

        /// The client reads the frame in the socket.
        mutating func written(at now: Int64 = 0) {
            send(.written(now: now))
            drain()
        }
    }

    @Test func sendsOneFrameAtATimeWithinCreditAndRepliesRightAfterTheLast() {
        var shell = Shell(batches: [100, 100, 50], window: 2)
        shell.send(.start(now: 0))
        shell.drain()
        // The first batch is in the socket, the second read ahead; nothing more until it is written.
        #expect(shell.inSocket == [0] && shell.nextBatch == 2)
        shell.written()
        #expect(shell.inSocket == [0, 1] && shell.nextBatch == 3)
        // Credit is spent (window 2): the third waits for an ack even though the socket is free.
        shell.written()
        #expect(shell.inSocket == [0, 1] && shell.replies.isEmpty)
        shell.send(.acknowledged(batches: 1, now: 0))
        shell.drain()
        // The last batch and the final reply go out together, without waiting for the write.
        #expect(shell.inSocket == [0, 1, 2])
        #expect(shell.replies.count == 1 && shell.replies[0].ok == true && shell.replies[0].count == 250)
        #expect(shell.finished == 1 && shell.flow.isFinished)
        // Whatever comes after the end changes nothing.
        shell.written()
        shell.send(.acknowledged(batches: 5, now: 0))
        shell.send(.cancelled(silently: false))
        shell.send(.tick(now: 100_000_000_000))
        #expect(shell.replies.count == 1 && shell.finished == 1 && shell.inSocket.count == 3)
    }

    @Test func anEmptyRangeEndsWithCountZero() {
        var shell = Shell(batches: [], window: 4)
        shell.send(.start(now: 0))
        shell.drain()
        #expect(shell.inSocket.isEmpty && shell.replies.first?.count == 0 && shell.finished == 1)
    }

    @Test func anAbsurdAckSaturatesAndStaysCappedAtTheWindow() {
        var shell = Shell(batches: Array(repeating: 10, count: 10), window: 3)
        shell.send(.start(now: 0))
        shell.drain()
        shell.written()
        shell.written()
        shell.written()
        #expect(shell.inSocket.count == 3)
        shell.send(.acknowledged(batches: Int.max, now: 0))
        shell.send(.acknowledged(batches: Int.max, now: 0))
        shell.drain()
        for _ in 0..<5 { shell.written() }
        #expect(shell.inSocket.count == 6, "credit is capped at the window of 3")
        shell.send(.acknowledged(batches: -5, now: 0))
        shell.drain()
        #expect(shell.inSocket.count == 6, "a negative ack gives no credit")
    }

    @Test func aWaitingFetchParksOnceThenTimesOut() {
        let second: Int64 = 1_000_000_000
        var shell = Shell(batches: Array(repeating: 10, count: 10), window: 1, idleTimeout: 5 * second)
        shell.send(.start(now: 0))
        shell.drain()
        shell.written(at: 0)
        #expect(shell.watchdogPeriod == second)
        shell.send(.tick(now: second / 2))
        #expect(shell.parks == 0)
        shell.send(.tick(now: second))
        shell.send(.tick(now: 2 * second))
        #expect(shell.parks == 1, "parked once while it waits")
        // An ack is progress: the cursor reads again (and may park again later), the clock restarts.
        shell.send(.acknowledged(batches: 1, now: 3 * second))
        shell.drain()
        shell.send(.tick(now: 7 * second))
        #expect(shell.parks == 2 && shell.replies.isEmpty)
        shell.send(.tick(now: 8 * second))
        #expect(shell.replies.first?.error?.code == .timedOut && shell.finished == 1)
        #expect(shell.replies.first?.error?.message.contains("after 5 s") == true)
    }

    @Test func aCancelRepliesUnlessTheClientIsGone() {
        var loud = Shell(batches: [10, 10, 10], window: 1)
        loud.send(.start(now: 0))
        loud.drain()
        loud.send(.cancelled(silently: false))
        #expect(loud.replies.map { $0.error?.code } == [.cancelled] && loud.finished == 1)
        #expect(loud.replies.first?.error?.message.contains("after 10 samples") == true)
        var quiet = Shell(batches: [10, 10, 10], window: 1)
        quiet.send(.start(now: 0))
        quiet.send(.cancelled(silently: true))
        #expect(quiet.replies.isEmpty && quiet.finished == 1)
        var early = Shell(batches: [10], window: 1)
        early.send(.cancelled(silently: true))
        #expect(early.finished == 1 && early.flow.isFinished)
        early.send(.start(now: 0))
        #expect(early.nextBatch == 0, "a fetch cancelled before it started never reads")
    }

    @Test func aReadOrParkFailureEndsTheFetchWithDataInaccessible() {
        var reading = Shell(batches: [10], window: 1)
        reading.failReads = true
        reading.send(.start(now: 0))
        #expect(reading.replies.first?.error?.code == .dataInaccessible && reading.finished == 1)
        var parking = Shell(batches: [10, 10], window: 1)
        parking.send(.start(now: 0))
        parking.drain()
        parking.send(.parkFailed("snapshot lost"))
        #expect(parking.replies.first?.error?.code == .dataInaccessible)
        #expect(parking.replies.first?.error?.message.contains("snapshot lost") == true)
    }
}
