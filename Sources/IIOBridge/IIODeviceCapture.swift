import Dispatch
import Glibc
import SensorKitModel
import SensorSystem
import Synchronization

/// One IIO device's buffer, run for every stream of the chip that records (a BMI160's
/// accelerometer and gyroscope share it): the buffer is enabled when the first stream subscribes
/// and disabled when the last one leaves (on only while someone records: docs/protocol.md §3.3).
///
/// A queue and a lock, so the data path never waits for sysfs (docs/iio.md §12.3):
/// - `controlQueue` runs the sysfs sequences of `BufferedCapture` (they may block) and the
///   subscriber bookkeeping. Discovery gives every generation of captures of one sysfs path the
///   same control queue, so an old capture's teardown can never land after a new one's enable.
/// - `reading` (a `ConfinementLock`) guards the open `/dev/iio:deviceN` (`IIOScanReader`,
///   non-blocking) and the fan-out. A `ReadinessLoop` thread sleeps in `poll` on the fd and, on
///   each wake-up, reads holding the lock: it drains what is queued, decodes every scan once,
///   stamps it (`TimestampMapping`) and hands each stream its channels through its
///   `SampleBatcher`. The chip's batches go out together (`ScanFanOut`: one hand-over per chip)
///   when they span their half second, and a stream's at a gap, when the oldest held sample has
///   waited `deliveryHold` (the loop's poll timeout), or when the stream leaves — so a chip read
///   ten times a second wakes the rest of the daemon about twice a second (docs/iio.md §4,
///   "Reading thread" and "Delivery"). The control side takes the lock only for bookkeeping (a
///   stream joins or leaves, reading starts or stops), never across sysfs.
///
/// A read error stops reading. ENODEV (unplugged) waits for discovery to retire the capture; other
/// errors restart the buffer after a second, with the interval recorded as a gap, at most three
/// times in a row without data. A buffer that cannot be enabled at all (a triggered buffer whose
/// driver registers no trigger without an interrupt line, e.g. mxc4005) is reported once to
/// `onEnableFailure`, which has the chip polled instead (docs/iio.md §4 "Errors").
public final class IIODeviceCapture: ScanCapture, @unchecked Sendable {
    // @unchecked: `subscribers`, `running`, `retired` are touched only on `controlQueue` (each
    // method asserts it); the reading side is reached only through `reading`.

    public let sysfs: IIOSysfsDevice
    public let devnode: String
    public let description: IIODeviceDescription
    public let plan: DeviceCapturePlan
    public let controlQueue: DispatchQueue
    private let reading: ConfinementLock<ReadingSide>
    private let clock: any SystemClock
    private let pairing: ClockPairing
    private let log: Journal
    /// For `.estimated` stamps: the fastest function's period.
    private let estimatedPeriod: Int64?
    private let restartDelay: DispatchTimeInterval
    /// The longest a read scan waits in its stream's batch by default: longer than a batch's
    /// span (`SampleBatcher.maximumSpan`, half a second) plus one watermark's worth of reads, so a
    /// steadily read chip hands its batches over as they fill, and the deadline fires only for a
    /// chip that went quiet — whose last samples then wait no longer than a full batch's would.
    public static let defaultDeliveryHold: Int64 = 750_000_000
    /// How long a read scan may wait in its stream's batch (0 hands every read over at once);
    /// a staged batch waits as much longer as it may span (`ScanFanOut.deliverDue`).
    private let deliveryHold: Int64
    private let onEnableFailure: (@Sendable (BufferedCaptureError) -> Void)?
    private let currentStatus = Mutex<CaptureStatus>(.idle)
    /// Subscriptions asked for and not yet adopted by the fan-out. The reading thread keeps its
    /// reads for late joiners (`ScanFanOut.keepsRecent`, a copy of every scan) only while one is
    /// on its way. Counted before the request's moment (`ScanConsumer.since`) is taken and read
    /// after a read's receive time, so a read not kept was received before any pending request
    /// asked (a joiner takes only reads received since it asked); should the two cross within
    /// nanoseconds, the joiner records the read as missed, a gap, never silence.
    private let joining = Atomic<Int>(0)

