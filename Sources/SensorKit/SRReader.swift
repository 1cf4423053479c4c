import Foundation
import SensorKitModel

/// The async reader, in the spirit of iOS 27's `SRReader`: `try await` instead of delegate
/// callbacks, typed batches for analysis, and the same SensorKit objects when wanted.
public final class SRReader: Sendable {
    public let sensor: SRSensor

    public init(sensor: SRSensor) { self.sensor = sensor }

    /// The app's authorization for this sensor, asked of the daemon.
    public var authorizationStatus: SRAuthorizationStatus {
        get async throws {
            let reply = try await call(.status)
            return reply.states?.first.flatMap { SRAuthorizationStatus(rawValue: $0.authorizationStatus) } ?? .notDetermined
        }
    }

    /// Adds this app's recording stake; throws `SRError` (`noAuthorization`, `invalidEntitlement`…).
    public func startRecording() async throws { _ = try await call(.startRecording) }

    public func stopRecording() async throws { _ = try await call(.stopRecording) }

    /// Devices with stored data for the sensor.
    public func devices() async throws -> [SRDevice] {
        try await call(.fetchDevices).devices?.map(\.device) ?? []
    }

    /// The fetch's samples as typed batches (the fast path). `window` batches may be in flight.
    public func batches(_ request: SRFetchRequest, window: Int = WireLimits.defaultFetchWindow) throws -> SRFetchBatches {
        if let problem = request.invalidity { throw SRError(.fetchRequestInvalid, message: problem) }
        guard let from = request.from.nanoseconds, let to = request.to.nanoseconds else {
            throw SRError(.fetchRequestInvalid, message: "from and to must be finite times")
        }
        var wire = WireRequest(id: 0, op: .fetch)
        wire.sensor = sensor.rawValue
        wire.device = request.device.identifier
        wire.from = from
        wire.to = to
        return SRFetchBatches(sensor: sensor, request: wire, window: window)
    }

    /// The fetch's results as SensorKit objects (`SRFetchResult`), as the delegate API delivers them.
    public func fetch(_ request: SRFetchRequest) throws -> AsyncThrowingStream<SRFetchResult<AnyObject>, any Error> {
        let batches = try self.batches(request)
        let environment = SensorKitEnvironment.current
        let materializer = SampleMaterializer(sensor: sensor, timeline: environment.timeline, clock: environment.clock)
        let sensor = self.sensor
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await batch in batches {
                        let frame = SampleBatchFrame(
                            requestID: 0, layout: batch.layout, sensorTimes: batch.sensorTimes,
                            writeTimes: batch.receiveTimes,
                            columns: batch.columnValues,
                            ragged: batch.ragged)
                        for result in materializer.results(frame) { continuation.yield(result) }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
                _ = sensor
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    private func call(_ op: WireRequest.Operation) async throws -> WireReply {
        let connection = try ReaderSession.connection()
        let sensor = self.sensor
        let reply: WireReply = await withCheckedContinuation { continuation in
            connection.send({ $0.sensor = sensor.rawValue }, op: op) { incoming in
                if case .reply(let reply) = incoming { continuation.resume(returning: reply) }
            }
        }
        if let error = reply.error { throw error.srError }
        return reply
    }
}
