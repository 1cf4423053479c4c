import SensorKitModel
import SensorSystem

/// One configured wearable's protocol as a value: found by scan, connected, set up (MTU,
/// discovery, DIS, battery, body sensor location, HRS and — for PMD streams — PMD), recorded, and
/// reconnected with capped exponential backoff and full re-subscription after every loss
/// (docs/ble.md, "The wearable link"). It is handed events with the time they happened and
/// answers with actions at GATT level (characteristics, never ATT handles), so it runs over any
/// `GATTLink`; it owns no socket, reads no clock and starts no timer, and every path is tested by
/// feeding it events. `WearableLink` executes its actions.
struct WearableLinkMachine {
    enum Phase: String, Sendable {
        case searching, connecting, discovering, ready, waiting, stopped
    }

    enum Event: Sendable {
        /// What a scan pass saw (only a searching wearable looks).
        case scanned([BLEScanReport])
        /// The transport connected the report of the last `.connect`; GATT events follow.
        case connected
        case connectFailed(BLETransportError)
        case gatt(GATTLinkEvent)
        /// Time passes (the driver's tick): retries come due, held PMD frames are released.
        case tick
        /// A stream's recording was turned on or off (a stake came or went).
        case recording(SRSensor, on: Bool)
        /// A planned disconnect is coming: stop every running PMD stream; `.stopped` follows.
        case stopRequested
        /// The daemon stops: disconnect and stay stopped.
        case close
    }

    enum Sample: Equatable, Sendable {
        case heartRate(HeartRateTimeline.Beat, contact: HeartRateMeasurement.SensorContact?)
        case wristState(onWrist: Bool)
        /// `factor`: the START response's FACTOR (1 when it names none); applied to ACC.
        case pmd(PMDStreamTimeline.TimedFrame, kind: PMDStreamKind, sampleRate: Int, sessionStart: Int64, factor: Float)
        /// PP intervals of a PPI frame, each a heart-rate row at the pulse that ended it.
        case pulseIntervals([PulseIntervalTimeline.Beat])
    }

    /// A journal line; values in `LogMessage`s are escaped as the journal does everywhere.
    enum Log: Equatable, Sendable {
        case info(LogMessage), notice(LogMessage), warning(LogMessage)
        /// What a wearable's input can cause again and again: logged the first time, then summed up.
        case problem(key: String, String)

        static func == (a: Log, b: Log) -> Bool {
            switch (a, b) {
            case (.info(let x), .info(let y)), (.notice(let x), .notice(let y)), (.warning(let x), .warning(let y)):
                x.text == y.text
            case (.problem(let k, let x), .problem(let l, let y)): k == l && x == y
            default: false
            }
        }
    }

    enum Action: Equatable, Sendable {
        /// Connect to this report over the transport; answer `.connected` or `.connectFailed`.
        case connect(BLEScanReport)
        case read(GATTCharacteristicID)
        case subscribe(GATTCharacteristicID)
        /// A write with response: a PMD control-point command.
        case write(GATTCharacteristicID, [UInt8])
        /// Close the link (planned, or after it was lost); no event of it follows.
        case disconnect
        /// Register one stream per configured sensor as this device (once; again only for
        /// another device answering to the name, after `.unregister`).
        case register(SRDevice, location: BodySensorLocation?)
        case unregister
        /// Samples of a registered stream, received at `at`.
        case emit(SRSensor, Sample, at: Int64)
        /// A recorded stream lost data: a gap from `after` (its last sample when nil) until the
        /// next sample, a deletion record.
        case openGap(SRSensor, after: Int64?, at: Int64, why: String)
        /// Every registered stream's status for `sensorkitctl devices`.
        case status([SRSensor: [String: String]])
        case log(Log)
        /// Every stop asked for is done: the PMD streams are confirmed stopped (or the link is gone).
        case stopped
    }

    /// Heart-rate measurements a strap may send: real ones notify once a second (some once a
    /// beat, under 4 a second); more is a flood, dropped with a gap record.
    static let heartRateBound = (perSecond: 5.0, burst: 10.0)

