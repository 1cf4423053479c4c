import SensorSystem
import Testing

@testable import BLEBridge

/// The wait before a wearable's next connect (docs/ble.md, "States of a wearable").
@Suite struct ReconnectBackoffTests {
    @Test func refusedConnectsWaitLongerEachTimeUpToTheCap() {
        var backoff = RetryBackoff.wearable
        let delays = (0..<9).map { _ in backoff.connectFailed() }
        #expect(delays == [0.5, 1, 2, 4, 8, 16, 30, 30, 30].map { Int64($0 * 1e9) })
    }

    @Test func onlyALinkThatStayedUpStartsOver() {
        var backoff = RetryBackoff.wearable
        _ = backoff.connectFailed()
        _ = backoff.connectFailed()
        #expect(backoff.linkLost(upFor: 1_000_000_000) == 2_000_000_000)  // dropped at once: keeps growing
        #expect(backoff.connectFailed() == 4_000_000_000)
        #expect(backoff.linkLost(upFor: 60_000_000_000) == 500_000_000)  // a stable link: start over
    }

    /// A strap that drops its link every 25 s (as the demo rig's does) comes back within a second
    /// each time, instead of climbing to the 30 s cap and losing more than half of its data.
    @Test func aLinkThatDeliveredDataComesBackAtOnceEveryTime() {
        var backoff = RetryBackoff.wearable
        let delays = (0..<8).map { _ in backoff.linkLost(upFor: 25_000_000_000) }
        #expect(delays.allSatisfy { $0 == 500_000_000 }, "\(delays)")
        #expect(backoff.linkLost(upFor: 2_000_000_000) == 1_000_000_000)  // short links: the doubling goes on
        #expect(backoff.linkLost(upFor: 2_000_000_000) == 2_000_000_000)
    }
}
