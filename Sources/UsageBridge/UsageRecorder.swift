import Dispatch
import SensorKitModel

/// The host's `deviceUsageReport` source: events from logind and the session agent are fed in
/// (`feed`, any thread) and counted on the recorder's queue into the current interval
/// (`UsageLedger`); at every wall-clock quarter hour (or multiple of the interval set) the interval closes into one report — or,
/// when no source watched any of it, a deletion record. Every stretch in which a part of the report
/// (`UsageParts`) went unobserved is a deletion record beside the report. Events are dropped while nobody records.
public final class UsageRecorder: SensorSource, @unchecked Sendable {
    // @unchecked: every var is touched only on `queue`.
    public let descriptor: SourceDescriptor
    public let queue = DispatchQueue(label: "sensorkitd.device-usage")
    private let clock: any SystemClock
    private let scheduler: any Scheduler
    private let typing: (any TypingEpisodeFeed)?
    private let intervalNanoseconds: Int64
    private var ledger: UsageLedger?
    private var deliver: (@Sendable (SourceEvent) -> Void)?
    private var timer: (any ScheduledTimer)?
    /// Whether each source watches now, so a ledger started later knows it.
    private var watching: [UsageObservation: Bool] = [:]
    /// The last lock and screen state each source told, and the app last brought to the front, so
    /// a ledger started later begins with them: recording starts a few queue hops after the stake's
    /// reply, and an app that came to the front in between is still the one in front.
    private var states: [String: UsageEvent] = [:]
    /// Since when which parts go unobserved, while recording (nil: every part is observed): the
    /// stretch becomes a deletion record when what is unobserved changes or its interval closes with a report.
    private var incomplete: (since: Int64, missing: UsageParts)?
    /// Events counted since recording started, and the notification events among them (`status`).
    private var counted = (events: 0, notifications: 0, textInputs: 0)

    /// `typing`: the keyboards, read only while the report is recorded (nil: no text input is
    /// seen); `intervalNanoseconds`: a report's span (at least 1 s), aligned to wall-clock multiples.
    public init(
        clock: any SystemClock, scheduler: any Scheduler, typing: (any TypingEpisodeFeed)? = nil,
        intervalNanoseconds: Int64 = UsageSamples.intervalNanoseconds
    ) {
        self.clock = clock
        self.scheduler = scheduler
        self.typing = typing
        self.intervalNanoseconds = max(1_000_000_000, intervalNanoseconds)
        descriptor = UsageSamples.descriptor(intervalNanoseconds: self.intervalNanoseconds)
    }

    public var captureStatus: CaptureStatus? { queue.sync { ledger == nil ? .idle : .recording } }

    public var status: [String: String] {
        var status = queue.sync {
            [
                "watching": watching.filter(\.value).keys.map(\.name).sorted().joined(separator: ","),
                "events": "\(counted.events)", "notificationEvents": "\(counted.notifications)",
                "textInputSessions": "\(counted.textInputs)",
            ]
        }
        status["typing"] = typing?.typingStatus ?? "off"
        return status
    }

    /// Counts `event` into the current interval (asynchronously, in the order fed).
    public func feed(_ event: UsageEvent) {
        queue.async { [self] in
            switch event {
            case .watching(let source, let on, _): watching[source] = on
            case .locked(_, _, let source): states["locked \(source.name)"] = event
            case .screen(_, _, let source): states["screen \(source.name)"] = event
            case .foreground: states["foreground"] = event
            default: break
            }
            guard ledger != nil else { return }
            ledger!.on(event)
            if case .watching(_, _, let at) = event { watchingChanged(at: at) }
            counted.events += 1
            if case .notification = event { counted.notifications += 1 }
            if case .textInput = event { counted.textInputs += 1 }
        }
    }

