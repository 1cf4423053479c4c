import SensorKitModel

/// Where recorded samples go (the store). Calls never block on disk: the store queues writes.
public protocol RecordingSink: Sendable {
    /// The store's stream for a source (the same descriptor always maps to the same stream).
    func openStream(_ descriptor: SourceDescriptor) throws -> Int64
    func append(stream: Int64, _ batch: SourceBatch)
    /// Runs `body`, whose appends are one hand-over (`SourceRegistry.handingOver`).
    func handingOver(_ body: () -> Void)
    func recordGap(stream: Int64, from: BootInstant, to: BootInstant, reason: SRDeletionReason)
    /// The stream stopped recording on purpose (no stakes): a crash from now on loses nothing of it.
    func recordingStopped(stream: Int64)
    /// Where a source may mirror the samples of `stream` it holds (`SampleStaging`), with room for
    /// `capacity`; nil when the sink keeps none.
    func staging(stream: Int64, capacity: Int) -> (any SampleStaging)?
}

extension RecordingSink {
    public func handingOver(_ body: () -> Void) { body() }
    public func staging(stream: Int64, capacity: Int) -> (any SampleStaging)? { nil }
}
