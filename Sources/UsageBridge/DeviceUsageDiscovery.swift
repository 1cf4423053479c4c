import SensorKitModel
import SensorSystem
import Synchronization
import SystemBus

/// The device-usage driver's discovery: the host's one `deviceUsageReport` source
/// (`UsageRecorder`), fed by logind (`LogindWatcher`) and by the session agents the reader
/// socket admits (`UsageAgentSink`). The source is added to the registry when something first
/// watches the session — logind's active session, or an agent — as hardware is when it appears:
/// a machine without a session (a lab rig, a container) lists no device-usage source.
public final class DeviceUsageDiscovery: UsageAgentSink, Sendable {
    public let recorder: UsageRecorder
    private let logind: LogindWatcher
    private let registry: any SourceRegistry
    private let registration: Registration

    /// Adds the source to `registry` and starts watching logind on `bus` (nil: not at all);
    /// `typing` are the keyboards whose typing episodes count as text-input sessions; a report
    /// spans `intervalNanoseconds`.
    public init(
        registry: any SourceRegistry, bus: DBusBus?, clock: any SystemClock, scheduler: any Scheduler, journal: Journal,
        typing: (any TypingEpisodeFeed)? = nil, intervalNanoseconds: Int64 = UsageSamples.intervalNanoseconds
    ) {
        self.registry = registry
        let recorder = UsageRecorder(
            clock: clock, scheduler: scheduler, typing: typing, intervalNanoseconds: intervalNanoseconds)
        self.recorder = recorder
        let registration = Registration(recorder: recorder, registry: registry)
        self.registration = registration
        logind = LogindWatcher(clock: clock, scheduler: scheduler, journal: journal) { registration.feed($0) }
        // Without the bus now, logind is watched from when it can be reached; the agent's events count meanwhile.
        if let bus { logind.start(bus: bus) }
    }

    public var activeUser: UInt32? { logind.activeUser }

    public func feed(_ event: UsageEvent) { registration.feed(event) }

    public func stop() {
        logind.stop()
        if registration.added.withLock({ $0 }) { registry.remove(source: recorder.descriptor.source) }
    }

    /// Feeds the recorder and adds it to the registry at the first source that watches.
    final class Registration: Sendable {
        let recorder: UsageRecorder
        let registry: any SourceRegistry
        let added = Mutex(false)

        init(recorder: UsageRecorder, registry: any SourceRegistry) {
            self.recorder = recorder
            self.registry = registry
        }

        func feed(_ event: UsageEvent) {
            // Fed first, so a recording the registration starts begins with what is watched.
            recorder.feed(event)
            guard case .watching(_, true, _) = event else { return }
            let first = added.withLock { was in
                defer { was = true }
                return !was
            }
            if first { registry.add(recorder) }
        }
    }
}
