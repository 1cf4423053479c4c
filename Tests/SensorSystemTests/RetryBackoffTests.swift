import SensorSystem
import Testing

/// The one wait-and-retry policy of everything that reaches outside (the system bus's watchers,
/// the compositor feed, the wearables).
@Suite struct RetryBackoffTests {
    @Test func waitsDoubleUpToTheLastAndASuccessStartsThemOver() {
        var backoff = RetryBackoff(first: 1_000, last: 6_000)
        #expect((0..<5).map { _ in backoff.failed().wait } == [1_000, 2_000, 4_000, 6_000, 6_000])
        let hadFailed = backoff.succeeded()
        #expect(hadFailed)
        #expect(backoff.failed().wait == 1_000)
    }

    @Test func aReasonIsWorthSayingOnceUntilItChangesOrASuccessComes() {
        var backoff = RetryBackoff(first: 1, last: 8)
        let said = ["no bus", "no bus", "no bus", "refused", "refused", "no bus"].map {
            backoff.failed(because: $0).worthSaying
        }
        #expect(said == [true, false, false, true, false, true])
        let back = backoff.succeeded(), backAgain = backoff.succeeded()
        #expect(back)  // failures came before: "connected again"
        #expect(!backAgain)  // nothing to say twice
        #expect(backoff.failed(because: "no bus").worthSaying)
    }

    @Test func onlyALinkThatStayedUpStartsOver() {
        var backoff = RetryBackoff(first: 10, last: 1_000)
        _ = backoff.failed()
        _ = backoff.failed()
        #expect(backoff.lost(upFor: 5, stableFor: 50).wait == 40)
        #expect(backoff.lost(upFor: 50, stableFor: 50).wait == 10)
    }

    @Test func hostileBoundsAndLongRunsSaturate() {
        var backoff = RetryBackoff(first: -5, last: -9)
        #expect(backoff.first == 1 && backoff.last == 1)
        #expect(backoff.failed().wait == 1)
        var huge = RetryBackoff(first: .max / 2 + 1, last: .max)
        for _ in 0..<70 { _ = huge.failed() }
        #expect(huge.next == .max && huge.failed().wait == .max)
    }
}
