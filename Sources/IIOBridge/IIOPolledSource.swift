import Dispatch
import Glibc
import SensorKitModel
import SensorSystem
import Synchronization

/// The polled IIO driver: one stream read from sysfs on a `DispatchSourceTimer` whose deadlines lie
/// on a grid shared by every polled stream (`PollSchedule.grid`) — step counters (`in_steps_input`
/// has no scan element in any mainline driver) and light sensors without a usable buffer
/// (APDS9960, TSL2591, acpi-als), or any function of a device whose scan elements are garbage.
///
/// Every sysfs read runs on this source's own queue: a slow sensor can hold a `_raw` read for
/// seconds (docs/iio.md §12.3), and that must stall nothing but this stream. Samples are stamped with
/// `CLOCK_BOOTTIME` when the read returns; a read that stalled shows as a gap (`SampleBatcher`).
/// Step counts become per-interval deltas (`StepCounting`): a row's sensor time is the interval's
/// start and its `end` column the interval's end.
///
/// Stopping waits for the queue (a read in progress included): what the stream still holds is
/// delivered before `setRecording(false)` returns, while the pipeline still takes it.
public final class IIOPolledSource: SensorSource, @unchecked Sendable {
    // @unchecked: `timer`, `deliver`, `batcher`, `previousSteps`, `enabledSteps` and `failing`
    // are touched only on `queue` (dispatchPrecondition).
    public let descriptor: SourceDescriptor
    public let sysfs: IIOSysfsDevice
    /// Where each column's integer comes from, in column order.
    public let reads: [IIOChip.ColumnSource]
    /// Nanoseconds between reads.
    public let interval: Int64
    public let queue: DispatchQueue
    private let clock: any SystemClock
    private let log: Journal
    private let isStepCounter: Bool
    private let schedule: PollSchedule
    /// Set on `queue` only: tells a call made from a delivery (on the queue) from any other.
    private let onQueue = DispatchSpecificKey<Bool>()

    private var timer: (any DispatchSourceTimer)?
    private var deliver: (@Sendable (SourceEvent) -> Void)?
    private var batcher: SampleBatcher
    /// Last cumulative count and when it was read (steps only).
    private var previousSteps: (count: Int64, at: Int64)?
    /// `in_steps_en` was 0 and we set it: set it back on stop.
    private var enabledSteps = false
    private var failing = false
    private var closed = false
    private let currentStatus = Mutex<CaptureStatus>(.idle)
    /// Why this stream is polled although its chip has a buffer (`IIOChip.bufferRefusal`); the
    /// stream then reports itself degraded.
    public let degradation: String?

    public var captureStatus: CaptureStatus? { currentStatus.withLock { $0 } }

    public init(
        descriptor: SourceDescriptor, sysfs: IIOSysfsDevice, reads: [IIOChip.ColumnSource], interval: Int64,
        clock: any SystemClock, log: Journal, degradation: String? = nil, schedule: PollSchedule = .grid
    ) {
        precondition(reads.count == descriptor.columns.count, "one read per column")
        self.degradation = degradation
        precondition(interval > 0, "a polling interval is positive")
        self.descriptor = descriptor
        self.sysfs = sysfs
        self.reads = reads
        self.interval = interval
        self.clock = clock
        self.log = log
        isStepCounter = reads.contains(.intervalEnd)
        self.schedule = schedule
        queue = DispatchQueue(label: "sensorkitd.iio.poll.\(sysfs.deviceName).\(descriptor.sensor.rawValue)")
        queue.setSpecific(key: onQueue, value: true)
        batcher = SampleBatcher(
            boot: clock.bootID, columnCount: reads.count, period: interval,
            gapCause: "sysfs reads stalled")
    }

    /// The stream of a polled `function` of `chip`.
    public convenience init(chip: IIOChip, function: IIOSensorFunction, clock: any SystemClock, log: Journal) {
        precondition(function.capture == .polled, "\(function) is not polled")
        self.init(
            descriptor: chip.descriptor(for: function), sysfs: IIOSysfsDevice(path: chip.udev.syspath),
            reads: chip.columns(for: function).map(\.1), interval: chip.pollIntervals[function.kind] ?? 1_000_000_000,
            clock: clock, log: log,
            degradation: function.kind == .stepCounter ? nil : chip.bufferRefusal.map { "polling sysfs: the buffer \($0)" })
    }

    /// Starting returns at once (the first read follows on the queue); stopping returns once the
    /// held samples are delivered.
    public func setRecording(_ recording: Bool, deliver: @escaping @Sendable (SourceEvent) -> Void) {
        if recording {
            queue.async { [self] in
                guard !closed else { return }
                start(deliver)
            }
        } else {
            onOwnQueue { stop() }
        }
    }

