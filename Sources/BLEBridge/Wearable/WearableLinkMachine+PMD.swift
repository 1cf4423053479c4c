import SensorSystem

/// The PMD half of the link machine: every stream of `PMDStreamKind.all` is started (GET
/// settings → START) while it is recorded and stopped (STOP) when not, its frames are put on the
/// host timeline, and what the device refuses or stops on its own is a gap (docs/ble.md, "PMD").
extension WearableLinkMachine {
    /// Starts the PMD streams that are recorded and stops the others.
    mutating func applyPMD() {
        if phase == .ready, let session {
            // A staked PMD stream that cannot run on this link records nothing: that is a gap.
            for kind in PMDStreamKind.all where !kind.supplementary {
                guard let why = session.pmdBlocked ?? session.pmd[kind.measurementType]?.refusal else { continue }
                openGap(kind.sensor, after: nil, why: "\(kind.sensor.rawValue) not recorded: \(why)")
            }
        }
        guard phase == .ready, let session, session.pmdReady, session.controlPoint != nil else { return }
        for kind in PMDStreamKind.all where isRegistered(kind.sensor) {
            let type = kind.measurementType
            let want = recording.contains(kind.sensor) && !stopRequested
            let current = session.pmd[type]?.phase ?? .idle
            if want, current == .idle {
                if let features = session.features, !features.types.contains(type) {
                    if kind.supplementary {
                        // PPI on a device without it (an H10): heart rate comes from HRS alone.
                        self.session?.pmd[type] = PMDRun(phase: .refused, refusal: "the device does not offer PMD \(type)")
                        continue
                    }
                    problem(
                        "feature:\(type)",
                        "\(label): the device does not offer PMD \(type); \(kind.sensor.rawValue) is not recorded")
                    refuse(kind, "the device does not offer PMD \(type)")
                    continue
                }
                setPhase(type, .gettingSettings)
                command(PMDCommand.getMeasurementSettings(type).encoded())
            } else if !want, current == .running || current == .starting {
                stop(kind)
            }
        }
    }

    /// Every running stream is stopped; `.stopped` once the device confirmed them all.
    mutating func stopAll() {
        stopRequested = true
        if session?.controlPoint != nil {
            for kind in PMDStreamKind.all {
                let current = session?.pmd[kind.measurementType]?.phase ?? .idle
                if current == .running || current == .starting { stop(kind) }
            }
        }
        if session?.pmd.values.contains(where: { $0.phase == .stopping }) != true {
            stopRequested = false
            actions.append(.stopped)
        }
    }

    private mutating func stop(_ kind: PMDStreamKind) {
        dropEarly(kind, "the stream was stopped before it was answered")
        setPhase(kind.measurementType, .stopping)
        command(PMDCommand.stopMeasurement(kind.measurementType).encoded())
        flush(kind)
    }

    private mutating func setPhase(_ type: PMDMeasurementType, _ phase: PMDPhase) {
        session?.pmd[type, default: PMDRun()].phase = phase
    }

    /// Writes a PMD command. A response in parts continues only the command just sent: parts
    /// left over from before (a device that never ended them) are dropped here.
    private mutating func command(_ bytes: [UInt8]) {
        guard let controlPoint = session?.controlPoint else { return }
        session?.responses.reset()
        actions.append(.write(controlPoint, bytes))
    }

    /// The device will not run `kind` on this link: it is not started again until the next
    /// connection, and a staked stream's time without it is a gap (none for a supplementary
    /// stream: its sensor goes on from HRS).
    /// Frames that came before a refused START are dropped inside the same gap.
    private mutating func refuse(_ kind: PMDStreamKind, _ why: String) {
        let early = session?.early.removeValue(forKey: kind.measurementType)
        session?.pmd[kind.measurementType] = PMDRun(phase: .refused, refusal: why)
        guard !kind.supplementary else { return }
        openGap(
            kind.sensor, after: nil, at: early?.firstReceived,
            why: why + (early.map { "; \($0.count) frames that came before the answer to its START were dropped" } ?? ""))
    }