    public func setRecording(_ recording: Bool, deliver: @escaping @Sendable (SourceEvent) -> Void) {
        if recording {
            queue.async { [self] in
                guard ledger == nil else { return }
                // The keyboards are opened only while the report is recorded; an episode is
                // stamped by its key's time and counted, like every event, in the order it arrives.
                typing?.watchEpisodes { [weak self] at in self?.feed(.textInput(at: at)) }
                self.deliver = deliver
                let now = clock.boottimeNanoseconds()
                var fresh = UsageLedger(start: now)
                for (source, on) in watching where on { fresh.on(.watching(source, true, at: now)) }
                for state in states.values.sorted(by: { $0.time < $1.time }) { fresh.on(state) }
                ledger = fresh
                let missing = UsageParts.unobserved(watching: watchedNow)
                incomplete = missing.isEmpty ? nil : (now, missing)
                counted = (0, 0, 0)
                scheduleClose()
            }
        } else {
            // Waits, so the interval so far is delivered before the pipeline stops taking events;
            // the keyboards close after it, so a start still queued cannot leave them open.
            queue.sync { finish() }
            typing?.watchEpisodes(nil)
        }
    }

    public func close() { setRecording(false) { _ in } }

    private func scheduleClose() {
        dispatchPrecondition(condition: .onQueue(queue))
        let now = clock.boottimeNanoseconds()
        let boundary = UsageSamples.nextBoundary(
            boot: now, realtime: clock.realtimeNanoseconds(), length: intervalNanoseconds)
        timer = scheduler.schedule(on: queue, after: boundary.subtractingSaturating(now), repeating: nil) { [weak self] in
            self?.closeInterval(at: boundary)
        }
    }

    private var watchedNow: Set<UsageObservation> { Set(watching.filter(\.value).keys) }

    /// A source started or stopped watching: where that changes which parts go unobserved, the
    /// stretch before is a deletion record saying which parts it lacked.
    private func watchingChanged(at: Int64) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let start = ledger?.start else { return }
        let missing = UsageParts.unobserved(watching: watchedNow)
        if let open = incomplete, open.missing == missing { return }
        if let open = incomplete { emitIncomplete(open.missing, from: max(open.since, start), to: max(at, start)) }
        incomplete = missing.isEmpty ? nil : (max(at, start), missing)
    }

    private func closeInterval(at boundary: Int64) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard var current = ledger else { return }
        let start = current.start
        let report = current.close(at: boundary)
        ledger = current
        emit(report, start: start, end: boundary)
        // A report with a stretch some part went unobserved: the stretch is recorded as deleted (an
        // interval nothing watched at all is one already).
        if report != nil, let open = incomplete { emitIncomplete(open.missing, from: max(open.since, start), to: boundary) }
        scheduleClose()
    }

    private func finish() {
        dispatchPrecondition(condition: .onQueue(queue))
        timer?.cancel()
        timer = nil
        guard var last = ledger else { return }
        let (start, now) = (last.start, clock.boottimeNanoseconds())
        if now > start {
            let report = last.close(at: now)
            emit(report, start: start, end: now)
            if report != nil, let open = incomplete { emitIncomplete(open.missing, from: max(open.since, start), to: now) }
        }
        incomplete = nil
        ledger = nil
        deliver = nil
    }

    private func emitIncomplete(_ missing: UsageParts, from: Int64, to: Int64) {
        guard let deliver, to > from else { return }
        deliver(
            .gap(
                from: BootInstant(boot: clock.bootID, nanoseconds: from), to: BootInstant(boot: clock.bootID, nanoseconds: to),
                reason: .systemInitiated, why: missing.why))
    }

    private func emit(_ report: UsageReport?, start: Int64, end: Int64) {
        guard let deliver else { return }
        if let report {
            deliver(
                .samples(
                    UsageSamples.batch([report], boot: clock.bootID, receivedAt: clock.boottimeNanoseconds(), for: descriptor)))
        } else {
            deliver(
                .gap(
                    from: BootInstant(boot: clock.bootID, nanoseconds: start),
                    to: BootInstant(boot: clock.bootID, nanoseconds: end),
                    reason: .systemInitiated, why: "no source watched the session (logind gone, no session agent)"))
        }
    }
}
