import Foundation
import SensorKitModel
import SensorTestKit
import Testing

@Suite struct TimelineTests {
    let hour: Int64 = 3_600_000_000_000
    let day: Int64 = 86_400_000_000_000

    @Test func foundedAtMidnightUTCAndStartsSmall() {
        let clock = FakeClock()
        var timeline = Timeline.founded(by: clock)
        #expect(timeline.origin % day == 0)
        timeline.adoptCurrentBoot(of: clock)
        let now = timeline.now(clock)!
        #expect(now.rawValue >= 0 && now.rawValue < 86_400)
    }

    @Test func steppingTheWallClockDoesNotMoveSRTime() {
        let clock = FakeClock()
        var timeline = Timeline.founded(by: clock)
        timeline.adoptCurrentBoot(of: clock)
        let before = timeline.now(clock)!
        clock.stepWallClock(nanoseconds: -2 * hour)  // NTP steps the clock back two hours
        #expect(timeline.now(clock) == before)
        clock.stepWallClock(nanoseconds: 5 * hour)
        clock.advance(nanoseconds: 1_000)
        #expect(timeline.now(clock)!.nanoseconds == before.nanoseconds! + 1_000)
        // A daemon restart within the same boot keeps the anchor, whatever the wall clock says.
        #expect(timeline.adoptCurrentBoot(of: clock) == .kept(anchor: timeline.anchors[clock.bootID]!))
    }

    @Test func keepsIncreasingAcrossAReboot() {
        let clock = FakeClock()
        var timeline = Timeline.founded(by: clock)
        timeline.adoptCurrentBoot(of: clock)
        clock.advance(nanoseconds: 3 * hour)
        let lastOfFirstBoot = timeline.now(clock)!.nanoseconds!
        timeline.advanceHighWater(to: lastOfFirstBoot)
        let firstBoot = clock.bootID

        clock.reboot(downtime: 10 * 60 * 1_000_000_000)
        clock.synchronize()  // NTP locked on before the daemon started
        let adoption = timeline.adoptCurrentBoot(of: clock)
        guard case .anchored = adoption else { Issue.record("expected a fresh anchor, got \(adoption)"); return }
        let firstOfSecondBoot = timeline.now(clock)!.nanoseconds!
        #expect(firstOfSecondBoot > lastOfFirstBoot)
        // The gap equals the real downtime plus the new boot's uptime: the wall clock was right.
        #expect(firstOfSecondBoot - lastOfFirstBoot == 10 * 60 * 1_000_000_000 + 3_000_000_000)
        // Instants of the first boot still convert with that boot's own anchor.
        let old = BootInstant(boot: firstBoot, nanoseconds: 5_000_000_000)
        #expect(timeline.srNanoseconds(of: old) == timeline.anchors[firstBoot]! + 5_000_000_000)
    }

    @Test func aWallClockBehindAfterRebootCannotRunTheTimelineBackwards() {
        let clock = FakeClock()
        var timeline = Timeline.founded(by: clock)
        timeline.adoptCurrentBoot(of: clock)
        clock.advance(nanoseconds: 2 * hour)
        let last = timeline.now(clock)!.nanoseconds!
        timeline.advanceHighWater(to: last)
        clock.reboot()
        clock.stepWallClock(nanoseconds: -day)  // the RTC came back a day late (dead battery)
        let adoption = timeline.adoptCurrentBoot(of: clock)
        guard case .raised(_, let raisedBy) = adoption else { Issue.record("expected raised, got \(adoption)"); return }
        #expect(raisedBy > 0)
        // The new boot's CLOCK_BOOTTIME zero lies just after the last recorded instant, so even its
        // earliest instants (data the kernel stamped before the daemon started) come after it.
        #expect(timeline.now(clock)!.nanoseconds! == last + 1 + clock.boottimeNanoseconds())
    }