    /// Whether a FACTOR can scale a stream's values: finite, positive, at most this.
    static let factorLimit: Float = 1000

    /// The FACTOR a START response's settings name (1 when none), or why it cannot be used.
    static func factor(of response: PMDResponse) -> Result<Float, PMDFactorProblem> {
        guard !response.parameters.isEmpty else { return .success(1) }
        guard let settings = try? PMDSetting.decodeList(response.parameters[...]) else {
            return .failure(PMDFactorProblem("its START response's settings do not decode, so its FACTOR is unknown"))
        }
        guard let factor = settings.lazy.compactMap(\.factor).first else { return .success(1) }
        guard factor.isFinite, factor > 0, factor <= factorLimit else {
            return .failure(PMDFactorProblem("its START response names FACTOR \(factor), outside (0, \(factorLimit)]"))
        }
        return .success(factor)
    }

    mutating func controlPointIndication(_ value: [UInt8]) {
        let indication: PMDControlPointIndication
        do {
            indication = try PMDControlPointIndication(decoding: value)
        } catch {
            problem(
                "cp",
                "\(label): a PMD control-point indication did not decode (\(error)); counted, and summed up in the log later")
            return
        }
        switch indication {
        case .measurementsStopped(let types):
            for raw in types {
                guard let type = PMDMeasurementType(rawValue: raw), let kind = PMDStreamKind.of(type),
                    session?.pmd[type]?.phase == .running
                else { continue }
                flush(kind)
                if !kind.supplementary { openGap(kind.sensor, after: nil, why: "the device stopped the stream") }
                // Started again after a pause that doubles while the device keeps stopping it.
                let ranFor = now &- (sessionStarts[type] ?? now)
                let delay = pmdBackoff[type, default: RetryBackoff.wearable].linkLost(upFor: ranFor)
                session?.pmd[type] = PMDRun(phase: .pausing, retryAt: now &+ delay)
                problem(
                    "stopped:\(type)",
                    "\(label): the device stopped PMD \(type) on its own; starting it again in \(durations(delay)) (the pause doubles while it keeps doing so); counted, and summed up in the log later"
                )
            }
            applyPMD()
        case .response(let part):
            guard var responses = session?.responses else { return }
            let outcome = responses.add(part)
            session?.responses = responses
            switch outcome {
            case .incomplete:
                return
            case .refused(let why):
                problem(
                    "cp-continuation",
                    "\(label): a PMD control-point response in parts was dropped (\(why)); counted, and summed up in the log later"
                )
                if let type = PMDMeasurementType(rawValue: part.measurementType), let kind = PMDStreamKind.of(type) {
                    switch session?.pmd[type]?.phase ?? .idle {
                    case .gettingSettings, .starting: refuse(kind, "its control-point response was dropped (\(why))")
                    default: break
                    }
                }
            case .complete(let response):
                guard let type = PMDMeasurementType(rawValue: response.measurementType), let kind = PMDStreamKind.of(type)
                else { return }
                pmdResponse(response, kind: kind)
            }
        }
    }

