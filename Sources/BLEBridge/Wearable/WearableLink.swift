import Dispatch
import SensorKitModel
import SensorSystem

/// One configured wearable: runs its `WearableLinkMachine` on the driver's queue. It hands the
/// machine each event with the boot clock's time and carries out what the machine answers —
/// connects over the transport, reads, writes and subscribes over the `GATTLink`, registers the
/// wearable's streams, delivers their samples and gaps, publishes their status and logs — and
/// decides nothing itself (docs/ble.md, "The wearable link"). Confined to the driver's queue.
final class WearableLink: @unchecked Sendable {
    // @unchecked: every field is confined to `queue`.
    let configuration: WearableConfiguration
    private let queue: DispatchQueue
    private let transport: any BLETransport
    private let registry: any SourceRegistry
    private let clock: any SystemClock
    private let journal: Journal
    /// Each cause is logged the first time and then summed up with its count (malformed input,
    /// a failing read) so the log shows every problem and its scale without drowning.
    private let problems: RecurringProblems

    private var machine: WearableLinkMachine
    private var link: (any GATTLink)?
    /// The peripheral last connected, for what the transport knows of it (`BLETransport.status`).
    private var connectedAddress: String?
    /// Counts connections: events of a link already closed are not the current link's.
    private var generation = 0
    /// The stream each sensor's samples and gaps go to now.
    private var streams: [SRSensor: WearableStream] = [:]
    /// PPG streams by the frame type whose columns they store: type 0's is registered with the
    /// others, a wide type's when its first frame comes (docs/ble.md §8).
    private var ppgStreams: [PPGFrameKind: WearableStream] = [:]
    /// The device the streams are registered as, for the PPG streams registered later.
    private var registered: (device: SRDevice, location: BodySensorLocation?)?
    private var stopped: [() -> Void] = []
    /// Events that arrived while actions were being carried out (a link may answer a request
    /// before the call returns): handed to the machine, in order, once those actions are done.
    private var inbox: [(event: WearableLinkMachine.Event, time: Int64)] = []
    private var draining = false

    init(
        configuration: WearableConfiguration, queue: DispatchQueue, transport: any BLETransport, registry: any SourceRegistry,
        clock: any SystemClock, journal: Journal, durations: @escaping @Sendable (Int64) -> String
    ) {
        self.configuration = configuration
        self.queue = queue
        self.transport = transport
        self.registry = registry
        self.clock = clock
        self.journal = journal
        problems = RecurringProblems(journal)
        machine = WearableLinkMachine(configuration: configuration, durations: durations)
    }

    var isSearching: Bool { machine.phase == .searching }

    /// A scan pass: a searching wearable connects to its report, if any, before this returns.
    func scanned(_ reports: [BLEScanReport]) { deliver(.scanned(reports)) }

    func tick(now: Int64) {
        dispatchPrecondition(condition: .onQueue(queue))
        let boot = clock.bootID
        for stream in allStreams { stream.tick(now: now, boot: boot) }
        deliver(.tick, at: now)
    }

    /// A planned disconnect is coming: PMD STOP for every running stream; `done` runs once the
    /// device confirmed them all (or at once when none runs, or when the link drops).
    func stopStreams(_ done: @escaping () -> Void) {
        stopped.append(done)
        deliver(.stopRequested)
    }

    func close() { deliver(.close) }

    private func deliver(_ event: WearableLinkMachine.Event, at time: Int64? = nil) {
        dispatchPrecondition(condition: .onQueue(queue))
        inbox.append((event, time ?? clock.boottimeNanoseconds()))
        guard !draining else { return }
        draining = true
        defer { draining = false }
        while !inbox.isEmpty {
            let (event, time) = inbox.removeFirst()
            for action in machine.on(event, at: time) { perform(action) }
        }
    }

    private func received(_ event: GATTLinkEvent, generation: Int) {
        guard generation == self.generation else { return }
        deliver(.gatt(event))
    }

    private func recordingChanged(_ stream: WearableStream, on: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        let now = clock.boottimeNanoseconds()
        if on { stream.started(at: now) }
        deliver(.recording(stream.sensor, on: on), at: now)
    }

    private func perform(_ action: WearableLinkMachine.Action) {
        switch action {
        case .connect(let report):
            connectedAddress = report.address
            generation += 1
            let current = generation
            do {
                link = try transport.connect(report, queue: queue) { [weak self] event in
                    self?.received(event, generation: current)
                }
                deliver(.connected)
            } catch {
                deliver(.connectFailed(error))
            }
        case .read(let characteristic): link?.read(characteristic)
        case .subscribe(let characteristic): link?.subscribe(characteristic)
        case .write(let characteristic, let value): link?.write(characteristic, value)
        case .disconnect:
            link?.close()
            link = nil
            generation += 1
        case .register(let device, let location):
            register(device, location: location)
        case .unregister:
            for stream in allStreams { registry.remove(source: stream.descriptor.source) }
            streams = [:]
            ppgStreams = [:]
            registered = nil
        case .emit(let sensor, let sample, let time):
            guard let stream = streams[sensor] else { return }
            emit(sample, at: time, to: stream)
        case .openGap(let sensor, let after, let time, let why):
            streams[sensor]?.openGap(after: after, now: time, why: why)
        case .status(let status):
            let transportStatus = connectedAddress.map(transport.status(of:)) ?? [:]
            for (sensor, values) in status {
                for stream in allStreams where stream.sensor == sensor {
                    stream.setStatus(values.merging(transportStatus) { own, _ in own })
                }
            }
        case .log(.info(let line)): journal.info(line)
        case .log(.notice(let line)): journal.notice(line)
        case .log(.warning(let line)): journal.warning(line)
        case .log(.problem(let key, let line)): problems.report("wearable \(configuration.name): \(key)", "<4>" + line)
        case .stopped:
            let done = stopped
            stopped = []
            for callback in done { callback() }
        }
    }

