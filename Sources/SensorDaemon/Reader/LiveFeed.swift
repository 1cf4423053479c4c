import SensorKitModel
import Synchronization

/// The live subscriptions of every connection, fed by the pipeline (`RecordingObserver`) on the
/// sources' threads. A batch of a sensor nobody subscribes to costs one lock and a dictionary
/// look-up; one that has subscribers is encoded once (`LiveEncoding`) and offered to each, whose
/// own bounded buffer decides what happens when it falls behind (`LiveFlow`).
public final class LiveFeed: RecordingObserver, Sendable {
    private struct Key: Hashable {
        var sensor: SRSensor
        var device: String
    }
    private struct State {
        var subscribers: [Key: [ObjectIdentifier: LiveSubscription]] = [:]
        /// One encoder per stream and layout, built at the first batch someone receives.
        var encoders: [Int64: LiveEncoder] = [:]
    }

    private let encoding: any LiveEncoding
    private let state = Mutex(State())

    public init(encoding: any LiveEncoding) { self.encoding = encoding }

    func add(_ subscription: LiveSubscription, sensor: SRSensor, device: String) {
        state.withLock {
            $0.subscribers[Key(sensor: sensor, device: device), default: [:]][ObjectIdentifier(subscription)] = subscription
        }
    }

    func remove(_ subscription: LiveSubscription, sensor: SRSensor, device: String) {
        state.withLock { state in
            let key = Key(sensor: sensor, device: device)
            state.subscribers[key]?[ObjectIdentifier(subscription)] = nil
            if state.subscribers[key]?.isEmpty == true { state.subscribers[key] = nil }
        }
    }

    private func subscribers(of descriptor: SourceDescriptor) -> [LiveSubscription] {
        state.withLock { state in
            state.subscribers[Key(sensor: descriptor.sensor, device: descriptor.device)].map { Array($0.values) } ?? []
        }
    }

    public func recorded(stream: Int64, descriptor: SourceDescriptor, _ batch: SourceBatch) {
        let subscribers = subscribers(of: descriptor)
        guard !subscribers.isEmpty, let layout = BatchLayout.of(descriptor.sensor) else { return }
        let known = state.withLock { $0.encoders[stream] }
        guard let encoder = known ?? encoding.liveEncoder(stream: stream, layout: layout) else { return }
        if known == nil { state.withLock { $0.encoders[stream] = encoder } }
        for frame in encoder.encode(batch) {
            for subscriber in subscribers { subscriber.offer(frame) }
        }
    }

    public func gap(stream: Int64, descriptor: SourceDescriptor, from: BootInstant, to: BootInstant, reason: SRDeletionReason) {
        let subscribers = subscribers(of: descriptor)
        guard !subscribers.isEmpty, let start = encoding.srTime(of: from), let end = encoding.srTime(of: to) else { return }
        let missed = WireMissed(
            sensor: descriptor.sensor.rawValue, device: descriptor.device, from: start, to: end, reason: reason.rawValue)
        for subscriber in subscribers { subscriber.gap(missed) }
    }

    public func stopped(stream: Int64, descriptor: SourceDescriptor, why: String) {
        for subscriber in subscribers(of: descriptor) { subscriber.sourceStopped(why) }
    }
}