    private mutating func pmdResponse(_ response: PMDResponse, kind: PMDStreamKind) {
        guard session?.controlPoint != nil else { return }
        let type = kind.measurementType
        switch (response.opcode, session?.pmd[type]?.phase ?? .idle) {
        case (0x01, .gettingSettings):
            guard response.status == .success, let offered = try? PMDSetting.decodeList(response.parameters[...]) else {
                problem("settings:\(type)", "\(label): PMD \(type) settings refused (\(response.status)); not recorded")
                refuse(kind, "PMD \(type) settings refused (\(response.status))")
                return
            }
            let chosen = kind.chosenSettings(offered)
            sampleRates[type] = chosen.first { $0.kind == .sampleRate }?.values.first.map { Int($0) } ?? kind.fallbackSampleRate
            setPhase(type, .starting)
            command(PMDCommand.startMeasurement(type, settings: chosen).encoded())
        case (0x02, .starting):
            switch response.status {
            case .success:
                if type == .acc {
                    // FACTOR scales the stored values: a stream without a usable one is not recorded.
                    switch Self.factor(of: response) {
                    case .success(let factor): factors[type] = factor
                    case .failure(let problem):
                        self.problem("factor:\(type)", "\(label): PMD \(type) not recorded: \(problem.why)")
                        refuse(kind, problem.why)
                        // It runs on the device: stopped there, and refused here until the next link.
                        command(PMDCommand.stopMeasurement(type).encoded())
                        publishStatus()
                        return
                    }
                }
                setPhase(type, .running)
                sessionStarts[type] = now
                if type == .ppi {
                    pulses = PulseIntervalTimeline()
                    log(.info("\(label): PMD \(type) streaming (PP intervals as they come)"))
                } else {
                    let rate = sampleRates[type] ?? kind.fallbackSampleRate
                    timelines[type] = PMDStreamTimeline(measurementType: type, sampleRateHz: rate, hold: configuration.frameHold)
                    log(.info("\(label): PMD \(type) streaming at \(rate) Hz"))
                }
                replayEarly(kind)
            case .alreadyInState:
                // Still streaming from before a lost link: stop it, then start afresh.
                dropEarly(kind, "the device was still streaming from before; it is started afresh")
                setPhase(type, .restarting)
                command(PMDCommand.stopMeasurement(type).encoded())
            case .invalidMTU:
                let mtu = session?.mtu ?? 23
                problem(
                    "pmd-mtu:\(type)",
                    "\(label): the device refused PMD \(type) for the link's MTU (\(mtu)); recording heart rate only")
                refuse(kind, "the device refused PMD \(type) for the link's MTU (\(mtu))")
            default:
                problem(
                    "start:\(type):\(response.status)", "\(label): the device refused to start PMD \(type) (\(response.status))")
                refuse(kind, "the device refused to start PMD \(type) (\(response.status))")
            }
        case (0x03, .stopping), (0x03, .restarting):
            setPhase(type, .idle)
            if stopRequested, session?.pmd.values.contains(where: { $0.phase == .stopping }) != true {
                stopRequested = false
                actions.append(.stopped)
                return
            }
            applyPMD()
        default:
            break
        }
        publishStatus()
    }

    // MARK: Frames

    /// PMD frames that came while their stream's START was not answered yet. Over bluez a
    /// notification comes through the acquired socket and the START answer as a D-Bus signal, so
    /// the first frames a device sends after starting can overtake the answer. The newest `limit`
    /// are kept (at most 8 notifications of at most the ATT MTU each) and go through the stream
    /// at the times they came once START is answered; older ones are dropped and recorded as a
    /// gap, and so are all of them if the START fails or the stream stops first.
    struct EarlyFrames: Equatable, Sendable {
        static let limit = 8

        struct Frame: Equatable, Sendable {
            var value: [UInt8]
            var receivedAt: Int64
        }

        private(set) var frames: [Frame] = []
        /// Frames dropped to keep the newest `limit`, and when the first of them came.
        private(set) var dropped = 0
        private(set) var droppedFrom: Int64?

        /// Every frame that came early, kept or dropped.
        var count: Int { frames.count + dropped }

        var firstReceived: Int64? { droppedFrom ?? frames.first?.receivedAt }

        mutating func add(_ value: [UInt8], at time: Int64) {
            frames.append(Frame(value: value, receivedAt: time))
            guard frames.count > Self.limit else { return }
            let oldest = frames.removeFirst()
            dropped += 1
            if droppedFrom == nil { droppedFrom = oldest.receivedAt }
        }
    }

