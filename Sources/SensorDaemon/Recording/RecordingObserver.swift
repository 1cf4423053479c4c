import SensorKitModel

/// Hears what the pipeline records as it is handed to the sink (the live subscriptions,
/// `LiveFeed`). Called on the source's thread, in order per stream, inside the pipeline's hand-over
/// lock, so nothing arrives after `stopped`: it must return quickly and never block.
public protocol RecordingObserver: Sendable {
    func recorded(stream: Int64, descriptor: SourceDescriptor, _ batch: SourceBatch)
    func gap(stream: Int64, descriptor: SourceDescriptor, from: BootInstant, to: BootInstant, reason: SRDeletionReason)
    /// The stream stopped recording (`why` is for the subscriber).
    func stopped(stream: Int64, descriptor: SourceDescriptor, why: String)
}
