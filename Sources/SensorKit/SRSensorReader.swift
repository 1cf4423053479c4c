import Dispatch
import Foundation
import SensorKitModel
import Synchronization

/// Apple's `SRSensorReader`: records and fetches one sensor through sensorkitd.
///
/// Every outcome arrives through the delegate, on `delegateQueue` — a serial queue per reader, so
/// callbacks for one reader never overlap and keep their order. Operations never block the
/// caller on the daemon, except the first read of `authorizationStatus`, which asks it once.
open class SRSensorReader: NSObject, @unchecked Sendable {
    // @unchecked: `delegate` is a weak reference set by the app (as on Apple's platforms); all
    // other mutable state is in the `state` Mutex.
    public let sensor: SRSensor
    public weak var delegate: (any SRSensorReaderDelegate)?
    /// The queue delegate callbacks run on (serial, one per reader).
    public let delegateQueue: DispatchQueue

    private struct State {
        var status: SRAuthorizationStatus?
        var subscribed = false
    }
    private let state = Mutex(State())

    public init(sensor: SRSensor) {
        self.sensor = sensor
        self.delegateQueue = DispatchQueue(label: "sensorkit.reader.\(sensor.rawValue)")
        super.init()
        _ = SensorKitEnvironment.current  // installs SRDevice.current as the default fetch device
    }

    /// The app's authorization for this sensor; kept current by the daemon's push events.
    public var authorizationStatus: SRAuthorizationStatus {
        if let known = state.withLock({ $0.status }) { return known }
        guard let connection = try? connected() else { return .notDetermined }
        let reply = connection.call(.status) { $0.sensor = self.sensor.rawValue }
        let status = reply.states?.first.flatMap { SRAuthorizationStatus(rawValue: $0.authorizationStatus) } ?? .notDetermined
        state.withLock { $0.status = status }
        return status
    }

    /// Adds this app's stake in the sensor (it records while any app holds one). Success:
    /// `sensorReaderWillStartRecording`; failure: `sensorReader(_:startRecordingFailedWithError:)`.
    open func startRecording() {
        simple(
            .startRecording, success: { $0.sensorReaderWillStartRecording($1) },
            failure: { $0.sensorReader($1, startRecordingFailedWithError: $2) })
    }

    /// Gives up this app's stake. Success: `sensorReaderDidStopRecording`.
    open func stopRecording() {
        simple(
            .stopRecording, success: { $0.sensorReaderDidStopRecording($1) },
            failure: { $0.sensorReader($1, stopRecordingFailedWithError: $2) })
    }

    /// Lists devices with stored data for the sensor: `sensorReader(_:didFetch:)`.
    open func fetchDevices() {
        withConnection(failure: { $0.sensorReader($1, fetchDevicesDidFailWithError: $2) }) { connection in
            connection.send({ $0.sensor = self.sensor.rawValue }, op: .fetchDevices) { incoming in
                guard case .reply(let reply) = incoming else { return }
                self.deliver { delegate, reader in
                    if let error = reply.error {
                        delegate.sensorReader(reader, fetchDevicesDidFailWithError: error.srError)
                    } else {
                        delegate.sensorReader(reader, didFetch: (reply.devices ?? []).map(\.device))
                    }
                }
            }
        }
    }

    /// Fetches `(request.from, request.to]` on `request.device`: `didFetchResult` per sample or
    /// batch (return false to stop), then `didCompleteFetch`, or `failedWithError`.
    open func fetch(_ request: SRFetchRequest) {
        let fail: DelegateFailure = {
            $0.sensorReader($1, fetching: request, failedWithError: $2)
        }
        if let problem = request.invalidity {
            return deliver { fail($0, $1, SRError(.fetchRequestInvalid, message: problem)) }
        }
        guard let from = request.from.nanoseconds, let to = request.to.nanoseconds else {
            return deliver { fail($0, $1, SRError(.fetchRequestInvalid, message: "from and to must be finite times")) }
        }
        withConnection(failure: fail) { connection in
            let environment = SensorKitEnvironment.current
            let materializer = SampleMaterializer(sensor: self.sensor, timeline: environment.timeline, clock: environment.clock)
            let stopped = Mutex(false)
            // Delivered batches not yet acknowledged; one `ack` per half window (docs/protocol.md §6.1).
            let unacked = Mutex(0)
            let window = WireLimits.defaultFetchWindow
            connection.send(
                {
                    $0.sensor = self.sensor.rawValue
                    $0.device = request.device.identifier
                    $0.from = from
                    $0.to = to
                    $0.window = window
                    $0.chunkFormats = ReaderConnection.chunkFormats
                }, op: .fetch
            ) { incoming in
                switch incoming {
                case .batch(let batch):
                    let results = materializer.results(batch)
                    self.delegateQueue.async {
                        guard !stopped.withLock({ $0 }) else { return }
                        for result in results {
                            let keepGoing = self.delegate?.sensorReader(self, fetching: request, didFetchResult: result) ?? true
                            if !keepGoing {
                                stopped.withLock { $0 = true }
                                connection.notify(.cancel, target: batch.requestID)
                                return
                            }
                        }
                        let acknowledge = unacked.withLock { count -> Int in
                            count += 1
                            guard count >= max(1, window / 2) else { return 0 }
                            defer { count = 0 }
                            return count
                        }
                        if acknowledge > 0 { connection.notify(.ack, target: batch.requestID, batches: acknowledge) }
                    }
                case .reply(let reply):
                    self.delegateQueue.async {
                        guard !stopped.withLock({ $0 }), let delegate = self.delegate else { return }
                        if let error = reply.error {
                            delegate.sensorReader(self, fetching: request, failedWithError: error.srError)
                        } else {
                            delegate.sensorReader(self, didCompleteFetch: request)
                        }
                    }
                }
            }
        }
    }

