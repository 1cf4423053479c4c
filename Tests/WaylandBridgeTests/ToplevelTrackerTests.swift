import Testing

@testable import WaylandBridge

@Suite struct ToplevelTrackerTests {
    /// Feeds events, returns the app ids reported (`-` for none in front), times dropped.
    private func reported(_ tracker: inout ToplevelTracker, _ events: [ToplevelTracker.Event]) -> [String] {
        events.flatMap { tracker.on($0) }.map { event in
            if case .foreground(let app, _) = event { return app ?? "-" }
            return "\(event)"
        }
    }

    @Test func reportsTheInitialStateOnceThenOnlyChanges() {
        var tracker = ToplevelTracker()
        #expect(reported(&tracker, [.settled(at: 1)]) == ["-"])
        #expect(reported(&tracker, [.settled(at: 2)]) == [])
        let opened = reported(
            &tracker,
            [.created(handle: 3), .appID(handle: 3, "a"), .activated(handle: 3, true), .done(handle: 3), .settled(at: 3)])
        #expect(opened == ["a"])
        #expect(reported(&tracker, [.activated(handle: 3, true), .done(handle: 3), .settled(at: 4)]) == [])
    }

    @Test func aFocusMoveInOneBatchIsOneChangeWithNoEmptyMomentBetween() {
        var tracker = ToplevelTracker()
        _ = reported(
            &tracker,
            [
                .created(handle: 1), .appID(handle: 1, "a"), .activated(handle: 1, true), .done(handle: 1),
                .created(handle: 2), .appID(handle: 2, "b"), .done(handle: 2), .settled(at: 1),
            ])
        let moved = reported(
            &tracker,
            [.activated(handle: 1, false), .done(handle: 1), .activated(handle: 2, true), .done(handle: 2), .settled(at: 2)])
        #expect(moved == ["b"])
    }

    @Test func stateWaitsForDone() {
        var tracker = ToplevelTracker()
        _ = reported(&tracker, [.created(handle: 1), .appID(handle: 1, "a"), .activated(handle: 1, true), .settled(at: 1)])
        #expect(tracker.foreground == nil)
        #expect(reported(&tracker, [.done(handle: 1), .settled(at: 2)]) == ["a"])
        // An app id change of the window in front is a new foreground app.
        #expect(reported(&tracker, [.appID(handle: 1, "a2"), .settled(at: 3)]) == [])
        #expect(reported(&tracker, [.done(handle: 1), .settled(at: 4)]) == ["a2"])
    }

    @Test func closingTheWindowInFrontLeavesNothingOrTheNextActivated() {
        var tracker = ToplevelTracker()
        _ = reported(
            &tracker,
            [
                .created(handle: 1), .appID(handle: 1, "a"), .done(handle: 1),
                .created(handle: 2), .appID(handle: 2, "b"), .activated(handle: 2, true), .done(handle: 2), .settled(at: 1),
            ])
        #expect(
            reported(&tracker, [.closed(handle: 2), .activated(handle: 1, true), .done(handle: 1), .settled(at: 2)]) == ["a"])
        #expect(reported(&tracker, [.closed(handle: 1), .settled(at: 3)]) == ["-"])
        #expect(tracker.count == 0)
    }

    @Test func theLatestActivatedWinsWhenSeveralAreActivated() {
        var tracker = ToplevelTracker()
        let events: [ToplevelTracker.Event] = [
            .created(handle: 1), .appID(handle: 1, "a"), .activated(handle: 1, true), .done(handle: 1),
            .created(handle: 2), .appID(handle: 2, "b"), .activated(handle: 2, true), .done(handle: 2), .settled(at: 1),
        ]
        #expect(reported(&tracker, events) == ["b"])
        #expect(reported(&tracker, [.activated(handle: 2, false), .done(handle: 2), .settled(at: 2)]) == ["a"])
    }

    @Test func eventsForUnknownHandlesAreIgnoredAndTheCountIsBounded() {
        var tracker = ToplevelTracker()
        #expect(
            reported(&tracker, [.appID(handle: 9, "x"), .activated(handle: 9, true), .done(handle: 9), .settled(at: 1)]) == ["-"])
        for handle in 0..<UInt32(ToplevelTracker.maximumToplevels + 10) { _ = tracker.on(.created(handle: handle)) }
        #expect(tracker.count == ToplevelTracker.maximumToplevels)
    }

    @Test func outputPowerIsReportedOnFirstSightAndChangesOnly() {
        var power = OutputPowerTracker()
        #expect(power.on(.mode(output: "HEADLESS-1", 1, at: 5)) == [.outputPower(output: "HEADLESS-1", on: true, at: 5)])
        #expect(power.on(.mode(output: "HEADLESS-1", 1, at: 6)) == [])
        #expect(power.on(.mode(output: "HEADLESS-1", 0, at: 7)) == [.outputPower(output: "HEADLESS-1", on: false, at: 7)])
        #expect(power.on(.mode(output: "HEADLESS-1", 7, at: 8)) == [])  // not a mode of the enum
        _ = power.on(.removed(output: "HEADLESS-1"))
        #expect(power.on(.mode(output: "HEADLESS-1", 0, at: 9)) == [.outputPower(output: "HEADLESS-1", on: false, at: 9)])
    }

    @Test func appIdentifiersAreBoundedUTF8WithoutControls() {
        #expect(AppIdentifier.validated(Array("org.example.App".utf8)) == "org.example.App")
        #expect(AppIdentifier.validated(Array("éditeur".utf8)) == "éditeur")
        #expect(AppIdentifier.validated([0x66, 0xFF, 0x6F]) == nil)
        #expect(AppIdentifier.validated(Array("a\nb".utf8)) == nil)
        #expect(AppIdentifier.validated([UInt8](repeating: 0x61, count: AppIdentifier.maximumBytes)) != nil)
        #expect(AppIdentifier.validated([UInt8](repeating: 0x61, count: AppIdentifier.maximumBytes + 1)) == nil)
    }

    @Test func theStateArrayIsReadAsWholeUInt32s() {
        func activated(_ values: [UInt32]) -> Bool? { values.withUnsafeBytes { ToplevelStates.isActivated($0) } }
        #expect(activated([]) == false)
        #expect(activated([0, 3]) == false)
        #expect(activated([0, 2]) == true)
        let ragged: [UInt8] = [2, 0, 0, 0, 1]
        #expect(ragged.withUnsafeBytes { ToplevelStates.isActivated($0) } == nil)
    }
}
