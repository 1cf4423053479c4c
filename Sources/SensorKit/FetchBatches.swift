import Foundation
import SensorKitModel
import Synchronization

/// One batch of fetched samples as typed columns, in SensorKit's units (docs/protocol.md §5.2):
/// the fast path for analysis code that wants arrays, not one object per sample. The arrays are
/// the ones the wire decoder filled; nothing is copied or looked up per batch.
public struct SRSampleBatch: Sendable {
    public let sensor: SRSensor
    public let layout: BatchLayout
    /// Sensor times (SR ns), one per sample.
    public let sensorTimes: [Int64]
    /// When the daemon received each sample (SR ns).
    public let receiveTimes: [Int64]
    /// The layout's columns in `layout.columns` order (`x`, `y`, `z` for motion; `lux`, …).
    public let columnValues: [[Double]]
    /// Per-sample lists, flattened (RR intervals for heart rate).
    public let ragged: [Double]

    init(sensor: SRSensor, frame: SampleBatchFrame) {
        self.sensor = sensor
        layout = frame.layout
        sensorTimes = frame.sensorTimes
        receiveTimes = frame.writeTimes
        columnValues = frame.columns
        ragged = frame.ragged
    }

    public var count: Int { sensorTimes.count }

    /// The column named `name` (one of `layout.columns`), or nil.
    public func column(_ name: String) -> [Double]? {
        layout.columns.firstIndex(of: name).map { columnValues[$0] }
    }

    /// The columns by name (builds a dictionary: prefer `column(_:)` or `columnValues` in loops).
    public var columns: [String: [Double]] {
        Dictionary(uniqueKeysWithValues: zip(layout.columns, columnValues))
    }

    /// Accelerations (g) or rotation rates (rad/s) of a motion batch.
    public var vectors: [(x: Double, y: Double, z: Double)] {
        guard layout == .motion else { return [] }
        let (x, y, z) = (columnValues[0], columnValues[1], columnValues[2])
        return (0..<count).map { (x[$0], y[$0], z[$0]) }
    }
}

/// An async sequence of a fetch's batches with flow control: batches are acknowledged as the
/// consumer takes them — half a window at a time, one `ack` for several (docs/protocol.md §6.1)
/// — so a slow consumer slows the daemon's reading, never its memory. Breaking out of the loop
/// (or cancelling the task) cancels the fetch.
public struct SRFetchBatches: AsyncSequence, Sendable {
    public typealias Element = SRSampleBatch

    let sensor: SRSensor
    let request: WireRequest
    let window: Int

    public func makeAsyncIterator() -> Iterator { Iterator(sensor: sensor, request: request, window: window) }

    public final class Iterator: AsyncIteratorProtocol, @unchecked Sendable {
        // @unchecked: state shared with the read thread lives in `state` (a Mutex); `unacked`
        // is touched only by `next()`, which an async iterator's single consumer calls in turn.
        private struct State {
            var buffer: [SampleBatchFrame] = []
            var bufferHead = 0
            var final: WireReply?
            var waiter: CheckedContinuation<SampleBatchFrame?, any Error>?
            var requestID: UInt32 = 0
            var done = false

            /// The next batch or the end, if either has arrived.
            mutating func take() -> Result<SampleBatchFrame?, any Error>? {
                if bufferHead < buffer.count {
                    let frame = buffer[bufferHead]
                    bufferHead += 1
                    if bufferHead == buffer.count {
                        buffer.removeAll(keepingCapacity: true)
                        bufferHead = 0
                    }
                    return .success(frame)
                }
                if let final {
                    done = true
                    return final.error.map { .failure($0.srError) } ?? .success(nil)
                }
                return nil
            }
        }
        /// The state shared with the connection's read queue.
        private final class Shared: Sendable {
            let state = Mutex(State())
        }
        private let shared = Shared()
        private let sensor: SRSensor
        private var connection: ReaderConnection?
        private var startError: (any Error)?
        /// Batches taken and not yet acknowledged, and how many to acknowledge at once.
        private var unacked = 0
        private let ackEvery: Int

        init(sensor: SRSensor, request: WireRequest, window: Int) {
            self.sensor = sensor
            // The daemon clamps the window the same way; acking every half window of the clamped
            // value keeps it from ever running out of credit while the consumer keeps up.
            let window = Swift.max(1, Swift.min(window, WireLimits.maxFetchWindow))
            ackEvery = Swift.max(1, window / 2)
            do {
                let connection = try ReaderSession.connection()
                self.connection = connection
                let shared = self.shared
                let id = connection.send(
                    {
                        $0.sensor = request.sensor
                        $0.device = request.device
                        $0.from = request.from
                        $0.to = request.to
                        $0.window = window
                        $0.chunkFormats = ReaderConnection.chunkFormats
                    }, op: .fetch
                ) { incoming in
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
                        if let error = reply.error {
                            waiter.resume(throwing: error.srError)
                        } else {
                            waiter.resume(returning: nil)
                        }
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
            let frame: SampleBatchFrame?
            // A batch already here is taken without suspending the task.
            if let ready = shared.state.withLock({ $0.take() }) {
                frame = try ready.get()
            } else {
                frame = try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { continuation in
                        let ready = shared.state.withLock { state -> Result<SampleBatchFrame?, any Error>? in
                            if let ready = state.take() { return ready }
                            state.waiter = continuation
                            return nil
                        }
                        if let ready { continuation.resume(with: ready) }
                    }
                } onCancel: { [shared] in
                    let id = shared.state.withLock { $0.requestID }
                    connection.notify(.cancel, target: id)
                }
            }
            guard let frame else { return nil }
            unacked += 1
            if unacked >= ackEvery {
                connection.notify(.ack, target: frame.requestID, batches: unacked)
                unacked = 0
            }
            return SRSampleBatch(sensor: sensor, frame: frame)
        }
    }
}
