import Foundation
import SensorKitModel
import Testing

/// Layout 14 on fixed inputs: stored rows through the family's linear mapping into a batch, and
/// the batch into `SRVisit`s — identifiers exact, an unknown arrival `Date.distantPast`, and a
/// damaged store's values never a trap.
@Suite struct VisitsFamilyTests {
    static let columns = VisitsFamily.Stored.allCases.map {
        ($0.rawValue, SensorFamilyTests.counts(scale: VisitsFamily.scale($0)))
    }

    @Test func storedVisitsComeBackAsTheVisitsHandedOver() throws {
        let identifiers = [
            try #require(UUID(uuidString: "FFFFFFFF-FFFF-8FFF-BFFF-FFFFFFFFFFFF")),
            try #require(UUID(uuidString: "00000000-0000-8000-8000-000000000001")),
            try #require(UUID(uuidString: "9B2C7A10-3E4F-8A61-92D3-7F00C1E2A3B4")),
        ]
        let words = identifiers.map(VisitsFamily.words)
        var stored: [[Int64]] = [
            [-1, 0, 20_037_509],
            [VisitsFamily.unknownBound, 7_200_000, 691_200_000],
            [3_600_000, 7_199_999, 1_000],
            [1_800_000, 60_000, 999],
            [1_000, 1, 0],
            [1, 4, 0],
        ]
        for word in 0..<4 { stored.append(words.map { $0[word] }) }
        let batch = try SensorFamilyTests().map(.visits, sensor: .visits, columns: Self.columns, stored: stored)
        var results = SensorFamilyTests.Collected()
        let cf = 800_000_000.0
        SensorFamilies.results(batch, sensor: .visits, dates: SampleDates(cfOffset: cf, anchor: 0), into: &results)
        let visits = try #require(results.each as? [SRVisit])
        #expect(visits.map(\.identifier) == identifiers)
        #expect(visits.map(\.distanceFromHome) == [-1, 0, 20_037_509])
        #expect(visits.map(\.locationCategory) == [.home, .gym, .unknown])
        // Sensor times are 0, 1 and 2 ns: each bound is its age before.
        func at(_ seconds: Double, _ sample: Int) -> Date {
            Date(timeIntervalSinceReferenceDate: cf + Double(sample) / 1e9 - seconds)
        }
        #expect(visits[0].arrivalDateInterval == DateInterval(start: .distantPast, end: at(3_600, 0)))
        #expect(visits[0].departureDateInterval == DateInterval(start: at(1_800, 0), end: at(1, 0)))
        #expect(visits[1].arrivalDateInterval == DateInterval(start: at(7_200, 1), end: at(7_199.999, 1)))
        #expect(visits[1].departureDateInterval == DateInterval(start: at(60, 1), end: at(0.001, 1)))
    }

    @Test func aDamagedStoreNeverTraps() throws {
        var results = SensorFamilyTests.Collected()
        let hostile: [Double] = [.nan, -.infinity, 1e300]
        let batch = SampleBatchFrame(
            requestID: 1, layout: .visits, sensorTimes: [.min, 0, .max], writeTimes: [0, 0, 0],
            columns: Array(repeating: hostile, count: BatchLayout.visits.columns.count))
        SensorFamilies.results(batch, sensor: .visits, dates: SampleDates(cfOffset: .nan, anchor: nil), into: &results)
        let visits = try #require(results.each as? [SRVisit])
        #expect(visits.count == 3 && visits.allSatisfy { $0.distanceFromHome == -1 && $0.locationCategory == .unknown })
        #expect(visits.allSatisfy { $0.identifier == UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) })
    }
}
