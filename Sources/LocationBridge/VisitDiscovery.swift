import SensorKitModel
import Synchronization

/// The visits driver's discovery: the host's one `visits` source (`VisitRecorder`), fed by the
/// session agents the reader socket admits. The source is added to the registry when an agent
/// first watches location, as hardware is when it appears: a machine where no session agent
/// ever ran lists no visits source.
public final class VisitDiscovery: VisitAgentSink, Sendable {
    public let recorder: VisitRecorder
    private let registry: any SourceRegistry
    private let added = Mutex(false)

    public init(registry: any SourceRegistry, clock: any SystemClock) {
        self.registry = registry
        recorder = VisitRecorder(clock: clock)
    }

    public func feed(_ event: VisitEvent) {
        // Fed first, so a recording the registration starts knows it is watched.
        recorder.feed(event)
        guard case .watching(true, _) = event else { return }
        let first = added.withLock { was in
            defer { was = true }
            return !was
        }
        if first { registry.add(recorder) }
    }

    public func stop() {
        if added.withLock({ $0 }) { registry.remove(source: recorder.descriptor.source) }
    }
}
