import SensorKitModel
import Synchronization

/// The registered streams, readable from any thread (queries, appends) while only the writer
/// adds to it. Small and hot, so it lives in memory behind a `Mutex`.
final class StreamRegistry: Sendable {
    private struct State {
        var byID: [StreamID: StreamDescriptor] = [:]
        var byKey: [String: StreamID] = [:]
    }
    private let state = Mutex(State())

    func add(_ id: StreamID, _ descriptor: StreamDescriptor, key: String) {
        state.withLock {
            $0.byID[id] = descriptor
            $0.byKey[key] = id
        }
    }

    func descriptor(_ id: StreamID) -> StreamDescriptor? { state.withLock { $0.byID[id] } }

    /// Runs `body` on a stream's descriptor inside the lock, without copying it out (the hot
    /// path of `append`); nil for an unknown stream. `body` must be quick.
    func withDescriptor<T: Sendable>(_ id: StreamID, _ body: (borrowing StreamDescriptor) -> T) -> T? {
        state.withLock { state in state.byID[id].map { body($0) } }
    }
    func id(forKey key: String) -> StreamID? { state.withLock { $0.byKey[key] } }

    var all: [RegisteredStream] {
        state.withLock { $0.byID.map { RegisteredStream(id: $0.key, descriptor: $0.value) } }.sorted { $0.id < $1.id }
    }

    /// The streams of one sensor on one device, in id order.
    func streams(sensor: SRSensor, device: String) -> [RegisteredStream] {
        all.filter { $0.descriptor.sensor == sensor && $0.descriptor.device == device }
    }
}