    public func close() {
        onOwnQueue {
            stop()
            closed = true
        }
    }

    /// Runs `work` on `queue` before returning: inline when called from a delivery, which already
    /// runs there.
    private func onOwnQueue(_ work: () -> Void) {
        if DispatchQueue.getSpecific(key: onQueue) == true { work() } else { queue.sync(execute: work) }
    }

    /// Waits until everything queued so far has run (tests).
    public func settle() { queue.sync {} }

    /// One poll now, as if the timer fired (tests drive polls with a long interval and this).
    func pollNow() { queue.sync { poll() } }

    // MARK: Queue

    private func start(_ deliver: @escaping @Sendable (SourceEvent) -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard timer == nil else { return }
        self.deliver = deliver
        setStatus(.waiting("first read pending"))
        if isStepCounter { enableStepCounter() }
        let timer = DispatchSource.makeTimerSource(flags: schedule.strict ? .strict : [], queue: queue)
        let first = schedule.firstDeadline(DispatchTime.now().uptimeNanoseconds, interval)
        timer.schedule(
            deadline: DispatchTime(uptimeNanoseconds: first), repeating: .nanoseconds(Int(interval)),
            leeway: .nanoseconds(Int(schedule.leeway)))
        timer.setEventHandler { [weak self] in self?.poll() }
        self.timer = timer
        poll()  // the first read now, then one per interval
        timer.resume()
    }

    private func stop() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let timer else { return }
        setStatus(.idle)
        timer.cancel()
        self.timer = nil
        var events: [SourceEvent] = []
        batcher.flush(into: &events)
        for event in events { deliver?(event) }
        deliver = nil
        batcher = SampleBatcher(boot: clock.bootID, columnCount: reads.count, period: interval, gapCause: "sysfs reads stalled")
        previousSteps = nil
        if enabledSteps {
            try? sysfs.directory.write("in_steps_en", "0")
            enabledSteps = false
        }
    }

    /// `in_steps_en`: the hardware pedometer counts only while enabled.
    private func enableStepCounter() {
        guard let text = try? sysfs.directory.read("in_steps_en"), text == "0" else { return }
        do throws(SystemError) {
            try sysfs.directory.write("in_steps_en", "1")
            enabledSteps = true
        } catch {
            log.warning("\(sysfs.deviceName): in_steps_en: \(error); the step counter may not count, ignoring")
        }
    }

    private func poll() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard timer != nil else { return }
        var row: [Int64] = []
        row.reserveCapacity(reads.count)
        do throws(IIOAttributeError) {
            for read in reads {
                switch read {
                case let .raw(channel): row.append(try sysfs.readRaw(channel))
                case let .input(channel):
                    let value = try sysfs.readInput(channel) * 1e6
                    guard value.magnitude < 9e18 else {
                        throw IIOAttributeError(
                            device: sysfs.deviceName, attribute: channel.prefix + "_input",
                            problem: .malformed(value: String(value / 1e6), reason: "out of range"))
                    }
                    row.append(Int64(value.rounded()))
                case let .inputCount(channel): row.append(try sysfs.readInputCount(channel))
                case .intervalEnd: row.append(0)
                }
            }
        } catch {
            if !failing {
                failing = true
                log.warning("\(error); polling \(descriptor.sensor.rawValue) goes on")
            }
            batcher.interrupted("read failed: \(error)")
            setStatus(.failed("sysfs reads fail: \(error)"))
            return
        }
        if failing {
            failing = false
            log.notice("\(sysfs.deviceName): \(descriptor.sensor.rawValue) reads work again")
        }
        setStatus(degradation.map(CaptureStatus.degraded) ?? .recording)
        let now = clock.boottimeNanoseconds()
        var events: [SourceEvent] = []
        if isStepCounter {
            // Columns: steps (the cumulative count as read), end. The first read only sets the baseline.
            let stepsColumn = reads.firstIndex { $0 != .intervalEnd }!
            let count = row[stepsColumn]
            defer { previousSteps = (count, now) }
            guard let previous = previousSteps else { return }
            row[stepsColumn] = StepCounting.steps(previous: previous.count, current: count)
            row[reads.firstIndex(of: .intervalEnd)!] = now
            batcher.append(sensorTime: previous.at, receiveTime: now, into: &events) { row[$0] }
        } else {
            batcher.append(sensorTime: now, receiveTime: now, into: &events) { row[$0] }
        }
        // Hand over before the batch would span more than `maximumSpan` (every sample of a slow poll).
        if Int64(batcher.pendingCount + 1) * interval > SampleBatcher.maximumSpan {
            batcher.flush(into: &events)
        }
        for event in events { deliver?(event) }
    }

    private func setStatus(_ status: CaptureStatus) { currentStatus.withLock { $0 = status } }
}