    /// Asks a person to authorize `sensors` for this app (`sensorkitctl consent` answers). The
    /// completion gets nil once every sensor has an answer, or an `SRError`: `invalidEntitlement`
    /// for a sensor the app is not entitled to, `promptDeclined` when all were already decided.
    /// The completion is not `@Sendable`, exactly as in Apple's API, so study code that captures
    /// its own state compiles unchanged; like Apple's, it runs on a queue of the framework's choosing.
    open class func requestAuthorization(sensors: Set<SRSensor>, completion: @escaping ((any Error)?) -> Void) {
        let connection: ReaderConnection
        do {
            connection = try ReaderSession.connection()
        } catch {
            return completion(error)
        }
        let completion = UncheckedSendable(completion)
        connection.send({ $0.sensors = sensors.map(\.rawValue).sorted() }, op: .requestAuthorization) { incoming in
            guard case .reply(let reply) = incoming else { return }
            completion.value(reply.error?.srError)
        }
    }

    /// Apple's auto-bridged async form of `requestAuthorization(sensors:completion:)`.
    open class func requestAuthorization(sensors: Set<SRSensor>) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            requestAuthorization(sensors: sensors) { (error: (any Error)?) in
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            }
        }
    }

    // MARK: plumbing

    typealias DelegateCall = @Sendable (any SRSensorReaderDelegate, SRSensorReader) -> Void
    typealias DelegateFailure = @Sendable (any SRSensorReaderDelegate, SRSensorReader, any Error) -> Void

    /// The shared connection, subscribing this reader to authorization pushes once.
    private func connected() throws -> ReaderConnection {
        let connection = try ReaderSession.connection()
        let subscribe = state.withLock { state -> Bool in
            defer { state.subscribed = true }
            return !state.subscribed
        }
        if subscribe {
            connection.onEvent { [weak self] event in
                guard let self, event.sensor == self.sensor.rawValue,
                    event.event == WireReply.Event.authorizationChanged.rawValue,
                    let raw = event.authorizationStatus, let status = SRAuthorizationStatus(rawValue: raw)
                else { return }
                self.state.withLock { $0.status = status }
                self.deliver { $0.sensorReader($1, didChange: status) }
            }
        }
        return connection
    }

    private func withConnection(
        failure: @escaping DelegateFailure,
        _ body: (ReaderConnection) -> Void
    ) {
        do {
            body(try connected())
        } catch {
            deliver { failure($0, $1, error) }
        }
    }

    private func simple(
        _ op: WireRequest.Operation,
        success: @escaping DelegateCall,
        failure: @escaping DelegateFailure
    ) {
        withConnection(failure: failure) { connection in
            connection.send({ $0.sensor = self.sensor.rawValue }, op: op) { incoming in
                guard case .reply(let reply) = incoming else { return }
                self.deliver { delegate, reader in
                    if let error = reply.error { failure(delegate, reader, error.srError) } else { success(delegate, reader) }
                }
            }
        }
    }

    /// Runs a delegate callback on `delegateQueue` if a delegate is set.
    private func deliver(_ callback: @escaping DelegateCall) {
        delegateQueue.async {
            guard let delegate = self.delegate else { return }
            callback(delegate, self)
        }
    }
}

/// Carries a value the caller promises to use safely across queues (Apple's API hands
/// non-`Sendable` closures to the framework, which calls them on its own queue).
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