    mutating func pmdFrame(_ value: [UInt8]) {
        if let first = value.first, let type = PMDMeasurementType(rawValue: first & 0x3F),
            session?.pmd[type]?.phase == .starting
        {
            session?.early[type, default: EarlyFrames()].add(value, at: now)
            return
        }
        receiveFrame(value, at: now)
    }

    /// START is answered and the stream runs: the frames that overtook the answer go through it,
    /// in order and at the times they came, after the gap of those dropped to keep the newest.
    private mutating func replayEarly(_ kind: PMDStreamKind) {
        let type = kind.measurementType
        guard let early = session?.early.removeValue(forKey: type) else { return }
        if early.dropped > 0 {
            problem(
                "early:\(type)",
                "\(label): more than \(EarlyFrames.limit) PMD \(type) frames came before the answer to its START; the oldest were dropped and recorded as a gap; counted, and summed up in the log later"
            )
            // PPI's dropped intervals are no gap: until it delivers, HRS records the heart rate.
            if !kind.supplementary {
                openGap(
                    kind.sensor, after: nil, at: early.droppedFrom,
                    why:
                        "PMD \(type): \(early.dropped) frames that came before the answer to its START were dropped (the newest \(EarlyFrames.limit) are kept)"
                )
            }
        }
        for frame in early.frames { receiveFrame(frame.value, at: frame.receivedAt) }
    }

    /// The stream's START is not answered with a start: the frames that came before the answer
    /// are dropped, and a gap says so (none for PPI: HRS records the heart rate meanwhile).
    private mutating func dropEarly(_ kind: PMDStreamKind, _ why: String) {
        guard let early = session?.early.removeValue(forKey: kind.measurementType), !kind.supplementary else { return }
        openGap(
            kind.sensor, after: nil, at: early.firstReceived,
            why:
                "PMD \(kind.measurementType): \(early.count) frames that came before the answer to its START were dropped (\(why))"
        )
    }

    /// A frame of a running stream, received at `time`.
    private mutating func receiveFrame(_ value: [UInt8], at time: Int64) {
        if let first = value.first, first & 0x3F == PMDMeasurementType.ppi.rawValue, pulses != nil {
            pulseFrame(value, at: time)
            return
        }
        guard let first = value.first, let type = PMDMeasurementType(rawValue: first & 0x3F), let kind = PMDStreamKind.of(type),
            var timeline = timelines[type], session?.pmd[type]?.phase == .running
        else {
            problem(
                "frame-unexpected",
                "\(label): a PMD frame of a stream that is not running was dropped; counted, and summed up in the log later")
            return
        }
        let before = timeline.counters
        let events = timeline.receive(value, at: time)
        let after = timeline.counters
        timelines[type] = timeline
        let rate = sampleRates[type] ?? 0
        // What each counter that moved means, in one line per kind (logged once, then summed up).
        let findings: [(counter: KeyPath<PMDStreamTimeline.Counters, Int>, key: String, what: String)] = [
            (\.duplicates, "dup", "frame repeating the previous timestamp dropped"),
            (\.undecodable, "undecodable", "frame that does not decode dropped and recorded as a gap"),
            (\.resets, "reset", "device clock reset; recorded as a gap, mapping restarted"),
            (\.jumps, "jump", "device time jumped; recorded as a gap, mapping restarted"),
            (\.missing, "missing", "frames missing; recorded as a gap"),
            (
                \.implausible, "implausible",
                "frame holding more samples than \(timeline.maximumFrameSamples) or than its device time covers at \(rate) Hz dropped and recorded as a gap"
            ),
            (
                \.overRate, "rate",
                "samples arrive faster than \(PMDStreamTimeline.rateMargin) × \(rate) Hz; the excess is dropped and recorded as a gap"
            ),
            (
                \.clockRate, "clock-rate",
                "device clock runs at a rate the host clock disagrees with (beyond \(Int(ClockRateCheck.tolerance * 100)) %); its frames are refused and recorded as a gap until it agrees again"
            ),
        ]
        for finding in findings where after[keyPath: finding.counter] > before[keyPath: finding.counter] {
            problem("\(finding.key):\(type)", "\(label): PMD \(type) \(finding.what); counted, and summed up in the log later")
        }
        handle(events, of: kind)
    }