    /// PPI delivers a frame every second or so once it has found the pulse; after this long
    /// without one, HRS measurements are recorded again.
    static let pulseFreshness: Int64 = 3_000_000_000

    /// Polar PMD frames need this ATT MTU (H10 ECG: 229-byte frames).
    static let pmdMTU = 232

    enum PMDPhase: Equatable, Sendable {
        case idle, gettingSettings, starting, running, stopping, restarting, refused
        /// The device stopped the stream on its own: started again at `retryAt`, backed off.
        case pausing
    }

    struct PMDRun: Equatable, Sendable {
        var phase = PMDPhase.idle
        /// Why the device will not run it on this link.
        var refusal: String?
        var retryAt: Int64?
    }

    /// What one connection found and set up; forgotten when the link ends, so the next connection
    /// runs the whole setup again.
    struct Session: Sendable {
        var connectedAt: Int64
        var mtu = 23
        var characteristics: [GATTCharacteristicID: GATTClient.Properties] = [:]
        var reads: Set<GATTCharacteristicID> = []
        /// PMD control point and data, once their subscriptions are confirmed.
        var pmdSubscribed: Set<GATTCharacteristicID> = []
        /// The control point, once PMD can run on this link (service present, MTU large enough).
        var controlPoint: GATTCharacteristicID?
        var pmdReady = false
        /// Why PMD cannot run on this link (an MTU below `pmdMTU`).
        var pmdBlocked: String?
        var features: PMDFeatures?
        var pmd: [PMDMeasurementType: PMDRun] = [:]
        /// Frames that came before their stream's START was answered (`EarlyFrames`).
        var early: [PMDMeasurementType: EarlyFrames] = [:]
        var responses = PMDResponseAssembler()
        var heartRateGuard = RateGuard(
            perSecond: WearableLinkMachine.heartRateBound.perSecond, burst: WearableLinkMachine.heartRateBound.burst)
        var contactSeen = false

        init(connectedAt: Int64) { self.connectedAt = connectedAt }
    }

    let configuration: WearableConfiguration
    /// Words a span of nanoseconds for the log as the rest of the daemon does.
    let durations: @Sendable (Int64) -> String

    private(set) var phase = Phase.searching
    private(set) var retryAt: Int64 = 0
    private(set) var address: String?
    private(set) var battery: Int?
    var session: Session?
    var backoff = RetryBackoff.wearable
    var advertisedName: String?
    var rssi: Int8?
    var information = DeviceInformation()
    var location: BodySensorLocation?
    var candidates = WearableCandidates()
    var heartRate = HeartRateTimeline()
    /// The device identifier the streams are registered as.
    var registeredDevice: String?
    var recording: Set<SRSensor> = []
    var stopRequested = false
    var timelines: [PMDMeasurementType: PMDStreamTimeline] = [:]
    var sampleRates: [PMDMeasurementType: Int] = [:]
    var sessionStarts: [PMDMeasurementType: Int64] = [:]
    var uncertainty: [PMDMeasurementType: Int64] = [:]
    var pmdBackoff: [PMDMeasurementType: RetryBackoff] = [:]
    /// Each running stream's FACTOR from its START response.
    var factors: [PMDMeasurementType: Float] = [:]
    /// PPI while it runs: its intervals on the host timeline.
    var pulses: PulseIntervalTimeline?
    /// When PPI last delivered intervals: while that is within `pulseFreshness`, PPI is the
    /// heart rate and HRS measurements are not recorded as rows (docs/ble.md, "PPI").
    var lastPulseAt: Int64?
    /// The last heart-rate row's time, HRS or PPI: the stream's times strictly increase.
    var lastHeartRateTime: Int64?
    var now: Int64 = 0
    var actions: [Action] = []

    init(configuration: WearableConfiguration, durations: @escaping @Sendable (Int64) -> String) {
        self.configuration = configuration
        self.durations = durations
        if case .address(let known)? = configuration.match { address = known }
    }

    var label: String { "wearable \(configuration.name)" + (address.map { " (\($0))" } ?? "") }