    /// What the buffer is doing (`sensorkitctl devices`).
    public var status: CaptureStatus? { currentStatus.withLock { $0 } }

    // controlQueue
    private var subscribers: [ObjectIdentifier: ScanConsumer] = [:]
    private var running = false
    private var retired = false

    /// What the reading thread shares with the control side: reached only holding `reading`, as
    /// an `inout` the compiler checks (a class's stored `var`s would be checked at run time, at
    /// every touch of every wake: `ConfinementLock`).
    private struct ReadingSide {
        var reader: IIOScanReader?
        var loop: ReadinessLoop?
        var fanOut: ScanFanOut
        var mapping: TimestampMapping = .boottime
        var values: [Int64] = []
        var stamps: [Int64] = []
        var sensorTimes: [Int64] = []
        var failuresWithoutData = 0
        /// A scan arrived since the buffer was (re)enabled.
        var sawScans = false
    }

    /// Runs a wake's deliveries as one hand-over into the store (`SourceRegistry.handingOver`).
    private let handOver: @Sendable (() -> Void) -> Void
    private let decoder: ScanDecoder

    public init(
        sysfs: IIOSysfsDevice, devnode: String, description: IIODeviceDescription, plan: DeviceCapturePlan,
        controlQueue: DispatchQueue, clock: any SystemClock, pairing: ClockPairing = .system, log: Journal,
        restartDelay: DispatchTimeInterval = .seconds(1), deliveryHold: Int64 = IIODeviceCapture.defaultDeliveryHold,
        handOver: @escaping @Sendable (() -> Void) -> Void = { $0() },
        onEnableFailure: (@Sendable (BufferedCaptureError) -> Void)? = nil
    ) {
        precondition(deliveryHold >= 0, "a hold is not negative")
        self.handOver = handOver
        self.onEnableFailure = onEnableFailure
        self.deliveryHold = deliveryHold
        self.sysfs = sysfs
        self.devnode = devnode
        self.description = description
        self.plan = plan
        self.controlQueue = controlQueue
        self.clock = clock
        self.pairing = pairing
        self.log = log
        self.restartDelay = restartDelay
        decoder = ScanDecoder(layout: plan.layout)
        // With a hold, batches whose streams stage their samples may span the store's fold pace.
        reading = ConfinementLock(
            ReadingSide(
                fanOut: ScanFanOut(
                    plan: plan, boot: clock.bootID, stagedSpan: deliveryHold > 0 ? SampleBatcher.stagedSpan : nil,
                    collectsDeliveries: true)))
        estimatedPeriod = plan.rates.values.compactMap(\.period).min()
    }

    /// The consumer starts receiving scans; the buffer is enabled if it is the first. Returns at
    /// once (the sysfs writes run on `controlQueue`).
    public func subscribe(_ consumer: ScanConsumer) {
        for channel in consumer.channels {
            precondition(plan.layout.slot(for: channel) != nil, "\(channel) is not in \(description.deviceName)'s capture plan")
        }
        // Counted before the moment below is taken (`joining`), until the fan-out adopted it.
        joining.add(1, ordering: .sequentiallyConsistent)
        // The moment of asking, not of joining: a sibling stream may have started the buffer and
        // read scans while this subscription waited for the control queue and the reading lock.
        var asked = consumer
        if asked.since == nil { asked.since = clock.boottimeNanoseconds() }
        let consumer = asked
        controlQueue.async { [self] in
            defer { joining.subtract(1, ordering: .sequentiallyConsistent) }
            guard !retired else { return }
            subscribers[consumer.id] = consumer
            if running {
                reading.withLock { side in
                    side.fanOut.adopt([consumer])
                    side.fanOut.deliverCollected()
                }
            } else {
                start()
            }
        }
    }

