import Dispatch
import SensorKitModel
import SensorSystem
import SystemBus

/// Runs the watcher while either usage stream records and keeps one `UsageInterval` per stream
/// (each started when its stream starts, each with a contact key of its own drawn anew at every
/// interval boundary), all on one serial queue. Timers and clocks are injected.
public final class ModemUsageRecorder: @unchecked Sendable {
    // @unchecked: every field but the constants is touched only on `queue`.
    public let queue = DispatchQueue(label: "sensorkitd.modem")
    private let settings: ModemSettings
    private let clock: any SystemClock
    private let scheduler: any Scheduler
    private let newKey: @Sendable () -> ContactKey
    private var watcher: ModemManagerWatcher!
    private var recordings: [ModemUsageKind: Recording] = [:]

    private struct Recording {
        var interval: UsageInterval
        var key: ContactKey
        var timer: (any ScheduledTimer)?
        let descriptor: SourceDescriptor
        let deliver: @Sendable (SourceEvent) -> Void
    }

    public init(
        bus: DBusBus, settings: ModemSettings, clock: any SystemClock, scheduler: any Scheduler = DispatchScheduler(),
        log: @escaping @Sendable (LogMessage) -> Void, newKey: @escaping @Sendable () -> ContactKey = { ContactKey.random() }
    ) {
        self.settings = settings
        self.clock = clock
        self.scheduler = scheduler
        self.newKey = newKey
        watcher = ModemManagerWatcher(bus: bus, queue: queue, scheduler: scheduler, log: log) { [weak self] in self?.observed($0)
        }
    }

    /// Starts `usage`'s stream (idempotent); returns at once.
    public func start(_ usage: ModemUsageKind, descriptor: SourceDescriptor, deliver: @escaping @Sendable (SourceEvent) -> Void) {
        queue.async { [self] in
            guard recordings[usage] == nil else { return }
            let now = clock.boottimeNanoseconds()
            let length = settings.intervalNanoseconds
            var interval = UsageInterval(
                start: now, firstEnd: UsageInterval.firstEnd(boot: now, realtime: clock.realtimeNanoseconds(), length: length),
                length: length)
            // The stream starts knowing what the watcher knows.
            _ = interval.on(.observable(watcherObservable), at: now)
            recordings[usage] = Recording(interval: interval, key: newKey(), descriptor: descriptor, deliver: deliver)
            schedule(usage)
            watcher.start()
        }
    }

    /// Stops `usage`'s stream, delivering its interval so far before it returns.
    public func stop(_ usage: ModemUsageKind) {
        queue.sync {
            guard var recording = recordings.removeValue(forKey: usage) else { return }
            recording.timer?.cancel()
            let last = recording.interval.finish(at: clock.boottimeNanoseconds())
            deliver([last], of: usage, recording)
            if recordings.isEmpty {
                watcher.stop()
                watcherObservable = false
            }
        }
    }

    /// Takes `observation` on the recorder's queue as if the watcher had reported it: the
    /// daemon-level tests drive the real recorder with what ModemManager's watcher would give,
    /// on hand-moved time, without a bus.
    package func observe(_ observation: ModemManagerWatcher.Observation) {
        queue.async { [self] in observed(observation) }
    }

    private var watcherObservable = false

    private func observed(_ observation: ModemManagerWatcher.Observation) {
        dispatchPrecondition(condition: .onQueue(queue))
        let now = clock.boottimeNanoseconds()
        if case .observable(let observable) = observation { watcherObservable = observable }
        for usage in ModemUsageKind.allCases {
            guard var recording = recordings[usage] else { continue }
            // Intervals that ended first close under their own key; the number is hashed with the new one.
            let closed = recording.interval.close(upTo: now)
            if !closed.isEmpty { recording.key = newKey() }
            let event: UsageEvent?
            switch observation {
            case .observable(let observable): event = .observable(observable)
            case let .call(path, call, fresh):
                // A call that was over before it was first listed happened before we watched.
                event =
                    !fresh && call.state == .terminated
                    ? nil
                    : .call(
                        path, direction: call.direction, state: call.state, contact: recording.key.digest(number: call.number))
            case let .callState(path, state): event = .call(path, direction: .unknown, state: state, contact: nil)
            case .callGone(let path): event = .callGone(path)
            case let .message(direction, number): event = .message(direction, contact: recording.key.digest(number: number))
            }
            if let event { _ = recording.interval.on(event, at: now) }
            recordings[usage] = recording
            deliver(closed, of: usage, recording)
        }
    }

    private func schedule(_ usage: ModemUsageKind) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard var recording = recordings[usage] else { return }
        let delay = max(0, recording.interval.end.subtractingSaturating(clock.boottimeNanoseconds()))
        recording.timer?.cancel()
        recording.timer = scheduler.schedule(on: queue, after: delay, repeating: nil) { [weak self] in self?.tick(usage) }
        recordings[usage] = recording
    }

    private func tick(_ usage: ModemUsageKind) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard var recording = recordings[usage] else { return }
        let closed = recording.interval.close(upTo: clock.boottimeNanoseconds())
        if !closed.isEmpty { recording.key = newKey() }
        recordings[usage] = recording
        deliver(closed, of: usage, recording)
        schedule(usage)
    }

    private func deliver(_ actions: [UsageAction], of usage: ModemUsageKind, _ recording: Recording) {
        guard !actions.isEmpty else { return }
        let boot = clock.bootID
        var reports: [UsageReport] = []
        func flush() {
            guard !reports.isEmpty else { return }
            recording.deliver(
                .samples(
                    ModemUsageSamples.batch(
                        reports, usage, boot: boot, receivedAt: clock.boottimeNanoseconds(), for: recording.descriptor)))
            reports = []
        }
        for action in actions {
            switch action {
            case .report(let report): reports.append(report)
            case let .unobserved(from, to):
                flush()
                recording.deliver(
                    .gap(
                        from: BootInstant(boot: boot, nanoseconds: from), to: BootInstant(boot: boot, nanoseconds: to),
                        reason: .systemInitiated,
                        why: "no modem could be observed (ModemManager absent or without a voice or messaging modem)"))
            }
        }
        flush()
    }
}
