import Foundation
import LocationBridge
import SensorKitModel
import Testing

@testable import SensorDaemon

/// The `visit` event of the agent's `usage` request (docs/protocol.md §3.7) as hostile input:
/// taken only whole and plausible, stamped with the daemon's clock, never with a field a visit
/// does not have.
@Suite struct VisitHandOverTests {
    static let place = "9B2C7A10-3E4F-8A61-92D3-7F00C1E2A3B4"
    static let good = WireUsageEvent.visit(
        distance: 4_012, ages: [7_200_000, 7_100_000, 600_000, 500_000], category: 2, place: place)

    @Test func aPlausibleVisitIsTakenAtTheDaemonsTime() throws {
        let routed = try #require(UsageAgentDoor.route(Self.good, at: 42))
        guard case .visit(.visit(let visit, let at)) = routed else {
            Issue.record("\(routed)")
            return
        }
        #expect(at == 42 && visit.distance == 4_012 && visit.category == .work)
        #expect(visit.identifier.uuidString == Self.place && visit.ages == [7_200_000, 7_100_000, 600_000, 500_000])
        var unknown = Self.good
        unknown.ages = [-1, 7_100_000, 600_000, 500_000]
        unknown.distance = -1
        #expect(UsageAgentDoor.route(unknown, at: 0) != nil)
        #expect(
            UsageAgentDoor.route(WireUsageEvent(kind: .watching, on: true, source: "location"), at: 7)
                == .visit(.watching(true, at: 7)))
    }

    @Test func anImplausibleVisitIsRefusedWhole() {
        var hostile: [WireUsageEvent] = []
        for ages: [Int64]? in [
            nil, [], [1, 2, 3], [1, 2, 3, 4, 5], [7_100_000, 7_200_000, 600_000, 500_000],
            [7_200_000, 500_000, 600_000, 500_000], [7_200_000, 7_100_000, 600_000, -5], [-2, 7_100_000, 600_000, 500_000],
            [.max, 7_100_000, 600_000, 500_000], [HandedVisit.maximumAge + 1, 1, 1, 1], [-1, -1, -1, -1],
        ] {
            var event = Self.good
            event.ages = ages
            hostile.append(event)
        }
        for distance: Int64? in [nil, -2, .min, 20_037_510, .max] {
            var event = Self.good
            event.distance = distance
            hostile.append(event)
        }
        for place: String? in [nil, "", "not a uuid", Self.place + " ", "{\(Self.place)}", String(Self.place.dropLast())] {
            var event = Self.good
            event.place = place
            hostile.append(event)
        }
        for category: Int? in [nil, -1, 5, .max] {
            var event = Self.good
            event.category = category
            hostile.append(event)
        }
        var withApp = Self.good
        withApp.app = "org.gnome.Maps"
        hostile.append(withApp)
        var withSource = Self.good
        withSource.source = "location"
        hostile.append(withSource)
        hostile.append(WireUsageEvent(kind: .watching, source: "location"))
        for event in hostile { #expect(UsageAgentDoor.route(event, at: 0) == nil, "\(event)") }
    }

    @Test func aTrackersVisitIsHandedOverWithBoundsRoundedOutwards() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let visit = SRVisit(
            distanceFromHome: 1_234.4,
            arrivalDateInterval: DateInterval(start: .distantPast, end: now.addingTimeInterval(-3_600.0004)),
            departureDateInterval: DateInterval(start: now.addingTimeInterval(-60.0006), end: now.addingTimeInterval(-1.9999)),
            locationCategory: .gym, identifier: try #require(UUID(uuidString: Self.place)))
        let handed = try #require(HandedVisit(visit, now: now))
        #expect(handed.ages == [-1, 3_600_000, 60_001, 1_999])
        #expect(handed.distance == 1_234 && handed.category == .gym)
        let old = SRVisit(
            distanceFromHome: 0, arrivalDateInterval: DateInterval(start: now.addingTimeInterval(-9 * 86_400), duration: 1),
            departureDateInterval: DateInterval(start: now.addingTimeInterval(-2), duration: 1), locationCategory: .home,
            identifier: visit.identifier)
        #expect(HandedVisit(old, now: now) == nil)
    }
}