    /// The consumer stops receiving; the buffer is disabled if it was the last. What the stream
    /// holds is handed over before this returns (the pipeline drops events that arrive after its
    /// stop); the rest returns at once.
    public func unsubscribe(_ id: ObjectIdentifier) {
        reading.withLock { side in
            side.fanOut.deliverPending(of: id)
            side.fanOut.deliverCollected()
        }
        controlQueue.async { [self] in
            guard subscribers.removeValue(forKey: id) != nil, running else { return }
            if subscribers.isEmpty {
                stop(disableBuffer: true)
            } else {
                reading.withLock { side in
                    side.fanOut.remove(id)
                    side.fanOut.deliverCollected()
                }
            }
        }
    }

    /// The device is gone or described anew: stop, turn the buffer off (best effort — an unplugged
    /// device fails every write), and ignore every later subscription. Returns at once.
    public func retire() {
        controlQueue.async { [self] in
            guard !retired else { return }
            retired = true
            subscribers.removeAll()
            if running { stop(disableBuffer: true) }
        }
    }

    /// How many scans are kept for streams that join late (tests).
    var keptScanCount: Int { reading.withLock { $0.fanOut.recent.count } }

    /// Waits until everything queued so far on the control queue has run and the reading thread
    /// is between wakes (tests, shutdown).
    public func settle() {
        controlQueue.sync {}
        reading.withLock { _ in }
    }

    // MARK: Control queue

    /// Enable sequence, then open the device and start reading (docs/iio.md §12.5: open after enable).
    private func start() {
        dispatchPrecondition(condition: .onQueue(controlQueue))
        let skipped: [IIOAttributeError]
        setStatus(.waiting("enabling the buffer"))
        do throws(BufferedCaptureError) {
            skipped = try BufferedCapture.enable(plan.plan, on: sysfs, device: description).skipped
        } catch {
            setStatus(.failed("cannot enable the buffer: \(error)"))
            if let onEnableFailure {
                log.warning(
                    "\(description.deviceName) (\(description.name)): cannot start buffered capture: \(error); polling its sysfs values instead"
                )
                onEnableFailure(error)
            } else {
                log.error(
                    "\(description.deviceName) (\(description.name)): cannot start buffered capture: \(error); not recording it")
            }
            return
        }
        for failure in skipped { log.notice("\(BufferedCapture.explain(failure))") }
        let mapping = TimestampMapping(hasTimestamp: plan.layout.timestamp != nil, clock: timestampClockInUse())
        if mapping != .boottime {
            log.notice("\(description.deviceName) (\(description.name)): timestamps are \(mapping)")
        }
        let reader: IIOScanReader
        do throws(SystemError) {
            reader = try IIOScanReader(devnode: devnode, layout: plan.layout)
        } catch {
            log.error("\(description.deviceName) (\(description.name)): \(error); not recording it")
            setStatus(.failed("\(error)"))
            BufferedCapture.disable(plan.plan, on: sysfs, device: description)
            return
        }
        setStatus(.waiting("buffer enabled, no scan yet"))
        running = true
        let everyone = Array(subscribers.values)
        reading.withLock { beginReading(reader, mapping: mapping, consumers: everyone, &$0) }
    }

    /// Stop reading (the thread leaves and closes the fd; every stream gets what it holds), then
    /// the teardown sequence.
    private func stop(disableBuffer: Bool, keepConsumers: Bool = false) {
        dispatchPrecondition(condition: .onQueue(controlQueue))
        running = false
        if !keepConsumers { setStatus(.idle) }
        let loop = reading.withLock { side -> ReadinessLoop? in
            defer { side.loop = nil }
            return side.loop
        }
        loop?.stop()  // not holding `reading`: the thread may be waiting for it
        reading.withLock { side in
            side.reader = nil
            if keepConsumers { side.fanOut.deliverAll() } else { side.fanOut.removeAll() }
            side.fanOut.deliverCollected()
        }
        guard disableBuffer else { return }
        let failures = BufferedCapture.disable(plan.plan, on: sysfs, device: description)
        if let first = failures.first, !retired {
            log.warning("\(first) while turning the buffer off, ignoring")
        }
    }

