import SensorKitModel
import Synchronization

/// The buffered IIO driver: one stream — one function of one chip, e.g. a BMI160's
/// accelerometer — read from the chip's buffer with kernel timestamps. The buffer itself belongs
/// to the chip's `ScanCapture` (`IIODeviceCapture` for a local device, `IIORemoteCapture` for one
/// served by `iiod`), which every buffered stream of the chip shares; this source only subscribes
/// while it records.
///
/// `setRecording` is idempotent and never blocks (the capture's sysfs writes run on its control
/// queue); `close` stops first. Events arrive on the capture's reading queue.
public final class IIOBufferedSource: StagingSource {
    public let descriptor: SourceDescriptor
    public let capture: any ScanCapture
    /// The channels behind the descriptor's columns, in column order.
    public let channels: [String]
    /// Nanoseconds between scans at the function's rate; nil when unknown.
    public let period: Int64?
    private let state = Mutex<(recording: Bool, closed: Bool)>((false, false))
    private let staging = Mutex<(any SampleStaging)?>(nil)

    public init(descriptor: SourceDescriptor, capture: any ScanCapture, channels: [String], period: Int64?) {
        precondition(channels.count == descriptor.columns.count, "one channel per column")
        self.descriptor = descriptor
        self.capture = capture
        self.channels = channels
        self.period = period
    }

    /// The stream of `function` on `chip`, sharing `capture` (which must run `chip`'s plan).
    public convenience init(
        chip: IIOChip, function: IIOSensorFunction, capture: any ScanCapture,
        descriptor: SourceDescriptor? = nil
    ) {
        precondition(function.capture == .buffered, "\(function) is not buffered")
        let channels = chip.columns(for: function).map { column -> String in
            guard case let .raw(id) = column.1 else { preconditionFailure("a buffered column is a scan element") }
            return id.prefix
        }
        self.init(
            descriptor: descriptor ?? chip.descriptor(for: function), capture: capture, channels: channels,
            period: capture.plan.rates[function.kind]?.period)
    }

    /// Room for a staged batch's span and a second more at the function's rate.
    public var stagingCapacity: Int {
        guard let period, period > 0 else { return 16_384 }
        let span = SampleBatcher.stagedSpan.addingSaturating(1_000_000_000)
        return Int(min(max(span / period + 64, 256), 1 << 20))
    }

    public func useStaging(_ staging: (any SampleStaging)?) { self.staging.withLock { $0 = staging } }

    /// Idle unless recording; then what the shared buffer is doing.
    public var captureStatus: CaptureStatus? {
        state.withLock { $0.recording } ? capture.status : .idle
    }

    public func setRecording(_ recording: Bool, deliver: @escaping @Sendable (SourceEvent) -> Void) {
        let changed = state.withLock { state -> Bool in
            guard !state.closed, state.recording != recording else { return false }
            state.recording = recording
            return true
        }
        guard changed else { return }
        if recording {
            capture.subscribe(
                .init(
                    id: ObjectIdentifier(self), channels: channels, period: period, staging: staging.withLock { $0 },
                    deliver: deliver))
        } else {
            capture.unsubscribe(ObjectIdentifier(self))
        }
    }

    public func close() {
        setRecording(false) { _ in }
        state.withLock { $0.closed = true }
    }
}