    /// Every registered stream, each once.
    private var allStreams: [WearableStream] {
        Array(streams.values) + ppgStreams.values.filter { wide in !streams.values.contains { $0 === wide } }
    }

    private func register(_ device: SRDevice, location: BodySensorLocation?) {
        registered = (device, location)
        for sensor in configuration.streams {
            let descriptor = WearableSamples.descriptor(sensor, device: device, wearable: configuration.name, location: location)
            streams[sensor] = WearableStream(descriptor: descriptor, queue: queue, clock: clock) { [weak self] stream, on in
                self?.recordingChanged(stream, on: on)
            }
        }
        ppgStreams = streams[.photoplethysmogram].map { [.type0: $0] } ?? [:]
        for stream in streams.values.sorted(by: { $0.sensor.rawValue < $1.sensor.rawValue }) { registry.add(stream) }
    }

    /// The PPG stream of `kind`'s columns, registered now if its frame type is new; it becomes the
    /// stream PPG samples and gaps go to. A gap the previous one held open ends at `from`, where
    /// the new stream's samples begin: the device switched frame types, no time was lost.
    private func ppgStream(_ kind: PPGFrameKind, from: Int64) -> WearableStream? {
        guard let current = streams[.photoplethysmogram], let registered else { return nil }
        let target: WearableStream
        if let known = ppgStreams[kind] {
            target = known
        } else {
            let descriptor = WearableSamples.descriptor(
                .photoplethysmogram, device: registered.device, wearable: configuration.name, location: registered.location,
                ppgFrame: kind)
            // In the state of the stream it takes over from, which may itself still wait for its
            // start: the first frames of the new type are then held too, not dropped.
            target = current.sibling(descriptor: descriptor) { [weak self] stream, on in
                self?.recordingChanged(stream, on: on)
            }
            ppgStreams[kind] = target
            registry.add(target)
            journal.info(
                "wearable \(configuration.name): PMD ppg frame type \(kind.rawValue) carries \(kind.columns.count) values a sample; its samples go to a stream of their own (\(descriptor.source))"
            )
        }
        if target !== current {
            if current.hasOpenGap { current.closeGap(at: from, boot: clock.bootID) }
            streams[.photoplethysmogram] = target
        }
        return target
    }

    private func emit(_ sample: WearableLinkMachine.Sample, at time: Int64, to stream: WearableStream) {
        let boot = clock.bootID
        switch sample {
        case .heartRate(let beat, let contact):
            stream.emit(
                boot: boot, times: [time], receiveTimes: [time], values: WearableSamples.heartRate(beat, contact: contact))
        case .wristState(let onWrist):
            stream.emit(boot: boot, times: [time], receiveTimes: [time], values: WearableSamples.wrist(onWrist: onWrist))
        case .pulseIntervals(let beats):
            let times = beats.map(\.time)
            stream.emit(
                boot: boot, times: times, receiveTimes: .init(repeating: time, count: times.count),
                values: WearableSamples.pulseIntervals(beats))
        case .pmd(let timed, let kind, let sampleRate, let sessionStart, let factor):
            let receive = [Int64](repeating: timed.receiveTime, count: timed.sampleTimes.count)
            switch kind.measurementType {
            case .ecg:
                let values = WearableSamples.electrocardiogram(timed, sampleRate: sampleRate, sessionStart: sessionStart)
                stream.emit(boot: boot, times: timed.sampleTimes, receiveTimes: receive, values: values)
            case .acc:
                // The machine refuses a FACTOR that could make this nil; were it nil, nothing wrong is stored.
                guard let values = WearableSamples.acceleration(timed, factor: factor) else {
                    stream.openGap(after: nil, now: timed.receiveTime, why: "PMD acc: values beyond the stored range")
                    return
                }
                stream.emit(boot: boot, times: timed.sampleTimes, receiveTimes: receive, values: values)
            default:
                // Each PPG frame type's samples go to the stream registered for its columns, never
                // into another's.
                guard let kind = PPGFrameKind(frame: timed.frame), let first = timed.sampleTimes.first,
                    let values = WearableSamples.photoplethysmogram(timed, kind: kind),
                    let target = ppgStream(kind, from: first)
                else {
                    stream.openGap(
                        after: nil, now: timed.receiveTime,
                        why: "PMD ppg frame type \(timed.frame.frameType): values that fit no stored column set")
                    return
                }
                target.emit(boot: boot, times: timed.sampleTimes, receiveTimes: receive, values: values)
            }
        }
    }
}
