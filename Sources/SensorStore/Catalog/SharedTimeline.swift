import SensorKitModel
import Synchronization

/// The timeline, shared by the writer (boot anchors for appends) and queries ("now"). The daemon
/// may hand the store a newer timeline (`SensorStore.updateTimeline`).
final class SharedTimeline: Sendable {
    private let timeline: Mutex<Timeline>
    init(_ timeline: Timeline) { self.timeline = Mutex(timeline) }

    func withLock<T: Sendable>(_ body: (inout Timeline) -> T) -> T {
        timeline.withLock { body(&$0) }
    }
}
