import Foundation
import LocationBridge
import ModemBridge
import SensorExport
import SensorKitModel
import SensorSimulation
import SensorSystem
import Testing

/// sensorkit-export for the families the session agent and ModemManager feed: visits, phone and
/// messages usage land in their tables once, with the values a direct fetch gives (docs/export.md).
/// The real recorders are fed what the agent and ModemManager's watcher would hand them.
@Suite(.serialized) struct ExportSessionFamiliesTests {
    static let second: Int64 = 1_000_000_000

    @Test(.timeLimit(.minutes(3)))
    func visitsPhoneAndMessagesRowsLandOnceWithTheFetchedValues() throws {
        let clock = LinuxSystemClock()
        let visits = VisitRecorder(clock: clock)
        // One-second reports, so a few close within the test. No broker listens at the address:
        // the watcher finds no ModemManager, and the test says what it would have reported.
        let settings = ModemSettings(intervalNanoseconds: Self.second)
        let modem = ModemUsageRecorder(
            bus: .address("unix:path=/nonexistent/sensorkit-export-modem"), settings: settings, clock: clock, log: { _ in })
        let sensors: [SRSensor] = [.visits, .phoneUsageReport, .messagesUsageReport]
        let rig = try ExportRig(
            sources: [visits] + ModemUsageKind.allCases.map { ModemUsageSource($0, recorder: modem, settings: settings) },
            entitlements: ["visits", "phone-usage", "messages-usage"], sensors: sensors, config: "[modem]\n")
        defer { rig.close() }

        // The first pass takes the app's stakes: recording starts.
        let first = try rig.exportOnce()
        #expect(first.status == 0, "\(first.output)")
        visits.feed(.watching(true, at: clock.boottimeNanoseconds()))
        let places = [UUID(), UUID(), UUID()]
        for (index, place) in places.enumerated() {
            let visit = try #require(
                HandedVisit(
                    distance: Int64(1_000 * (index + 1)), ages: [600_000, 540_000, 60_000, 0],
                    category: [.home, .work, .gym][index], identifier: place))
            visits.feed(.visit(visit, at: clock.boottimeNanoseconds()))
        }
        modem.observe(.observable(true))
        modem.observe(.message(.incoming, number: "+15550100"))
        modem.observe(.callState("/org/freedesktop/ModemManager1/Call/1", .terminated))
        visits.queue.sync {}
        modem.queue.sync {}
        // Reports close each second; the hold is one second.
        usleep(3_500_000)

        let second = try rig.exportOnce()
        #expect(second.status == 0, "\(second.output)")
        for sensor in sensors {
            let layout = try #require(BatchLayout.of(sensor))
            let family = try #require(ExportFamily.of(layout))
            let cursor = try #require(try rig.cursor(sensor.rawValue), "\(sensor.rawValue): no cursor\n\(second.output)")
            let expected = try rig.directValues(sensor, through: cursor)
            let exported = try rig.databaseValues(family)
            #expect(!expected.isEmpty, "\(sensor.rawValue): nothing recorded")
            #expect(ExportRig.difference(exported, expected) == nil, "\(family.table)")
        }
        // The visits, once each, with their place's identifier words.
        let rows = try rig.databaseValues(try #require(ExportFamily.of(.visits)))
        #expect(rows.count == places.count)
        #expect(rows.map { VisitsFamily.identifier(Array($0[8...11])) } == places)
        #expect(rows.map { $0[2] } == [1_000, 2_000, 3_000])
    }
}