    /// Item: a wall clock set two days ahead, then a reboot. Unsynchronised, it is not believed:
    /// the new boot starts right after recorded time. Corrected and synchronised, it does not
    /// leave the timeline ahead; at the next adoption with a synchronised clock the timeline
    /// catches up with real time again.
    @Test func aWallClockSetAheadAcrossARebootIsNotBelieved() throws {
        let clock = FakeClock()
        var timeline = Timeline.founded(by: clock)
        timeline.adoptCurrentBoot(of: clock)
        clock.advance(nanoseconds: hour)
        let last = timeline.now(clock)!.nanoseconds!
        timeline.advanceHighWater(to: last)
        clock.stepWallClock(nanoseconds: 2 * day)
        clock.reboot(downtime: 60_000_000_000, bootedFor: 3_000_000_000)
        let adoption = timeline.adoptCurrentBoot(of: clock)
        guard case .unproven(let anchor, let unprovenBy) = adoption else {
            Issue.record("expected unproven, got \(adoption)"); return
        }
        #expect(anchor == last + 1)
        #expect(unprovenBy == 2 * day + 60_000_000_000 - 1)  // the step and the downtime
        #expect(timeline.unprovenBoots == [clock.bootID])
        // Only the new boot's own uptime is counted.
        #expect(timeline.now(clock)!.nanoseconds! - last == 3_000_000_001)

        // The administrator puts the clock right and NTP locks on: SR time is not ahead of it.
        clock.stepWallClock(nanoseconds: -2 * day)
        clock.synchronize()
        clock.advance(nanoseconds: hour)
        let wallSR = clock.realtimeCFNanoseconds() - timeline.origin
        #expect(timeline.now(clock)!.nanoseconds! <= wallSR)
        #expect(wallSR - timeline.now(clock)!.nanoseconds! == 60_000_000_000 - 1)  // the unproven downtime

        // A restart in the same boot keeps the anchor (stored times depend on it) …
        #expect(timeline.adoptCurrentBoot(of: clock) == .kept(anchor: anchor))
        // … and the next boot with a synchronised clock is anchored by it again: converged.
        timeline.advanceHighWater(to: timeline.now(clock)!.nanoseconds!)
        clock.reboot(downtime: 5 * 60_000_000_000)
        clock.synchronize()
        guard case .anchored = timeline.adoptCurrentBoot(of: clock) else { Issue.record("expected anchored"); return }
        #expect(timeline.now(clock)!.nanoseconds! == clock.realtimeCFNanoseconds() - timeline.origin)
    }

    /// A wall clock NTP reports synchronised (to a wrong source) two days ahead across a reboot:
    /// believed, it released held data. Beyond `maxUnconfirmedAdvance` the boot starts right after
    /// recorded time, as an unsynchronised one, and stays so until a person confirms the clock; a
    /// night switched off (within the bound) is still believed, and a confirmed clock anchors the
    /// next boot.
    @Test func aSynchronisedClockDaysAheadAcrossARebootWaitsForAPerson() throws {
        let clock = FakeClock()
        var timeline = Timeline.founded(by: clock)
        timeline.adoptCurrentBoot(of: clock)
        clock.advance(nanoseconds: hour)
        let last = timeline.now(clock)!.nanoseconds!
        timeline.advanceHighWater(to: last)
        clock.stepWallClock(nanoseconds: 2 * day)
        clock.reboot(downtime: 60_000_000_000, bootedFor: 3_000_000_000)
        clock.synchronize()
        let adoption = timeline.adoptCurrentBoot(of: clock)
        #expect(adoption == .unconfirmed(anchor: last + 1, claimed: 2 * day + 60_000_000_000 - 1))
        #expect(timeline.currentBootIsUnproven)
        #expect(timeline.now(clock)!.nanoseconds! - last == 3_000_000_001)
        let decoded = try JSONDecoder().decode(Timeline.self, from: try JSONEncoder().encode(timeline))
        #expect(decoded == timeline)

        // Unconfirmed, the next boot is held as well (the clock still claims more than the bound) …
        timeline.advanceHighWater(to: timeline.now(clock)!.nanoseconds!)
        clock.reboot()
        clock.synchronize()
        guard case .unconfirmed = timeline.adoptCurrentBoot(of: clock) else {
            Issue.record("a boot past the bound was anchored"); return
        }
        // … a confirmed one is anchored by the clock.
        timeline.advanceHighWater(to: timeline.now(clock)!.nanoseconds!)
        clock.reboot()
        clock.synchronize()
        guard case .anchored = timeline.adoptCurrentBoot(of: clock, confirmed: true) else {
            Issue.record("confirmed, not anchored"); return
        }
        #expect(timeline.now(clock)!.nanoseconds! == clock.realtimeCFNanoseconds() - timeline.origin)
        #expect(!timeline.currentBootIsUnproven)

        // Eleven hours switched off, synchronised: within the bound, believed.
        timeline.advanceHighWater(to: timeline.now(clock)!.nanoseconds!)
        clock.reboot(downtime: 11 * hour)
        clock.synchronize()
        guard case .anchored = timeline.adoptCurrentBoot(of: clock) else { Issue.record("a night off was not believed"); return }
    }

    @Test func theTimelineFileKeepsUnprovenBootsAndReadsOlderFiles() throws {
        let clock = FakeClock()
        var timeline = Timeline.founded(by: clock)
        timeline.adoptCurrentBoot(of: clock)
        timeline.advanceHighWater(to: 42)
        clock.reboot()
        timeline.adoptCurrentBoot(of: clock)
        let data = try JSONEncoder().encode(timeline)
        #expect(try JSONDecoder().decode(Timeline.self, from: data) == timeline)
        #expect(timeline.unprovenBoots == [clock.bootID])
        let older = #"{"origin": 5, "anchors": {"b": 7}, "highWater": 9, "currentBoot": "b"}"#
        let read = try JSONDecoder().decode(Timeline.self, from: Data(older.utf8))
        #expect(read == Timeline(origin: 5, anchors: [BootID("b"): 7], highWater: 9, currentBoot: BootID("b")))
    }