    /// Handles one event that happened at `time` (boot ns) and returns what to do, in order.
    mutating func on(_ event: Event, at time: Int64) -> [Action] {
        now = time
        switch event {
        case .scanned(let reports):
            if phase == .searching, let report = choose(reports) { connect(report) }
        case .connected:
            connected()
        case .connectFailed(let error):
            connectFailed(error)
        case .gatt(let event):
            gatt(event)
        case .tick:
            tick()
        case .recording(let sensor, let on):
            recordingChanged(sensor, on: on)
        case .stopRequested:
            stopAll()
        case .close:
            close()
        }
        let result = actions
        actions = []
        return result
    }

    // MARK: Connecting

    /// The report of this scan to connect to: the configured address, or — named by pattern — the
    /// candidate `WearableCandidates` prefers among those advertising a matching name (each
    /// logged the first time it is seen).
    private mutating func choose(_ reports: [BLEScanReport]) -> BLEScanReport? {
        if case .address(let known)? = configuration.match { return reports.first { $0.address.uppercased() == known } }
        let matching = reports.filter { configuration.matches(address: $0.address, advertisedName: $0.data.localName) }
        let (chosen, new) = candidates.choose(matching.map { .init(address: $0.address.uppercased(), name: $0.data.localName) })
        for candidate in new {
            log(
                .notice(
                    "wearable \(configuration.name): \(candidate.address) advertises the name \(candidate.name.map { "'\($0)'" } ?? "?"), a candidate"
                ))
        }
        return chosen.flatMap { chosen in matching.first { $0.address.uppercased() == chosen.address } }
    }

    private mutating func connect(_ report: BLEScanReport) {
        session = nil
        if let address, address != report.address.uppercased() {
            log(.notice("\(label): choosing \(report.address.uppercased()) this time"))
        }
        address = report.address.uppercased()
        advertisedName = report.data.localName ?? advertisedName
        rssi = report.rssi ?? rssi
        phase = .connecting
        actions.append(.connect(report))
    }

    private mutating func connected() {
        guard phase == .connecting else { return }
        session = Session(connectedAt: now)
        phase = .discovering
        log(.info("\(label): connected\(rssi.map { ", RSSI \($0) dBm at discovery" } ?? ""); discovering"))
        publishStatus()
    }

    private mutating func connectFailed(_ error: BLETransportError) {
        guard phase == .connecting else { return }
        let why: String
        switch error {
        case .busy(let detail):
            why =
                "\(detail): another client (usually bluetoothd, which auto-connects paired or trusted devices) already holds this wearable's ATT channel — unpair it (bluetoothctl remove \(address ?? "ADDRESS")) or disconnect it there"
        default:
            why = error.description
        }
        problem("connect:\(why)", "\(label): cannot connect: \(why); retrying with backoff")
        wait(backoff.connectFailed())
    }

    private mutating func wait(_ delay: Int64) {
        phase = .waiting
        retryAt = now &+ delay
        publishStatus()
    }

    private mutating func tick() {
        if phase == .waiting, now >= retryAt { phase = .searching }
        for kind in PMDStreamKind.all {
            let type = kind.measurementType
            guard let run = session?.pmd[type] else { continue }
            if run.phase == .pausing, let at = run.retryAt, now >= at {
                session?.pmd[type] = PMDRun()
                applyPMD()
            } else if run.phase == .running, var timeline = timelines[type] {
                let events = timeline.releaseHeld(now: now)
                timelines[type] = timeline
                handle(events, of: kind)
            }
        }
    }

    // MARK: GATT events

    private mutating func gatt(_ event: GATTLinkEvent) {
        guard session != nil else { return }
        switch event {
        case .ready(let mtu, let characteristics):
            guard phase == .discovering else { return }
            session?.mtu = mtu
            session?.characteristics = characteristics
            discovered()
        case .readCompleted(let id, let value):
            guard session?.reads.remove(id) != nil else { return }
            read(id, value)
            if session?.reads.isEmpty == true, phase == .discovering { setUp() }
        case .failed(let failure):
            failed(failure)
        case .writeCompleted:
            break
        case .subscribed(let id):
            guard id == .pmdControlPoint || id == .pmdData, session?.controlPoint != nil else { return }
            session?.pmdSubscribed.insert(id)
            if session?.pmdSubscribed.count == 2, session?.pmdReady == false {
                session?.pmdReady = true
                applyPMD()
            }
        case .notification(let id, let value):
            switch id {
            case .heartRateMeasurement: heartRateMeasurement(value)
            case .pmdData: pmdFrame(value)
            case .batteryLevel: batteryLevel(value)
            case .pmdControlPoint: controlPointIndication(value)
            default: break
            }
        case .ignoredInput(let why):
            problem(
                "ignoredPDU",
                "\(label): dropped a PDU that does not decode or was not asked for (\(why)); counted, and summed up in the log later"
            )
        case .linkLost(let why):
            linkLost(why)
        }
    }

