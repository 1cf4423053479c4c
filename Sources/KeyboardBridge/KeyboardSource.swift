import Glibc
import SensorKitModel
import SensorSystem
import Synchronization

/// One keyboard as a `keyboardMetrics` source: while recording, a reading thread of its own
/// (`ReadinessLoop`) drains the evdev node, classifies each key at once (`KeyClass`) and counts
/// it (`KeyboardMeter`); at each interval's end it delivers the interval's counts. The node is
/// open only while someone records, and nothing but counts leaves the thread.
public final class KeyboardSource: SensorSource, @unchecked Sendable {
    // @unchecked: `running` and `status` live in Mutexes; everything the thread touches is in
    // its `KeyboardReading`, which only that thread uses.
    public let descriptor: SourceDescriptor
    public let keyboard: KeyboardDevice
    private let settings: KeyboardSettings
    private let clock: any SystemClock
    private let running = Mutex<ReadinessLoop?>(nil)
    private let currentStatus = Mutex<CaptureStatus>(.idle)

    public init(keyboard: KeyboardDevice, settings: KeyboardSettings, clock: any SystemClock) {
        self.keyboard = keyboard
        self.settings = settings
        self.clock = clock
        descriptor = KeyboardSamples.descriptor(keyboard, settings: settings)
    }

    public var captureStatus: CaptureStatus? { currentStatus.withLock { $0 } }

    public func setRecording(_ recording: Bool, deliver: @escaping @Sendable (SourceEvent) -> Void) {
        if !recording {
            stop()
            return
        }
        running.withLock { loop in
            guard loop == nil else { return }
            let device: EvdevDevice
            do throws(SystemError) {
                device = try EvdevDevice(path: keyboard.devnode)
            } catch {
                let why = error.errno == EACCES ? "\(error) (the daemon needs the group `input`)" : "\(error)"
                currentStatus.withLock { $0 = .failed(why) }
                return
            }
            let reading = KeyboardReading(
                device: device, descriptor: descriptor, settings: settings, clock: clock, deliver: deliver)
            do throws(SystemError) {
                loop = try ReadinessLoop(
                    name: "keyboard", fileDescriptor: device.fileDescriptor,
                    firstTimeout: reading.untilIntervalEnd(),
                    body: { wake in reading.read(wake) }, onExit: { reading.finish() })
                currentStatus.withLock { $0 = .recording }
            } catch {
                currentStatus.withLock { $0 = .failed("\(error)") }
            }
        }
    }

    private func stop() {
        let loop = running.withLock { loop in
            defer { loop = nil }
            return loop
        }
        loop?.stop()
        currentStatus.withLock { $0 = .idle }
    }

    public func close() { stop() }

    public var status: [String: String] { ["keyboard": keyboard.name] }
}

/// The reading thread's state: one keyboard's device, meter and event clock.
final class KeyboardReading: @unchecked Sendable {
    // @unchecked: used only on its ReadinessLoop's thread (its body and onExit).
    private let device: EvdevDevice
    private let descriptor: SourceDescriptor
    private let clock: any SystemClock
    private let deliver: @Sendable (SourceEvent) -> Void
    private var meter: KeyboardMeter
    private var times: KeyEventTimes
    private var lastEvent: Int64

    init(
        device: EvdevDevice, descriptor: SourceDescriptor, settings: KeyboardSettings, clock: any SystemClock,
        deliver: @escaping @Sendable (SourceEvent) -> Void
    ) {
        self.device = device
        self.descriptor = descriptor
        self.clock = clock
        self.deliver = deliver
        let now = clock.boottimeNanoseconds()
        meter = KeyboardMeter(start: now, intervalLength: settings.intervalNanoseconds, thresholds: settings.thresholds)
        lastEvent = now
        times = KeyEventTimes(start: now)
    }

    func untilIntervalEnd() -> Int64? {
        meter.intervalEnd.map { max(0, $0 &- clock.boottimeNanoseconds()) }
    }

    func read(_ wake: ReadinessLoop.Wake) -> ReadinessLoop.Next {
        let now = clock.boottimeNanoseconds()
        let eventClock = device.eventClockIsBoot ? now : clock.realtimeNanoseconds()
        let (offset, overflow) = now.subtractingReportingOverflow(eventClock)
        var closed: [KeyboardInterval] = []
        var end = EvdevDevice.DrainEnd.empty
        if wake == .readable {
            end = device.drain(
                { event in
                    guard event.type == EvdevDevice.keyEvent, let action = KeyAction(evdevValue: event.value) else { return }
                    let time = times.boot(eventTime: event.time, offset: overflow ? 0 : offset, readAt: now)
                    lastEvent = time
                    closed += meter.record(KeyClass(evdevCode: event.code), action, at: time)
                },
                lost: {
                    closed += meter.eventsLost(at: now)
                    deliver(
                        .gap(
                            from: BootInstant(boot: clock.bootID, nanoseconds: lastEvent),
                            to: BootInstant(boot: clock.bootID, nanoseconds: now), reason: .systemInitiated,
                            why: "the kernel's input buffer overflowed: key events were dropped"))
                    lastEvent = now
                })
        }
        if end == .empty { times.drained(at: now) }
        closed += meter.close(upTo: now)
        emit(closed)
        switch (wake, end) {
        case (.failed, _), (_, .gone): return .stop
        case (_, .more): return .wait(nanoseconds: 0)
        case (_, .empty): return .wait(nanoseconds: untilIntervalEnd())
        }
    }

    /// The interval in progress when recording stops or the keyboard goes away.
    func finish() {
        let last = meter.finish(at: clock.boottimeNanoseconds())
        if last.end > last.start { emit([last]) }
    }

    private func emit(_ intervals: [KeyboardInterval]) {
        guard !intervals.isEmpty else { return }
        deliver(
            .samples(
                KeyboardSamples.batch(
                    intervals, boot: clock.bootID, receivedAt: clock.boottimeNanoseconds(), for: descriptor)))
    }
}
