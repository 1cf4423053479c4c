import Foundation
import SensorKitModel
import Testing

@testable import SensorStore

/// The hold and the first-start rule when clocks lie (docs/design-notes/0005-clock-steps.md): a
/// wall clock set ahead across a reboot, a sensor that stamps its samples late or early.
@Suite struct ClockLiesTests {
    static let second: Int64 = 1_000_000_000

    /// The pure per-sample rule: the hold on the later of sensor and receive time, the first
    /// start on the earlier, each boundary to the nanosecond.
    @Test func admissionUsesTheLaterTimeForTheHoldAndTheEarlierForTheFirstStart() {
        let now: Int64 = 1_000 * Self.second
        let hold = 20 * Self.second
        let rule = RetentionPolicy(hold: hold, window: 7 * StoreFixture.day).admission(notBefore: 500, now: now)
        #expect(rule.releasedThrough == now - hold)
        let edge = now - hold
        #expect(rule.admits(sensorTime: edge, receiveTime: edge))
        #expect(!rule.admits(sensorTime: edge - 30 * Self.second, receiveTime: edge + 1))  // stamped 30 s late
        #expect(!rule.admits(sensorTime: edge + 1, receiveTime: edge - 30 * Self.second))  // stamped in the future
        #expect(rule.admits(sensorTime: 500, receiveTime: 500))
        #expect(!rule.admits(sensorTime: 500 + 10 * Self.second, receiveTime: 499))  // received before the first start
        #expect(!rule.admits(sensorTime: 499, receiveTime: 500 + Self.second))  // measured before it
        // No hold (lab rigs): only the first start limits.
        let lab = RetentionPolicy(hold: 0, window: StoreFixture.day).admission(now: now)
        #expect(lab.releasedThrough == .max && lab.notBefore == .min)
        #expect(lab.admits(sensorTime: now + Self.second, receiveTime: now + 2 * Self.second))
    }

    /// A stream stamped 30 s late with a 20 s hold: 1 s after receipt a fetch that ends at the
    /// hold's edge returns none of it (the sensor time alone served it); 20 s after receipt, all.
    /// Both the decoded path and whole-chunk handover.
    @Test func aLateStampedStreamWaitsOutTheHoldFromItsReceipt() throws {
        let hold = 20 * Self.second
        let fixture = try StoreFixture { $0.retention = RetentionPolicy(hold: hold, window: StoreFixture.day) }
        let stream = try fixture.opened.register(.accelerometer)
        fixture.clock.advance(nanoseconds: 60 * Self.second)
        let received = fixture.boottime
        let times = (0..<100).map { received - 30 * Self.second + Int64($0) * 10_000_000 }
        let rows = StoreTests.append(
            fixture, stream, times: times, values: [times, times, times],
            receiveDelay: received - times[0])
        try fixture.reopen()  // sealed: one chunk, eligible for handover by its sensor times
        fixture.clock.advance(nanoseconds: Self.second)
        var holdEdge = try fixture.opened.now() - hold
        #expect(fixture.sr(times.last!) <= holdEdge)  // the sensor times alone are out of the hold
        #expect(try fixture.fetch(to: holdEdge).isEmpty)
        #expect(try ChunkHandoverTests.fetchHandingOver(fixture, ChunkHandoverTests.everyFormat, to: holdEdge).rows.isEmpty)

        fixture.clock.advance(nanoseconds: hold)
        holdEdge = try fixture.opened.now() - hold
        #expect(try fixture.fetch(to: holdEdge) == rows)
        let handed = try ChunkHandoverTests.fetchHandingOver(fixture, ChunkHandoverTests.everyFormat, to: holdEdge)
        #expect(handed.rows == rows && handed.handedOver == rows.count)
    }

    /// A stream stamped 10.5 s early (ahead of receipt): another app whose first start falls
    /// inside it gets only samples received at or after that start, in pieces and sealed.
    @Test func anotherAppDoesNotGetSamplesReceivedBeforeItsFirstStart() throws {
        let fixture = try StoreFixture(StoreTests.noHold)
        let stream = try fixture.opened.register(.accelerometer)
        let start = fixture.boottime
        let received = (0..<200).map { start + Int64($0) * 100_000_000 }  // 20 s, 10 Hz
        let stamped = received.map { $0 + 10_500_000_000 }
        let rows = StoreTests.append(
            fixture, stream, times: stamped, values: [stamped, stamped, stamped],
            receiveDelay: -10_500_000_000)
        fixture.clock.advance(nanoseconds: 30 * Self.second)
        try fixture.opened.flush()
        let firstStart = fixture.sr(received[100])
        let expected = rows.filter { $0.receive >= firstStart }
        #expect(expected.count == 100)
        #expect(try fixture.fetch(notBefore: firstStart) == expected)  // pieces
        try fixture.reopen()
        #expect(try fixture.fetch(notBefore: firstStart) == expected)  // sealed
        #expect(
            try ChunkHandoverTests.fetchHandingOver(fixture, ChunkHandoverTests.everyFormat, notBefore: firstStart).rows
                == expected)
        #expect(try fixture.fetch() == rows)  // an app whose start predates it all gets every sample
    }

    /// The reporter's scenario: 1,382 samples recorded over the 15 s before a reboot, the wall
    /// clock set two days ahead in between. With the wall clock unsynchronised, the new boot
    /// starts right after recorded time, so a fetch up to the hold's edge returns nothing.
    @Test func aWallClockSetAheadAcrossARebootReleasesNothingHeld() throws {
        try rebootWithTheClockTwoDaysAhead(synchronized: false)
    }

    /// The same with NTP reporting the wrong clock synchronised: more than the 12 h a boot may
    /// move the timeline unconfirmed, so held (all 1,382 were released before the bound).
    @Test func aSynchronisedWallClockSetAheadAcrossARebootReleasesNothingHeld() throws {
        try rebootWithTheClockTwoDaysAhead(synchronized: true)
    }

    func rebootWithTheClockTwoDaysAhead(synchronized: Bool) throws {
        let fixture = try StoreFixture()  // SensorKit's 24 h hold
        let stream = try fixture.opened.register(.accelerometer)
        let first = fixture.boottime
        let times = (0..<1_382).map { first + Int64($0) * 10_850_000 }  // 15 s at ~92 Hz
        StoreTests.append(fixture, stream, times: times, values: [times, times, times])
        fixture.clock.advance(nanoseconds: 15 * Self.second)
        try fixture.opened.close()
        var timeline = fixture.timeline
        timeline.advanceHighWater(to: timeline.now(fixture.clock)!.nanoseconds!)
        let lastRecorded = fixture.sr(times.last!)

        fixture.clock.stepWallClock(nanoseconds: 2 * StoreFixture.day)
        fixture.clock.reboot(downtime: 40 * Self.second)
        if synchronized { fixture.clock.synchronize() }
        let adoption = timeline.adoptCurrentBoot(of: fixture.clock)
        switch adoption {
        case .unproven where !synchronized, .unconfirmed where synchronized: break
        default: Issue.record("the wall clock two days ahead anchored the new boot: \(adoption)")
        }
        let store = try SensorStore(configuration: fixture.configuration, clock: fixture.clock, timeline: timeline)
        defer { try? store.close() }
        let cursor = try store.samples(sensor: .accelerometer, device: "host", from: .min, to: try store.now() - StoreFixture.day)
        var released = 0
        while let block = try cursor.next() { released += block.count }
        #expect(released == 0)
        // Everything it recorded still lies well inside the hold by the time that can be proven.
        #expect(try store.now() - lastRecorded < 30 * Self.second)
    }
}
