import Foundation
import LocationBridge
import SensorKitModel
import SensorTestKit
import Testing

/// The place book kept across a restart (docs/visits.md, "The place book"): identifiers and home
/// carry over through `PlaceBookText`, and a damaged book costs only its bad lines.
extension VisitTrackerTests {
    @Test func aRestartedTrackerKeepsItsPlacesAndHome() throws {
        let day = ScriptedDay()
        let whole = Self.run(day)
        try #require(whole.count == 4)

        // The first run ends right after its first visit (home, after a night there)...
        var first = VisitTracker(key: Self.key, labels: ScriptedDay.labels)
        let cut = try #require(day.fixes.firstIndex { first.add($0) != nil })
        let kept = PlaceBookText.encode(first.places)
        // ...and the next one starts from the book it kept.
        let (places, skipped) = PlaceBookText.decode(kept)
        #expect(skipped == 0 && places.count == 1)
        var restarted = VisitTracker(key: Self.key, labels: ScriptedDay.labels, places: places)
        let rest = day.fixes[(cut + 1)...].compactMap { restarted.add($0) }
        try #require(rest.count == 3, "\(rest.map(\.locationCategory))")
        #expect(rest.map(\.identifier) == whole[1...].map(\.identifier))
        #expect(rest.map(\.locationCategory) == [.work, .gym, .home])
        #expect(rest.map(\.distanceFromHome) == whole[1...].map(\.distanceFromHome))
        #expect(rest.allSatisfy { $0.distanceFromHome != VisitTracker.unknownDistance })

        // Without the book, home is unknown until another night: what keeping it buys.
        var forgetful = VisitTracker(key: Self.key, labels: ScriptedDay.labels)
        let unkept = day.fixes[(cut + 1)...].compactMap { forgetful.add($0) }
        #expect(unkept.first?.distanceFromHome == VisitTracker.unknownDistance)
    }

    @Test func aDamagedPlaceBookLosesOnlyItsBadLines() throws {
        let place = PlaceBook.Place(
            latitude: 52.52, longitude: 13.405, identifier: UUID(uuidString: "6F1E0D2C-3B4A-8596-A7B8-C9DAEBFC0D1E")!,
            nightNanoseconds: 7_200_000_000_000)
        let good = PlaceBookText.encode([place])
        let (back, none) = PlaceBookText.decode(good)
        #expect(none == 0 && back.count == 1)
        let read = try #require(back.first)
        #expect(read.latitude == place.latitude && read.longitude == place.longitude)
        #expect(read.identifier == place.identifier && read.nightNanoseconds == place.nightNanoseconds)
        let hostile = [
            "not-a-uuid 52.52 13.405 0", "\(place.identifier.uuidString) 91 13.405 0",
            "\(place.identifier.uuidString) nan 13.405 0", "\(place.identifier.uuidString) 52.52 13.405 -5",
            "\(place.identifier.uuidString) 52.52 13.405", String(repeating: "x", count: 5_000),
        ]
        let (survivors, skipped) = PlaceBookText.decode(good + hostile.joined(separator: "\n"))
        #expect(survivors.count == 1 && skipped == hostile.count)
        // A book longer than the tracker keeps is cut at its bound.
        let many = String(repeating: good.split(separator: "\n")[1] + "\n", count: PlaceBook.maximumPlaces + 10)
        #expect(PlaceBookText.decode(many).places.count == PlaceBook.maximumPlaces)
        // The same identifier twice names one place.
        #expect(PlaceBook(key: Self.key, places: [place, place]).places.count == 1)
    }

    @Test func placeLabelsAreParsedAndABadLineIsReportedByNumberWithoutItsText() {
        let text = """
            # the study's places
            home 52.52,13.405
            work 52.5201,13.4638,200   # the office

            gym 52.5336,13.4638,99999
            school 91,13.4
            shop 52.5,13.4
            work 52.5;13.4
            \(String(repeating: "9", count: 300))
            GYM\t52.5336,13.4638
            """
        let (labels, problems) = PlaceLabelList.parse(text)
        #expect(labels.map(\.category) == [.home, .work, .gym])
        #expect(labels.map(\.radius) == [150, 200, 150])
        #expect(problems.map(\.line) == [5, 6, 7, 8, 9])
        for problem in problems {
            for coordinate in ["52.5", "13.4", "91", "99999"] {
                #expect(!problem.description.contains(coordinate), "\(problem)")
            }
        }
        let crowded = String(repeating: "gym 1,1\n", count: PlaceLabelList.maximumLabels + 3)
        let (kept, over) = PlaceLabelList.parse(crowded)
        #expect(kept.count == PlaceLabelList.maximumLabels && over.count == 3)
    }
}