    private mutating func failed(_ failure: GATTFailure) {
        let uuid = failure.characteristic.characteristic
        switch failure.operation {
        case .read:
            guard session?.reads.remove(failure.characteristic) != nil else { return }
            problem("read:\(uuid)", "\(label): reading \(uuid) failed (\(failure.why)); going on without it")
            if session?.reads.isEmpty == true, phase == .discovering { setUp() }
        case .subscribe:
            problem("subscribe:\(uuid)", "\(label): subscribing to \(uuid) failed (\(failure.why))")
        case .write:
            guard failure.characteristic == .pmdControlPoint else { return }
            problem("pmd-write:\(failure.why)", "\(label): a PMD command failed (\(failure.why))")
        }
    }

    /// The PMD streams this wearable's configuration asks for.
    private var wantedPMD: [PMDStreamKind] { PMDStreamKind.all.filter { configuration.streams.contains($0.sensor) } }

    /// Whether a stream whose only source is PMD is configured: its absence is a problem worth
    /// a log line; a supplementary stream's (PPI on a plain strap) is not.
    private var needsPMD: Bool { wantedPMD.contains { !$0.supplementary } }

    private mutating func discovered() {
        guard let found = session?.characteristics, let mtu = session?.mtu else { return }
        for uuid in DeviceInformation.characteristics where found[.deviceInformation(uuid)]?.contains(.read) == true {
            read(.deviceInformation(uuid))
        }
        if let level = found[.batteryLevel] {
            if level.contains(.read) { read(.batteryLevel) }
            subscribe(.batteryLevel, level)
        }
        if found[.bodySensorLocation]?.contains(.read) == true { read(.bodySensorLocation) }
        if let measurement = found[.heartRateMeasurement] {
            subscribe(.heartRateMeasurement, measurement)
        } else if configuration.streams.contains(.heartRate) || configuration.streams.contains(.onWristState) {
            problem("no-hrs", "\(label): no Heart Rate Service; heartRate and onWristState cannot be recorded from it")
        }
        if !wantedPMD.isEmpty {
            if let controlPoint = found[.pmdControlPoint], let data = found[.pmdData] {
                if mtu < Self.pmdMTU {
                    if needsPMD {
                        problem(
                            "mtu",
                            "\(label): the link's ATT MTU is \(mtu), PMD needs at least \(Self.pmdMTU); recording heart rate only"
                        )
                    }
                    session?.pmdBlocked = "the link's ATT MTU is \(mtu), PMD needs at least \(Self.pmdMTU)"
                } else {
                    session?.controlPoint = .pmdControlPoint
                    if controlPoint.contains(.read) { read(.pmdControlPoint) }
                    subscribe(.pmdControlPoint, controlPoint)
                    subscribe(.pmdData, data)
                }
            } else if needsPMD {
                problem("no-pmd", "\(label): no Polar Measurement Data service; ECG/PPG/ACC cannot be recorded from it")
            }
        }
        if session?.reads.isEmpty == true { setUp() }
    }

    private mutating func read(_ id: GATTCharacteristicID) {
        session?.reads.insert(id)
        actions.append(.read(id))
    }

    /// Only characteristics that can notify or indicate are subscribed to.
    private mutating func subscribe(_ id: GATTCharacteristicID, _ properties: GATTClient.Properties) {
        guard !properties.isDisjoint(with: [.notify, .indicate]) else { return }
        actions.append(.subscribe(id))
    }

