import Foundation
import LocationBridge
import SensorKitModel
import SensorTestKit
import Testing

/// Stay points, places, home and categories from fixes: the scripted day comes back as exactly
/// its visits, each time interval bounding the true time, and nothing the tracker emits holds a
/// coordinate.
@Suite struct VisitTrackerTests {
    static let key = PlaceKey(k0: 0x1234, k1: 0x5678)
    static let minute = ScriptedDay.minute

    static func run(_ day: ScriptedDay, key: PlaceKey = key) -> [SRVisit] {
        var tracker = VisitTracker(key: key, labels: ScriptedDay.labels)
        return day.fixes.compactMap { tracker.add($0) }
    }

    static func ns(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1e9).rounded()) }

    @Test func theScriptedDayBecomesExactlyItsVisits() throws {
        let day = ScriptedDay()
        let visits = Self.run(day)
        try #require(visits.count == day.truths.count, "\(visits.map(\.locationCategory))")
        #expect(visits.map(\.locationCategory) == [.home, .work, .gym, .home])
        // One identifier per place, the same for both stays at home.
        #expect(visits[0].identifier == visits[3].identifier)
        #expect(Set(visits.map(\.identifier)).count == 3)
        // Distances from home: 0, the 4 km to work, the 4.27 km to the gym (the fixes' noise moves
        // the centroids by metres).
        let expected = [
            0, ScriptedDay.distance(ScriptedDay.home, ScriptedDay.work),
            ScriptedDay.distance(ScriptedDay.home, ScriptedDay.gym), 0,
        ]
        for (visit, distance) in zip(visits, expected) {
            #expect(abs(visit.distanceFromHome - distance) < 15, "\(visit.distanceFromHome)")
        }
        for (visit, truth) in zip(visits, day.truths) {
            if let arrival = truth.arrival {
                #expect(
                    Self.ns(visit.arrivalDateInterval.start) <= arrival && arrival <= Self.ns(visit.arrivalDateInterval.end),
                    "\(truth.place) arrival")
                // As tight as the fixes allow: the last one before and the first one after.
                #expect(visit.arrivalDateInterval.duration <= 10 * 60)
            } else {
                #expect(visit.arrivalDateInterval.start == .distantPast, "nothing observed the first arrival")
            }
            let departure = visit.departureDateInterval
            #expect(
                Self.ns(departure.start) <= truth.departure && truth.departure <= Self.ns(departure.end),
                "\(truth.place) departure")
            #expect(departure.duration <= 10 * 60)
        }
        // The gap at work (12:00 to 13:30) stays inside one visit: no departure invented.
        #expect(Self.ns(visits[1].departureDateInterval.start) == ScriptedDay.at(17, 0))
    }

    @Test func identifiersAreStableUnderTheKeyAndUnrelatedUnderAnother() {
        let day = ScriptedDay()
        #expect(Self.run(day).map(\.identifier) == Self.run(day).map(\.identifier))
        let other = Self.run(day, key: PlaceKey(k0: 1, k1: 2)).map(\.identifier)
        #expect(Set(other).isDisjoint(with: Self.run(day).map(\.identifier)))
        #expect(Self.run(day).allSatisfy { $0.identifier.uuidString.dropFirst(14).first == "8" }, "version 8 UUIDs")
    }

    @Test func withoutANightSomewhereHomeIsUnknownUnlessLabelled() {
        let noon = ScriptedDay.at(12, 0)
        var fixes: [LocationFix] = []
        for n in 0..<12 {
            fixes.append(LocationFix(latitude: 48.85, longitude: 2.35, accuracy: 10, time: noon + Int64(n) * 5 * Self.minute))
        }
        for n in 0..<3 {
            fixes.append(
                LocationFix(latitude: 48.86, longitude: 2.35, accuracy: 10, time: noon + Int64(60 + n) * 5 * Self.minute))
        }
        var tracker = VisitTracker(key: Self.key)
        let visits = fixes.compactMap { tracker.add($0) }
        #expect(visits.map(\.distanceFromHome) == [VisitTracker.unknownDistance])
        #expect(visits.map(\.locationCategory) == [.unknown])
        var labelled = VisitTracker(key: Self.key, labels: [PlaceLabel(.home, latitude: 48.86, longitude: 2.35)])
        let known = fixes.compactMap { labelled.add($0) }
        #expect(known.map(\.distanceFromHome).first.map { abs($0 - 1112) < 5 } == true, "\(known.map(\.distanceFromHome))")
    }

    @Test func hostileFixesAreIgnored() {
        var detector = StayPointDetector()
        let t = ScriptedDay.midnight
        let bad = [
            LocationFix(latitude: .nan, longitude: 0, accuracy: 5, time: t),
            LocationFix(latitude: 91, longitude: 0, accuracy: 5, time: t),
            LocationFix(latitude: 0, longitude: .infinity, accuracy: 5, time: t),
            LocationFix(latitude: 0, longitude: 0, accuracy: -1, time: t),
        ]
        for fix in bad { #expect(detector.add(fix) == nil) }
        // Out of order and repeated times are dropped; the first stay still ends where it should.
        #expect(detector.add(LocationFix(latitude: 1, longitude: 1, accuracy: 5, time: t)) == nil)
        #expect(detector.add(LocationFix(latitude: 1, longitude: 1, accuracy: 5, time: t)) == nil)
        #expect(detector.add(LocationFix(latitude: 1, longitude: 1, accuracy: 5, time: t + 20 * Self.minute)) == nil)
        #expect(detector.add(LocationFix(latitude: 5, longitude: 5, accuracy: 5, time: t + 10 * Self.minute)) == nil)
        #expect(detector.add(LocationFix(latitude: 2, longitude: 2, accuracy: 5, time: t + 21 * Self.minute)) == nil)
        let stay = detector.add(LocationFix(latitude: 2, longitude: 2, accuracy: 5, time: t + 22 * Self.minute))
        #expect(stay?.departure == (t + 20 * Self.minute)...(t + 21 * Self.minute))
        #expect(
            VisitTracker.nightOverlap(from: ScriptedDay.at(22, 0), to: ScriptedDay.at(24 + 7, 0), utcOffsetSeconds: 0) == 6 * 60
                * Self.minute)
    }

    /// Everything the tracker hands out, as text and as bytes, holds no coordinate of a fix: not
    /// the degrees in any printed precision, not their bit patterns.
    @Test func noCoordinateLeavesTheTracker() {
        let day = ScriptedDay()
        let visits = Self.run(day)
        var emitted: [UInt8] = []
        for visit in visits {
            let text =
                "\(visit) \(visit.distanceFromHome) \(visit.arrivalDateInterval) \(visit.departureDateInterval) \(visit.identifier) \(visit.locationCategory)"
            emitted += Array(text.utf8)
            for value in [
                visit.distanceFromHome, visit.arrivalDateInterval.start.timeIntervalSince1970,
                visit.departureDateInterval.end.timeIntervalSince1970,
            ] {
                withUnsafeBytes(of: value.bitPattern) { emitted += $0 }
            }
            withUnsafeBytes(of: visit.identifier.uuid) { emitted += $0 }
        }
        var needles: [(String, [UInt8])] = []
        for place in [ScriptedDay.home, ScriptedDay.work, ScriptedDay.gym] {
            for value in [place.latitude, place.longitude] {
                needles.append(("\(value)", Array(String(format: "%.3f", value).utf8)))
                needles.append(("\(value) ×1e6", Array(String(Int(value * 1e6)).utf8)))
                withUnsafeBytes(of: value.bitPattern) { needles.append(("\(value) bits", Array($0))) }
                withUnsafeBytes(of: Float(value).bitPattern) { needles.append(("\(value) float bits", Array($0))) }
            }
        }
        for fix in day.fixes.prefix(50) {
            withUnsafeBytes(of: fix.latitude.bitPattern) { needles.append(("fix latitude bits", Array($0))) }
            needles.append(("fix latitude", Array("\(fix.latitude)".utf8)))
        }
        for (what, needle) in needles where Self.contains(emitted, needle) { Issue.record("the visits hold \(what)") }
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
