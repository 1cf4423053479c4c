import SensorKitModel

/// One usage stream (`phoneUsageReport` or `messagesUsageReport`) as a `SensorSource`: recording
/// starts and stops its interval accounting in the shared `ModemUsageRecorder`.
public final class ModemUsageSource: SensorSource, Sendable {
    public let descriptor: SourceDescriptor
    public let usage: ModemUsageKind
    private let recorder: ModemUsageRecorder

    public init(_ usage: ModemUsageKind, recorder: ModemUsageRecorder, settings: ModemSettings) {
        self.usage = usage
        self.recorder = recorder
        descriptor = ModemUsageSamples.descriptor(usage, settings: settings)
    }

    public func setRecording(_ recording: Bool, deliver: @escaping @Sendable (SourceEvent) -> Void) {
        if recording { recorder.start(usage, descriptor: descriptor, deliver: deliver) } else { recorder.stop(usage) }
    }

    public func close() { recorder.stop(usage) }

    public var status: [String: String] { ["source": "ModemManager over the system bus"] }
}

/// The modem driver's discovery: both usage streams exist from the start (ModemManager and its
/// modems are followed while one records; an interval without any is a deletion record).
public final class ModemDiscovery: Sendable {
    private let registry: any SourceRegistry
    private let sources: [ModemUsageSource]

    public init(registry: any SourceRegistry, recorder: ModemUsageRecorder, settings: ModemSettings) {
        self.registry = registry
        sources = ModemUsageKind.allCases.map { ModemUsageSource($0, recorder: recorder, settings: settings) }
        for source in sources { registry.add(source) }
    }

    public func stop() {
        for source in sources { registry.remove(source: source.descriptor.source) }
    }
}