    /// A read failed (not an unplug): turn the buffer off and on again, keeping the streams.
    private func restart() {
        dispatchPrecondition(condition: .onQueue(controlQueue))
        guard running, !retired else { return }
        stop(disableBuffer: true, keepConsumers: true)
        start()
    }

    /// What `current_timestamp_clock` says after the enable sequence tried to select boottime; nil
    /// when the kernel has no such attribute (before 4.5: realtime).
    private func timestampClockInUse() -> IIOTimestampClock? {
        guard description.timestampClock != nil else { return nil }
        let text = try? sysfs.directory.read("current_timestamp_clock")
        return text.flatMap { IIOTimestampClock(rawValue: $0) } ?? description.timestampClock
    }

    // MARK: Holding `reading`

    private func beginReading(
        _ reader: IIOScanReader, mapping: TimestampMapping, consumers everyone: [ScanConsumer], _ side: inout ReadingSide
    ) {
        side.reader = reader
        side.mapping = mapping
        side.sawScans = false
        side.fanOut.keepOnly(Set(everyone.map(\.id)))
        side.fanOut.adopt(everyone)
        side.fanOut.deliverCollected()
        // Held weakly (a capture that goes stops its thread at the next wake), in a `let`: a
        // `[weak self]` capture is a variable, checked for exclusive access at every wake.
        weak let capture = self
        do throws(SystemError) {
            side.loop = try ReadinessLoop(
                name: "iio \(description.deviceName)", fileDescriptor: reader.fileDescriptor,
                body: { wake in capture?.woke(wake) ?? .stop },
                onExit: { [reading, descriptor = reader.descriptor] in reading.withLock { _ in descriptor.close() } })
        } catch {
            log.error(
                "\(description.deviceName) (\(description.name)): cannot start its reading thread: \(error); not recording it")
            setStatus(.failed("\(error)"))
            side.reader = nil
            reader.close()
        }
    }

    /// On the loop's thread: the fd is readable, a held batch fell due, or `poll` failed. What
    /// the streams deliver in one wake is one hand-over (`handOver`): the chip's streams reach
    /// the store together, for one writer wake-up. Most wakes deliver nothing (a batch spans
    /// seconds of reads) and open no hand-over: its hops, cold after 100 ms of sleep, cost ≈ 6 %
    /// of the daemon's CPU (docs/measurements/iio.md). The fan-out collects what a wake delivers,
    /// and the hand-over sends it under the lock again: whoever holds the lock sends what waits
    /// first, so a stream's events keep their order, and the store's drain after the hand-over
    /// runs without the lock.
    private func woke(_ wake: ReadinessLoop.Wake) -> ReadinessLoop.Next {
        let (next, delivered) = reading.withLock { side -> (ReadinessLoop.Next, Bool) in
            let next: ReadinessLoop.Next
            switch wake {
            case .readable:
                next = readable(&side)
            case .deadline:
                next = .wait(nanoseconds: side.fanOut.deliverDue(at: clock.boottimeNanoseconds(), hold: deliveryHold))
            case let .failed(error):
                readFailed(error, &side)
                next = .stop
            }
            return (next, side.fanOut.hasCollected)
        }
        if delivered {
            handOver { reading.withLock { $0.fanOut.deliverCollected() } }
        }
        return next
    }