    @Test func cfConversionsUseTheCurrentOffset() {
        let clock = FakeClock()
        var timeline = Timeline.founded(by: clock)
        timeline.adoptCurrentBoot(of: clock)
        let sample = timeline.now(clock)!
        let cfNow = Double(clock.realtimeCFNanoseconds()) / 1e9
        #expect(abs(timeline.toCFAbsoluteTime(sample, clock: clock)! - cfNow) < 1e-6)
        // The wall clock is 5 s fast from now on: conversions are 5 s fast too (Apple's words).
        clock.stepWallClock(nanoseconds: 5_000_000_000)
        #expect(abs(timeline.toCFAbsoluteTime(sample, clock: clock)! - (cfNow + 5)) < 1e-6)
        let back = timeline.fromCFAbsoluteTime(cfNow + 5, clock: clock)!
        #expect(abs(back.rawValue - sample.rawValue) < 1e-6)
    }

    @Test func nanosecondRoundTripIsExactOverSevenDays() {
        // Deterministic sweep over the first 7 days of a timeline plus both edges.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return state
        }
        let span = 7 * day
        var checked = 0
        for ns in [Int64(0), 1, 999_999_999, 1_000_000_000, span - 1, span, -1, -span] {
            #expect(SRAbsoluteTime(nanoseconds: ns).nanoseconds == ns)
        }
        for _ in 0..<200_000 {
            let ns = Int64(next() % UInt64(span))
            let back = SRAbsoluteTime(nanoseconds: ns).nanoseconds
            if back != ns { Issue.record("\(ns) came back as \(String(describing: back))"); break }
            checked += 1
        }
        #expect(checked == 200_000)
    }

    @Test func bootInstantRoundTripsThroughTheTimeline() {
        let clock = FakeClock()
        var timeline = Timeline.founded(by: clock)
        timeline.adoptCurrentBoot(of: clock)
        let boot = clock.bootID
        for step in 0...977 {
            let boottime = 7 * day / 977 * Int64(step)
            let instant = BootInstant(boot: boot, nanoseconds: boottime + 123)
            let sr = timeline.srTime(of: instant)!
            #expect(timeline.bootInstant(srNanoseconds: sr.nanoseconds!, in: boot) == instant)
        }
    }

    @Test func unsetAndNonFiniteTimesHaveNoInstant() {
        #expect(SRAbsoluteTime(.nan).nanoseconds == nil)
        #expect(SRAbsoluteTime(.infinity).nanoseconds == nil)
        #expect(SRAbsoluteTime(1e300).nanoseconds == nil)
    }

    @Test func unknownBootHasNoSRTime() {
        let clock = FakeClock()
        let timeline = Timeline.founded(by: clock)
        #expect(timeline.srTime(of: BootInstant(boot: BootID("other"), nanoseconds: 1)) == nil)
    }

    /// A device's timestamp reaches the timeline unchecked (a glitching chip stamps `INT64_MAX`):
    /// the anchor plus it overflowed and trapped. It now saturates at the bounds.
    @Test func extremeInstantsSaturateInsteadOfTrapping() {
        let boot = BootID("boot-x")
        let ahead = Timeline(origin: 0, anchors: [boot: 10 * hour], highWater: .min)
        let behind = Timeline(origin: 0, anchors: [boot: -10 * hour], highWater: .min)
        #expect(ahead.srNanoseconds(of: BootInstant(boot: boot, nanoseconds: .max)) == .max)
        #expect(behind.srNanoseconds(of: BootInstant(boot: boot, nanoseconds: .min)) == .min)
        #expect(ahead.srNanoseconds(of: BootInstant(boot: boot, nanoseconds: .min)) == .min + 10 * hour)
        #expect(ahead.bootInstant(srNanoseconds: .min, in: boot)?.nanoseconds == .min)
        #expect(behind.bootInstant(srNanoseconds: .max, in: boot)?.nanoseconds == .max)
    }

    /// `origin` and `highWater` are read back from timeline.json: a corrupt file with extreme
    /// values must not crash the daemon when it adopts a new boot.
    @Test func extremeValuesFromTheTimelineFileDoNotTrapOnAdoption() {
        for (origin, highWater) in [(Int64.min, Int64.max), (Int64.max, Int64.max - 1), (Int64.min, Int64.min + 1)] {
            let clock = FakeClock()
            var timeline = Timeline(origin: origin, anchors: [:], highWater: highWater)
            timeline.adoptCurrentBoot(of: clock)
            #expect(timeline.anchors[clock.bootID] != nil)
            _ = timeline.now(clock)
            _ = timeline.cfOffsetNanoseconds(clock)
        }
    }
}
