import Foundation
import SensorDaemon
import SensorKitModel
import SensorSystem
import SensorTestKit
import Testing

/// The daemon's side of the bound on how far a new boot may move the timeline
/// (docs/design-notes/0005-clock-steps.md §1): a boot held back says so in one error line naming
/// the command, and the file `sensorkitctl time --confirm-clock` leaves lets the next boot be
/// anchored by its clock, once.
@Suite struct TimelineKeeperTests {
    @Test func aBootPastTheBoundIsLoggedAndAConfirmationAnchorsTheNextBoot() throws {
        let folder = NSTemporaryDirectory() + "timeline-keeper-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let clock = FakeClock()
        clock.synchronize()
        let first = try TimelineKeeper(stateDirectory: folder, clock: clock, journal: .discard)
        clock.advance(nanoseconds: 3_600_000_000_000)
        first.advance(to: clock.now())
        first.saveOrLog()

        clock.stepWallClock(nanoseconds: 3 * 86_400_000_000_000)
        clock.reboot()
        clock.synchronize()
        let (journal, lines) = Journal.memory()
        let held = try TimelineKeeper(stateDirectory: folder, clock: clock, journal: journal)
        #expect(held.current.currentBootIsUnproven)
        #expect(
            lines().count == 1 && lines()[0].hasPrefix("<3>") && lines()[0].contains("sensorkitctl time --confirm-clock"),
            "\(lines())")

        // Confirmed during that boot: the next boot is anchored by the clock and the file is used up.
        let confirmation = folder + "/" + TimelineFile.confirmationFileName
        try SystemFiles.writeAtomically(confirmation, contents: Array("confirmed\n".utf8))
        held.advance(to: clock.now())
        held.saveOrLog()
        clock.reboot()
        clock.synchronize()
        let anchored = try TimelineKeeper(stateDirectory: folder, clock: clock, journal: .discard)
        #expect(!anchored.current.currentBootIsUnproven)
        #expect(anchored.current.now(clock)!.nanoseconds! == clock.realtimeCFNanoseconds() - anchored.current.origin)
        #expect(!FileManager.default.fileExists(atPath: confirmation))
    }
}