    mutating func handle(_ events: [PMDStreamTimeline.Event], of kind: PMDStreamKind) {
        guard isRegistered(kind.sensor), !events.isEmpty else { return }
        let type = kind.measurementType
        for event in events {
            switch event {
            case .gap(let gap):
                openGap(kind.sensor, after: gap.after, at: gap.receiveTime, why: "PMD \(type): \(gap.reason)")
            case .frame(let timed):
                uncertainty[type] = timed.uncertainty
                let sample = Sample.pmd(
                    timed, kind: kind, sampleRate: sampleRates[type] ?? kind.fallbackSampleRate,
                    sessionStart: sessionStarts[type] ?? 0, factor: factors[type] ?? 1)
                actions.append(.emit(kind.sensor, sample, at: timed.receiveTime))
            }
        }
        publishStatus()
    }

    // MARK: PP intervals

    /// A PPI frame received at `time`: its intervals become heart-rate rows, after the last row already recorded
    /// (intervals reaching back before an HRS row recorded while PPI had not yet found the
    /// pulse are dropped, counted: that time has its row).
    mutating func pulseFrame(_ value: [UInt8], at time: Int64) {
        guard var timeline = pulses, session?.pmd[.ppi]?.phase == .running else { return }
        let before = timeline.counters
        let events = timeline.receive(value, at: time)
        let after = timeline.counters
        pulses = timeline
        let findings: [(counter: KeyPath<PulseIntervalTimeline.Counters, Int>, key: String, what: String)] = [
            (\.duplicates, "dup", "frame repeating the previous timestamp dropped"),
            (\.undecodable, "undecodable", "frame that does not decode dropped and recorded as a gap"),
            (
                \.implausible, "implausible",
                "frame with an interval of 0 or over 3 s, or too many intervals, dropped and recorded as a gap"
            ),
            (\.overRate, "rate", "intervals arrive faster than a heart beats; the excess is dropped and recorded as a gap"),
        ]
        for finding in findings where after[keyPath: finding.counter] > before[keyPath: finding.counter] {
            problem("\(finding.key):ppi", "\(label): PMD ppi \(finding.what); counted, and summed up in the log later")
        }
        guard isRegistered(.heartRate) else { return }
        for event in events {
            switch event {
            case .gap(let reason, let after, let receiveTime):
                openGap(.heartRate, after: after, at: receiveTime, why: "PMD ppi: \(reason)")
            case .beats(let beats, let receiveTime):
                let kept = beats.filter { $0.time > (lastHeartRateTime ?? .min) }
                if kept.count < beats.count {
                    problem(
                        "ppi-overlap",
                        "\(label): PP intervals ending before the last heart-rate row were dropped (that time has its row); counted, and summed up in the log later"
                    )
                }
                lastPulseAt = receiveTime
                guard let last = kept.last else { continue }
                lastHeartRateTime = last.time
                actions.append(.emit(.heartRate, .pulseIntervals(kept), at: receiveTime))
            }
        }
        publishStatus()
    }

    /// Releases a PMD stream's held frames (it stops, or the link went down).
    mutating func flush(_ kind: PMDStreamKind) {
        if kind.measurementType == .ppi {
            // Nothing is held; HRS is the heart rate again at once.
            pulses = nil
            lastPulseAt = nil
            return
        }
        guard var timeline = timelines[kind.measurementType] else { return }
        let events = timeline.finish()
        timelines[kind.measurementType] = nil
        handle(events, of: kind)
    }
}

/// Why a START response's FACTOR cannot scale a stream.
struct PMDFactorProblem: Error, Equatable, Sendable {
    var why: String
    init(_ why: String) { self.why = why }
}
