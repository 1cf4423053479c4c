import Foundation
import SensorKitModel
import SensorSystem
import Synchronization

/// The daemon's one timeline (docs/design-notes/0001-time.md): loaded from or founded in the
/// state directory, the current boot adopted at start, the high-water mark advanced every ten
/// seconds and saved every minute (and at a clean stop), a copy published beside the socket for
/// clients.
public final class TimelineKeeper: Sendable {
    private let state: Mutex<Timeline>
    private let path: String
    private let publishedPath = Mutex<String?>(nil)
    private let journal: Journal

    public init(stateDirectory: String, clock: any SystemClock, journal: Journal) throws {
        self.journal = journal
        path = stateDirectory + "/" + TimelineFile.fileName
        var timeline: Timeline
        if let loaded = try TimelineFile.load(path) {
            timeline = loaded
        } else {
            timeline = Timeline.founded(by: clock)
            journal.notice("founded a new SR timeline at origin \(timeline.origin) (CF ns)")
        }
        // A person confirmed the wall clock (sensorkitctl time --confirm-clock): the next boot it
        // anchors may move the timeline past the bound, once.
        let confirmation = stateDirectory + "/" + TimelineFile.confirmationFileName
        let confirmed = SystemFiles.readTrimmed(confirmation) != nil
        let adoption = timeline.adoptCurrentBoot(of: clock, confirmed: confirmed)
        switch adoption {
        case .kept:
            if confirmed {
                journal.notice(
                    "the wall clock was confirmed (\(confirmation)); boot \(clock.bootID) keeps its anchor (stored times depend on it), the next boot is anchored by the clock"
                )
            }
        case .anchored(let anchor):
            journal.info("boot \(clock.bootID) anchored at SR \(anchor) ns")
            if confirmed {
                try? FileManager.default.removeItem(atPath: confirmation)
                journal.notice("the wall clock was confirmed (\(confirmation)): boot \(clock.bootID) anchored by it")
            }
        case .raised(let anchor, let raisedBy):
            journal.warning(
                "the wall clock is behind the recorded timeline; boot \(clock.bootID) anchored \(raisedBy) ns later than the wall clock says (SR \(anchor) ns) so time never runs backwards"
            )
        case .unproven(let anchor, let unprovenBy):
            journal.warning(
                "the wall clock is not synchronised (adjtimex); boot \(clock.bootID) starts right after recorded time (SR \(anchor) ns), not \(unprovenBy) ns later as the wall clock says, so no held data is released on its word (docs/design-notes/0005-clock-steps.md)"
            )
        case .unconfirmed(let anchor, let claimed):
            journal.error(
                "the synchronised wall clock says \(Self.hours(claimed)) passed since the last recorded time, more than the \(Self.hours(Timeline.maxUnconfirmedAdvance)) a new boot may move the timeline without a person confirming; boot \(clock.bootID) starts right after recorded time (SR \(anchor) ns), so no held data is released on the clock's word. If the clock is right: sensorkitctl time --confirm-clock (from the next boot; docs/design-notes/0005-clock-steps.md)"
            )
        }
        state = Mutex(timeline)
        try TimelineFile.save(timeline, to: path)
    }

    public var current: Timeline { state.withLock { $0 } }

    static func hours(_ nanoseconds: Int64) -> String {
        let tenths = nanoseconds / 360_000_000_000
        return "\(tenths / 10).\(tenths % 10) h"
    }

    /// SR nanoseconds of a boot instant (nil for a boot this timeline never adopted).
    public func srNanoseconds(of instant: BootInstant) -> Int64? {
        state.withLock { $0.srNanoseconds(of: instant) }
    }

    public func advance(to instant: BootInstant) {
        state.withLock { timeline in
            if let sr = timeline.srNanoseconds(of: instant) { timeline.advanceHighWater(to: sr) }
        }
    }

    /// Writes the timeline; logs instead of throwing, for timers. The published copy is not
    /// rewritten: clients read only its anchors, and a boot's anchor never changes.
    public func saveOrLog() {
        let timeline = current
        do {
            try TimelineFile.save(timeline, to: path)
        } catch {
            journal.error("could not save the timeline: \(error)")
        }
    }

    /// Publishes a world-readable copy beside the socket, for `SRAbsoluteTime.current()` in clients.
    public func publish(besideSocket socket: String) throws {
        let folder = (socket as NSString).deletingLastPathComponent
        let published = (folder.isEmpty ? "." : folder) + "/" + TimelineFile.fileName
        publishedPath.withLock { $0 = published }
        try TimelineFile.save(current, to: published, mode: 0o644)
    }
}