    /// The fd is readable: drain, stamp, split per stream, hand over what is due. Returns how
    /// long the loop may sleep before a held batch falls due.
    private func readable(_ side: inout ReadingSide) -> ReadinessLoop.Next {
        guard side.reader != nil else { return .stop }
        // The buffers are moved into locals for the drain, whose closure runs once per scan.
        // `values` keeps the size of the largest read so far (only the first `stamps.count` scans'
        // values are this read's): each scan is decoded straight into its slots, with no append
        // (a uniqueness and a capacity check) per value.
        var values: [Int64] = []
        var stamps: [Int64] = []
        swap(&values, &side.values)
        swap(&stamps, &side.stamps)
        stamps.removeAll(keepingCapacity: true)
        var failure: SystemError?
        var endOfFile = false
        let decoder = self.decoder
        let width = plan.layout.valueCount
        var used = 0
        do throws(SystemError) {
            endOfFile = try side.reader!.drain { scan in
                let start = used
                used += width
                if values.count < used { values.append(contentsOf: repeatElement(0, count: max(width, values.count))) }
                let stamp = values.withUnsafeMutableBufferPointer { all in
                    decoder.decode(scan, into: UnsafeMutableBufferPointer(rebasing: all[start..<used]))
                }
                stamps.append(stamp ?? 0)
            }.endOfFile
        } catch {
            failure = error
        }
        swap(&values, &side.values)
        swap(&stamps, &side.stamps)
        let receive = clock.boottimeNanoseconds()
        side.fanOut.keepsRecent = joining.load(ordering: .sequentiallyConsistent) > 0
        distribute(receivedAt: receive, &side)
        if let failure {
            readFailed(failure, &side)
            return .stop
        }
        if endOfFile {
            log.notice(
                "\(description.deviceName): \(devnode) reached end of file (a regular file or a closed mock, not a kernel buffer); no more scans"
            )
            setStatus(.failed("\(devnode) reached end of file"))
            side.reader = nil
            side.fanOut.deliverAll()
            return .stop
        }
        return .wait(nanoseconds: side.fanOut.deliverDue(at: receive, hold: deliveryHold))
    }

    /// Stamps the drained scans (`TimestampMapping`) and hands them to every stream.
    private func distribute(receivedAt receive: Int64, _ side: inout ReadingSide) {
        let count = side.stamps.count
        guard count > 0 else { return }
        if !side.sawScans {
            side.sawScans = true
            setStatus(.recording)
        }
        side.failuresWithoutData = 0
        side.sensorTimes.removeAll(keepingCapacity: true)
        switch side.mapping {
        case .boottime:
            side.sensorTimes.append(contentsOf: side.stamps)
        case let .mapped(clock):
            let offset = pairing.boottimeOffset(of: clock)
            for stamp in side.stamps { side.sensorTimes.append(stamp &+ offset) }
        case .estimated:
            let period = estimatedPeriod ?? 0
            for scan in 0..<count {
                side.sensorTimes.append(
                    receive.subtractingSaturating(Int64(count - 1 - scan).multipliedSaturating(by: period)))
            }
        }
        let dropped = side.fanOut.distribute(values: side.values, sensorTimes: side.sensorTimes, receivedAt: receive)
        if dropped > 0 {
            log.warning(
                "\(description.deviceName): \(dropped) of \(count) scans had an impossible timestamp and were dropped (\(side.fanOut.implausibleScans) in all); recorded as a gap"
            )
        }
    }

    /// Reading stops (the loop's thread leaves and closes the fd); what the streams hold goes out.
    private func readFailed(_ error: SystemError, _ side: inout ReadingSide) {
        side.reader = nil
        side.fanOut.deliverAll()
        let name = "\(description.deviceName) (\(description.name))"
        if error.errno == ENODEV {
            log.warning("\(name): \(error): the device is gone; no more scans until it is added again")
            setStatus(.waiting("the device is gone (\(error))"))
            return
        }
        side.failuresWithoutData += 1
        side.fanOut.interrupt("read failed: \(error)")
        guard side.failuresWithoutData <= 3 else {
            log.error("\(name): \(error) again; giving up until recording restarts")
            setStatus(.failed("\(error), four times in a row"))
            return
        }
        setStatus(.waiting("restarting the buffer after \(error)"))
        log.warning("\(name): \(error); restarting the buffer")
        controlQueue.asyncAfter(deadline: .now() + restartDelay) { [weak self] in self?.restart() }
    }

    private func setStatus(_ status: CaptureStatus) { currentStatus.withLock { $0 = status } }
}