    private mutating func read(_ id: GATTCharacteristicID, _ value: [UInt8]) {
        switch id {
        case .batteryLevel: batteryLevel(value)
        case .bodySensorLocation: location = BodySensorLocation(decoding: value)
        case .pmdControlPoint:
            session?.features = PMDFeatures(decoding: value)
            if session?.features == nil {
                problem("features", "\(label): PMD feature read did not decode; trying the streams anyway")
            }
        default: information.set(id.characteristic, value: value)
        }
    }

    private mutating func batteryLevel(_ value: [UInt8]) {
        guard let percent = BatteryLevel.percent(decoding: value) else {
            problem(
                "battery", "\(label): a battery level that is not 0–100 % was dropped; counted, and summed up in the log later")
            return
        }
        battery = percent
        publishStatus()
    }

    /// The setup's reads are done: the wearable is known; its streams are registered once.
    private mutating func setUp() {
        phase = .ready
        if let address, let registered = registeredDevice, registered != "ble:" + address {
            // Bound by name to another advertiser than before: its streams are another device's.
            log(
                .notice(
                    "\(label): a different device than \(registered) answers to the name; its streams are registered as its own"))
            actions.append(.unregister)
            registeredDevice = nil
        }
        if registeredDevice == nil, let address {
            let device = information.device(address: address, advertisedName: advertisedName)
            registeredDevice = device.identifier
            actions.append(.register(device, location: location))
            log(
                .notice(
                    "\(label): \(device.model.isEmpty ? "model unknown" : device.model), firmware \(device.systemVersion.isEmpty ? "unknown" : device.systemVersion), battery \(battery.map { "\($0) %" } ?? "unknown"); streams \(configuration.streams.map(\.rawValue).joined(separator: ", "))"
                ))
        } else {
            log(.notice("\(label): connected again; streams re-subscribed"))
        }
        publishStatus()
        applyPMD()
    }

    /// Whether `sensor` has a registered stream.
    func isRegistered(_ sensor: SRSensor) -> Bool { registeredDevice != nil && configuration.streams.contains(sensor) }

    // MARK: Recording on and off

    private mutating func recordingChanged(_ sensor: SRSensor, on: Bool) {
        if on {
            recording.insert(sensor)
            if sensor == .onWristState { heartRate.restart() }
            // Staked while the wearable is away: what it misses until it is back is a gap.
            if phase != .ready { openGap(sensor, after: nil, why: "wearable not connected when recording started") }
        } else {
            recording.remove(sensor)
        }
        if !PMDStreamKind.feeding(sensor).isEmpty { applyPMD() }
        publishStatus()
    }

    /// A gap of a stream being recorded (the others have nothing to lose).
    mutating func openGap(_ sensor: SRSensor, after: Int64?, at time: Int64? = nil, why: String) {
        guard isRegistered(sensor), recording.contains(sensor) else { return }
        actions.append(.openGap(sensor, after: after, at: time ?? now, why: why))
    }

    // MARK: Heart rate

    private mutating func heartRateMeasurement(_ value: [UInt8]) {
        guard session?.heartRateGuard.admit(at: now) == true else {
            problem(
                "hr-rate",
                "\(label): heart-rate measurements arrive faster than \(Int(Self.heartRateBound.perSecond)) a second; the excess is dropped and recorded as a gap; counted, and summed up in the log later"
            )
            openGap(.heartRate, after: nil, why: "more heart-rate measurements than a strap sends")
            openGap(.onWristState, after: now, why: "more heart-rate measurements than a strap sends")
            return
        }
        let before = heartRate.malformed
        let output = heartRate.receive(value, at: now)
        if heartRate.malformed > before {
            problem(
                "hrm",
                "\(label): a heart-rate measurement that does not decode was dropped; counted, and summed up in the log later")
            return
        }
        let contact = (try? HeartRateMeasurement(decoding: value))?.sensorContact
        if contact == .inContact, let address, session?.contactSeen == false {
            session?.contactSeen = true
            candidates.contactSeen(address)
        }
        if let beat = output.beat, isRegistered(.heartRate), !pulsesDelivering, now > (lastHeartRateTime ?? .min) {
            if beat.rrIntervals.count > WearableSamples.rrColumns {
                problem(
                    "rr",
                    "\(label): a measurement carried \(beat.rrIntervals.count) RR intervals; the store keeps \(WearableSamples.rrColumns) per measurement and the rest were dropped; counted, and summed up in the log later"
                )
            }
            lastHeartRateTime = now
            actions.append(.emit(.heartRate, .heartRate(beat, contact: contact), at: now))
        }
        if let onWrist = output.wristState, isRegistered(.onWristState) {
            actions.append(.emit(.onWristState, .wristState(onWrist: onWrist), at: now))
        }
    }

