import Foundation
import SensorKitModel
import Synchronization

/// One batch of fetched samples as typed columns, in SensorKit's units (docs/protocol.md §5.2):
/// the fast path for analysis code that wants arrays, not one object per sample.
public struct SRSampleBatch: Sendable {
    public let sensor: SRSensor
    public let layout: BatchLayout
    /// Sensor times (SR ns), one per sample.
    public let sensorTimes: [Int64]
    /// When the daemon received each sample (SR ns).
    public let receiveTimes: [Int64]
    /// The layout's columns by name (`x`, `y`, `z` for motion; `lux`, … — `layout.columns`).
    public let columns: [String: [Double]]
    /// Per-sample lists, flattened (RR intervals for heart rate).
    public let ragged: [Double]

    init(sensor: SRSensor, frame: SampleBatchFrame) {
        self.sensor = sensor
        layout = frame.layout
        sensorTimes = frame.sensorTimes
        receiveTimes = frame.writeTimes
        columns = Dictionary(uniqueKeysWithValues: zip(frame.layout.columns, frame.columns))
        ragged = frame.ragged
    }

    public var count: Int { sensorTimes.count }

    /// Accelerations (g) or rotation rates (rad/s) of a motion batch.
    public var vectors: [(x: Double, y: Double, z: Double)] {
        guard let x = columns["x"], let y = columns["y"], let z = columns["z"] else { return [] }
        return (0..<count).map { (x[$0], y[$0], z[$0]) }
    }
}

/// An async sequence of a fetch's batches with flow control: each batch is acknowledged when the
/// consumer takes it, so a slow consumer slows the daemon's reading, never its memory. Breaking
/// out of the loop (or cancelling the task) cancels the fetch.
public struct SRFetchBatches: AsyncSequence, Sendable {
    public typealias Element = SRSampleBatch

    let sensor: SRSensor
    let request: WireRequest
    let window: Int

    public func makeAsyncIterator() -> Iterator { Iterator(sensor: sensor, request: request, window: window) }

    public final class Iterator: AsyncIteratorProtocol, @unchecked Sendable {
        // @unchecked: mutable state lives in `state` (a Mutex); `connection` is Sendable.
        private struct State {
            var buffer: [SampleBatchFrame] = []
            var final: WireReply?
            var waiter: CheckedContinuation<SampleBatchFrame?, any Error>?
            var requestID: UInt32 = 0
            var done = false
        }
        /// The state shared with the connection's read queue.
        private final class Shared: Sendable {
            let state = Mutex(State())
        }
        private let shared = Shared()
        private let sensor: SRSensor
        private var connection: ReaderConnection?
        private var startError: (any Error)?

        init(sensor: SRSensor, request: WireRequest, window: Int) {
            self.sensor = sensor
            do {
                let connection = try ReaderSession.connection()
                self.connection = connection
                let shared = self.shared
                let id = connection.send({
                    $0.sensor = request.sensor
                    $0.device = request.device
                    $0.from = request.from
                    $0.to = request.to
                    $0.window = window
                }, op: .fetch) { incoming in
                    let waiter = shared.state.withLock { state -> CheckedContinuation<SampleBatchFrame?, any Error>? in
                        switch incoming {
                        case .batch(let batch):
                            if let waiter = state.waiter {
                                state.waiter = nil
                                waiter.resume(returning: batch)
                                return nil
                            }
                            state.buffer.append(batch)
                        case .reply(let reply):
                            state.final = reply
                            defer { state.waiter = nil }
                            return state.waiter
                        }
                        return nil
                    }
                    if case .reply(let reply) = incoming, let waiter {
                        if let error = reply.error { waiter.resume(throwing: error.srError) } else { waiter.resume(returning: nil) }
                    }
                }
                shared.state.withLock { $0.requestID = id }
            } catch {
                startError = error
            }
        }

        deinit {
            let (id, done) = shared.state.withLock { ($0.requestID, $0.done || $0.final != nil) }
            if !done { connection?.notify(.cancel, target: id) }
        }

        public func next() async throws -> SRSampleBatch? {
            if let startError { throw startError }
            guard let connection else { return nil }
            let frame: SampleBatchFrame? = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    let ready = shared.state.withLock { state -> Result<SampleBatchFrame?, any Error>? in
                        if !state.buffer.isEmpty { return .success(state.buffer.removeFirst()) }
                        if let final = state.final {
                            state.done = true
                            return final.error.map { .failure($0.srError) } ?? .success(nil)
                        }
                        state.waiter = continuation
                        return nil
                    }
                    if let ready { continuation.resume(with: ready) }
                }
            } onCancel: { [shared] in
                let id = shared.state.withLock { $0.requestID }
                connection.notify(.cancel, target: id)
            }
            guard let frame else { return nil }
            connection.notify(.ack, target: frame.requestID, batches: 1)
            return SRSampleBatch(sensor: sensor, frame: frame)
        }
    }
}