    // MARK: Losing and closing the link

    private mutating func linkLost(_ why: String) {
        guard phase != .stopped, let lost = session else { return }
        for kind in PMDStreamKind.all where timelines[kind.measurementType] != nil || kind.measurementType == .ppi { flush(kind) }
        // Wrist state records changes: its gap is the loss itself, not the time since the last
        // change; and the state while the link was down is unknown, so the first one after the
        // reconnect is recorded again.
        for sensor in configuration.streams {
            openGap(sensor, after: sensor == .onWristState ? now : nil, why: "link lost: \(why)")
        }
        heartRate.restart()
        if let address { candidates.linkEnded(address, contactSeen: lost.contactSeen) }
        if case .name? = configuration.match, candidates.trusted != address {
            address = nil  // not known to be the strap: chosen again among the candidates at the next scan
        }
        session = nil
        actions.append(.disconnect)
        wait(backoff.linkLost(upFor: now &- lost.connectedAt))
        log(.warning("\(label): link lost (\(why)); reconnecting in \(durations(retryAt &- now)) with full re-subscription"))
        if stopRequested {
            stopRequested = false
            actions.append(.stopped)
        }
    }

    private mutating func close() {
        phase = .stopped
        if session != nil { actions.append(.disconnect) }
        session = nil
        publishStatus()
    }

    // MARK: Status and logging

    mutating func publishStatus() {
        guard registeredDevice != nil else { return }
        var common: [String: String] = ["link": phase.rawValue]
        if let battery { common["battery"] = "\(battery) %" }
        if let rssi { common["rssi"] = "\(rssi) dBm" }
        if phase == .ready || phase == .discovering { common["mtu"] = "\(session?.mtu ?? 23)" }
        var all: [SRSensor: [String: String]] = [:]
        for sensor in configuration.streams {
            var status = common
            if let kind = PMDStreamKind.of(sensor) {
                let type = kind.measurementType
                let run = session?.pmd[type]
                status["pmd"] = (session?.pmdBlocked ?? run?.refusal).map { "not recorded: \($0)" } ?? "\(run?.phase ?? .idle)"
                if let rate = sampleRates[type] { status["sampleRate"] = "\(rate) Hz" }
                if let value = uncertainty[type] { status["clockUncertainty"] = String(format: "%.2f ms", Double(value) / 1e6) }
            } else {
                status["clockUncertainty"] = "none (stamped on receipt)"
            }
            for kind in PMDStreamKind.feeding(sensor) { status[kind.statusKey] = pmdState(kind) }
            all[sensor] = status
        }
        actions.append(.status(all))
    }

    /// A PMD stream's state as `sensorkitctl devices` shows it.
    private func pmdState(_ kind: PMDStreamKind) -> String {
        let run = session?.pmd[kind.measurementType]
        if let why = session?.pmdBlocked ?? run?.refusal { return "not recorded: \(why)" }
        if kind.supplementary, run?.phase == .running {
            return pulsesDelivering ? "running (heart rate from PPI)" : "running (no intervals yet; heart rate from HRS)"
        }
        return "\(run?.phase ?? .idle)"
    }

    /// PPI runs and delivered intervals lately: it is the heart rate, not HRS.
    var pulsesDelivering: Bool {
        guard session?.pmd[.ppi]?.phase == .running, let last = lastPulseAt else { return false }
        return now &- last <= Self.pulseFreshness
    }

    mutating func log(_ line: Log) { actions.append(.log(line)) }

    mutating func problem(_ key: String, _ message: String) { actions.append(.log(.problem(key: key, message))) }
}
