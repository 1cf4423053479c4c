import BLEBridge
import Dispatch
import Glibc
import SensorKitModel
import SensorSystem

/// One configured wearable: found by scan, connected, set up (MTU, discovery, DIS, battery, body
/// sensor location, HRS and — for ECG/PPG — PMD), recorded, and reconnected with capped
/// exponential backoff and full re-subscription after every loss (docs/ble.md, "The daemon's BLE
/// driver"). Its streams are registered once, when the first setup has read the Device
/// Information Service, and stay registered across link losses. Confined to the driver's queue.
final class WearableLink: @unchecked Sendable {
    // @unchecked: every field is confined to `queue`.
    enum Phase: String {
        case searching, connecting, discovering, ready, waiting, stopped
    }

    private enum PMDPhase: Equatable {
        case idle, gettingSettings, starting, running, stopping, restarting, refused
        /// The device stopped the stream on its own: started again at `pmdRetryAt`, backed off.
        case pausing
    }

    /// Heart-rate measurements a strap may send: real ones notify once a second (some once a
    /// beat, under 4 a second); more is a flood, dropped with a gap record.
    static let heartRateBound = (perSecond: 5.0, burst: 10.0)

    /// Polar PMD frames need this ATT MTU (H10 ECG: 229-byte frames).
    static let pmdMTU = 232

    let configuration: WearableConfiguration
    private let queue: DispatchQueue
    private let registry: any SourceRegistry
    private let clock: any SystemClock
    private let journal: Journal

    private(set) var phase = Phase.searching
    private var retryAt: Int64 = 0
    private var backoff = ReconnectBackoff()
    private var address: String?
    private var advertisedName: String?
    private var rssi: Int8?
    private var connection: GATTConnection?
    private var connectedAt: Int64 = 0
    private var mtu = 23
    private var information = DeviceInformation()
    private var battery: Int?
    private var location: BodySensorLocation?
    private var reads: [GATTClient.OperationID: BluetoothUUID] = [:]
    private var subscriptions: [GATTClient.OperationID: BluetoothUUID] = [:]
    private var pmdSubscribed = 0
    private var heartRateHandle: UInt16?
    private var batteryHandle: UInt16?
    private var controlPointHandle: UInt16?
    private var dataHandle: UInt16?
    private var features: PMDFeatures?
    private var pmdReady = false
    private var pmd: [PMDMeasurementType: PMDPhase] = [:]
    private var sampleRates: [PMDMeasurementType: Int] = [:]
    private var sessionStarts: [PMDMeasurementType: Int64] = [:]
    private var uncertainty: [PMDMeasurementType: Int64] = [:]
    private var responses = PMDResponseAssembler()
    private var pmdBackoff: [PMDMeasurementType: ReconnectBackoff] = [:]
    private var pmdRetryAt: [PMDMeasurementType: Int64] = [:]
    /// Why PMD cannot run on this link (an MTU below `pmdMTU`), or why the device refused a stream.
    private var pmdBlocked: String?
    private var refusals: [PMDMeasurementType: String] = [:]
    private var heartRateGuard = RateGuard(
        perSecond: WearableLink.heartRateBound.perSecond, burst: WearableLink.heartRateBound.burst)
    private var candidates = WearableCandidates()
    private var contactOnThisLink = false
    private var heartRate = HeartRateTimeline()
    private var timelines: [PMDMeasurementType: PMDStreamTimeline] = [:]
    private var streams: [SRSensor: WearableStream] = [:]
    private var stopping: (() -> Void)?
    /// Each cause is logged the first time and then summed up with its count (malformed input,
    /// a failing read) so the log shows every problem and its scale without drowning.
    private let problems: RecurringProblems
    private var counts: [String: Int] = [:]

    init(
        configuration: WearableConfiguration, queue: DispatchQueue, registry: any SourceRegistry,
        clock: any SystemClock, journal: Journal
    ) {
        self.configuration = configuration
        self.queue = queue
        self.registry = registry
        self.clock = clock
        self.journal = journal
        problems = RecurringProblems(journal)
        if case .address(let known)? = configuration.match { address = known }
    }

    private var label: String { "wearable \(configuration.name)" + (address.map { " (\($0))" } ?? "") }
    private var now: Int64 { clock.boottimeNanoseconds() }

    var isSearching: Bool { phase == .searching }

    /// The report of this scan to connect to: the configured address, or — named by pattern — the
    /// candidate `WearableCandidates` prefers among those advertising a matching name (each
    /// logged the first time it is seen).
    func choose(_ reports: [BLEScanReport]) -> BLEScanReport? {
        dispatchPrecondition(condition: .onQueue(queue))
        if case .address(let known)? = configuration.match { return reports.first { $0.address.uppercased() == known } }
        let matching = reports.filter { configuration.matches(address: $0.address, advertisedName: $0.data.localName) }
        let (chosen, new) = candidates.choose(matching.map { .init(address: $0.address.uppercased(), name: $0.data.localName) })
        for candidate in new {
            journal.notice(
                "wearable \(configuration.name): \(candidate.address) advertises the name \(candidate.name.map { "'\($0)'" } ?? "?"), a candidate"
            )
        }
        return chosen.flatMap { chosen in matching.first { $0.address.uppercased() == chosen.address } }
    }

    func tick(now: Int64) {
        dispatchPrecondition(condition: .onQueue(queue))
        if phase == .waiting, now >= retryAt { phase = .searching }
        let boot = clock.bootID
        for stream in streams.values { stream.tick(now: now, boot: boot) }
        for (type, at) in pmdRetryAt where pmd[type] == .pausing && now >= at {
            pmdRetryAt[type] = nil
            pmd[type] = .idle
            applyPMD()
        }
        for (type, phase) in pmd where phase == .running {
            guard var timeline = timelines[type] else { continue }
            let events = timeline.releaseHeld(now: now)
            timelines[type] = timeline
            handle(events, of: type)
        }
    }

    // MARK: Connecting

    func connect(_ report: BLEScanReport, over transport: any BLETransport) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard phase == .searching else { return }
        // Operation ids start over with each connection: nothing of the last one may linger
        // (a link that failed inside a send leaves reads issued after its reset).
        resetLinkState()
        if let address, address != report.address.uppercased() {
            journal.notice("\(label): choosing \(report.address.uppercased()) this time")
        }
        address = report.address.uppercased()
        advertisedName = report.data.localName ?? advertisedName
        rssi = report.rssi ?? rssi
        phase = .connecting
        let bearer: any ATTBearer
        do {
            bearer = try transport.connect(report)
        } catch {
            let why: String
            switch error {
            case .outOfRange(let detail): why = "out of range (\(detail))"
            case .system(let failure) where failure.errno == EBUSY:
                why =
                    "\(failure): another client (usually bluetoothd, which auto-connects paired or trusted devices) already holds this wearable's ATT channel — unpair it (bluetoothctl remove \(report.address)) or disconnect it there"
            default: why = error.description
            }
            once("connect:\(why)", warning: "\(label): cannot connect: \(why); retrying with backoff")
            wait(backoff.connectFailed())
            return
        }
        let connection = GATTConnection(bearer: bearer, queue: queue, preferredMTU: 247) { [weak self] event in
            self?.handle(event)
        }
        self.connection = connection
        connectedAt = now
        mtu = 23
        phase = .discovering
        journal.info("\(label): connected\(rssi.map { ", RSSI \($0) dBm at discovery" } ?? ""); discovering")
        publishStatus()
        connection.start()
    }

    private func wait(_ delay: Int64) {
        phase = .waiting
        retryAt = now &+ delay
        publishStatus()
    }

    // MARK: GATT events

    private func handle(_ event: GATTClient.Event) {
        dispatchPrecondition(condition: .onQueue(queue))
        switch event {
        case .mtuExchanged(let value):
            mtu = value
        case .discovered(let services):
            discovered(services)
        case .readCompleted(let id, _, let value):
            guard let uuid = reads.removeValue(forKey: id) else { return }
            read(uuid, value)
            if reads.isEmpty, phase == .discovering { setUp() }
        case .operationFailed(let id, let handle, let error):
            if let uuid = reads.removeValue(forKey: id) {
                once("read:\(uuid)", warning: "\(label): reading \(uuid) failed (ATT error \(error)); going on without it")
                if reads.isEmpty, phase == .discovering { setUp() }
            } else if let uuid = subscriptions.removeValue(forKey: id) {
                once("subscribe:\(uuid)", warning: "\(label): subscribing to \(uuid) failed (ATT error \(error))")
            } else if handle == controlPointHandle {
                once("pmd-write:\(error)", warning: "\(label): a PMD command failed (ATT error \(error))")
            }
        case .writeCompleted(let id, _):
            guard let uuid = subscriptions.removeValue(forKey: id) else { return }
            if uuid == .polarMeasurementControlPoint || uuid == .polarMeasurementData {
                pmdSubscribed += 1
                if pmdSubscribed == 2 {
                    pmdReady = true
                    applyPMD()
                }
            }
        case .notification(let handle, let value):
            if handle == heartRateHandle {
                heartRateMeasurement(value)
            } else if handle == dataHandle {
                pmdFrame(value)
            } else if handle == batteryHandle {
                batteryLevel(value)
            }
        case .indication(let handle, let value):
            if handle == controlPointHandle { controlPointIndication(value) }
        case .ignoredPDU(let why):
            count(
                "ignoredPDU",
                "\(label): dropped a PDU that does not decode or was not asked for (\(why)); counted, and summed up in the log later"
            )
        case .linkFailed(let why):
            linkLost(why)
        }
    }

    private var wantsPMD: Bool { streams(for: .ecg) || streams(for: .ppg) }

    private func streams(for type: PMDMeasurementType) -> Bool {
        configuration.streams.contains(type == .ecg ? .electrocardiogram : .photoplethysmogram)
    }

    private func discovered(_ services: [GATTService]) {
        guard let connection else { return }
        let dis = services.service(.deviceInformationService)
        for uuid in DeviceInformation.characteristics {
            if let characteristic = dis?.characteristic(uuid), characteristic.properties.contains(.read) {
                reads[connection.read(characteristic.valueHandle)] = uuid
            }
        }
        if let level = services.service(.batteryService)?.characteristic(.batteryLevel) {
            batteryHandle = level.valueHandle
            if level.properties.contains(.read) { reads[connection.read(level.valueHandle)] = .batteryLevel }
            subscribe(level)
        }
        let hrs = services.service(.heartRateService)
        if let sensorLocation = hrs?.characteristic(.bodySensorLocation), sensorLocation.properties.contains(.read) {
            reads[connection.read(sensorLocation.valueHandle)] = .bodySensorLocation
        }
        if let measurement = hrs?.characteristic(.heartRateMeasurement) {
            heartRateHandle = measurement.valueHandle
            subscribe(measurement)
        } else if configuration.streams.contains(.heartRate) || configuration.streams.contains(.onWristState) {
            once("no-hrs", warning: "\(label): no Heart Rate Service; heartRate and onWristState cannot be recorded from it")
        }
        if wantsPMD {
            let service = services.service(.polarMeasurementDataService)
            if let controlPoint = service?.characteristic(.polarMeasurementControlPoint),
                let data = service?.characteristic(.polarMeasurementData)
            {
                if mtu < Self.pmdMTU {
                    once(
                        "mtu",
                        warning:
                            "\(label): the link's ATT MTU is \(mtu), PMD needs at least \(Self.pmdMTU); recording heart rate only"
                    )
                    pmdBlocked = "the link's ATT MTU is \(mtu), PMD needs at least \(Self.pmdMTU)"
                } else {
                    controlPointHandle = controlPoint.valueHandle
                    dataHandle = data.valueHandle
                    if controlPoint.properties.contains(.read) {
                        reads[connection.read(controlPoint.valueHandle)] = .polarMeasurementControlPoint
                    }
                    subscribe(controlPoint)
                    subscribe(data)
                }
            } else {
                once("no-pmd", warning: "\(label): no Polar Measurement Data service; ECG/PPG cannot be recorded from it")
            }
        }
        if reads.isEmpty { setUp() }
    }

    private func subscribe(_ characteristic: GATTCharacteristic) {
        guard let id = connection?.subscribe(characteristic) else { return }
        subscriptions[id] = characteristic.uuid
    }

    private func read(_ uuid: BluetoothUUID, _ value: [UInt8]) {
        switch uuid {
        case .batteryLevel: batteryLevel(value)
        case .bodySensorLocation: location = BodySensorLocation(decoding: value)
        case .polarMeasurementControlPoint:
            features = PMDFeatures(decoding: value)
            if features == nil {
                once("features", warning: "\(label): PMD feature read did not decode; trying the streams anyway")
            }
        default: information.set(uuid, value: value)
        }
    }

    private func batteryLevel(_ value: [UInt8]) {
        guard let percent = BatteryLevel.percent(decoding: value) else {
            count("battery", "\(label): a battery level that is not 0–100 % was dropped; counted, and summed up in the log later")
            return
        }
        battery = percent
        publishStatus()
    }

    /// The first setup's reads are done: the wearable is known; register its streams once.
    private func setUp() {
        phase = .ready
        if let address, let registered = streams.values.first?.descriptor.device, registered != "ble:" + address {
            // Bound by name to another advertiser than before: its streams are another device's.
            journal.notice(
                "\(label): a different device than \(registered) answers to the name; its streams are registered as its own")
            for stream in streams.values { registry.remove(source: stream.descriptor.source) }
            streams = [:]
        }
        if streams.isEmpty, let address {
            let device = information.device(address: address, advertisedName: advertisedName)
            for sensor in configuration.streams {
                let stream = WearableStream(descriptor: descriptor(sensor, device: device), queue: queue, clock: clock) {
                    [weak self] stream, on in
                    self?.recordingChanged(stream, on: on)
                }
                streams[sensor] = stream
            }
            journal.notice(
                "\(label): \(device.model.isEmpty ? "model unknown" : device.model), firmware \(device.systemVersion.isEmpty ? "unknown" : device.systemVersion), battery \(battery.map { "\($0) %" } ?? "unknown"); streams \(configuration.streams.map(\.rawValue).joined(separator: ", "))"
            )
            publishStatus()
            for stream in streams.values.sorted(by: { $0.sensor.rawValue < $1.sensor.rawValue }) { registry.add(stream) }
        } else {
            journal.notice("\(label): connected again; streams re-subscribed")
            publishStatus()
        }
        applyPMD()
    }

    private func descriptor(_ sensor: SRSensor, device: SRDevice) -> SourceDescriptor {
        WearableSamples.descriptor(sensor, device: device, wearable: configuration.name, location: location)
    }

    // MARK: Recording on and off

    private func recordingChanged(_ stream: WearableStream, on: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        if on {
            stream.started(at: now)
            if stream.sensor == .onWristState { heartRate.restart() }
            // Staked while the wearable is away: what it misses until it is back is a gap.
            if phase != .ready { stream.openGap(after: nil, now: now, why: "wearable not connected when recording started") }
        }
        if stream.sensor == .electrocardiogram || stream.sensor == .photoplethysmogram { applyPMD() }
        publishStatus()
    }

    /// Starts the PMD streams that are recorded and stops the others (GET settings → START; STOP).
    private func applyPMD() {
        if phase == .ready {
            // A staked PMD stream that cannot run on this link records nothing: that is a gap.
            for (type, sensor) in [(PMDMeasurementType.ecg, SRSensor.electrocardiogram), (.ppg, .photoplethysmogram)] {
                guard let stream = streams[sensor], stream.recording, let why = pmdBlocked ?? refusals[type] else { continue }
                stream.openGap(after: nil, now: now, why: "\(sensor.rawValue) not recorded: \(why)")
            }
        }
        guard let connection, let controlPoint = controlPointHandle, pmdReady, phase == .ready else { return }
        for (type, sensor) in [(PMDMeasurementType.ecg, SRSensor.electrocardiogram), (.ppg, .photoplethysmogram)] {
            guard let stream = streams[sensor] else { continue }
            let want = stream.recording && stopping == nil
            let current = pmd[type] ?? .idle
            if want, current == .idle {
                if let features, !features.types.contains(type) {
                    once(
                        "feature:\(type)",
                        warning: "\(label): the device does not offer PMD \(type); \(sensor.rawValue) is not recorded")
                    refuse(type, "the device does not offer PMD \(type)")
                    continue
                }
                pmd[type] = .gettingSettings
                command(connection, controlPoint, PMDCommand.getMeasurementSettings(type).encoded())
            } else if !want, current == .running || current == .starting {
                pmd[type] = .stopping
                command(connection, controlPoint, PMDCommand.stopMeasurement(type).encoded())
                flush(type)
            }
        }
    }

    private func controlPointIndication(_ value: [UInt8]) {
        let indication: PMDControlPointIndication
        do {
            indication = try PMDControlPointIndication(decoding: value)
        } catch {
            count(
                "cp",
                "\(label): a PMD control-point indication did not decode (\(error)); counted, and summed up in the log later")
            return
        }
        switch indication {
        case .measurementsStopped(let types):
            for raw in types {
                guard let type = PMDMeasurementType(rawValue: raw), pmd[type] == .running else { continue }
                flush(type)
                gap(type, why: "the device stopped the stream")
                // Started again after a pause that doubles while the device keeps stopping it.
                let ranFor = now &- (sessionStarts[type] ?? now)
                let delay = pmdBackoff[type, default: ReconnectBackoff()].linkLost(upFor: ranFor)
                pmd[type] = .pausing
                pmdRetryAt[type] = now &+ delay
                count(
                    "stopped:\(type)",
                    "\(label): the device stopped PMD \(type) on its own; starting it again in \(FetchPolicy.describe(delay)) (the pause doubles while it keeps doing so); counted, and summed up in the log later"
                )
            }
            applyPMD()
        case .response(let part):
            switch responses.add(part) {
            case .incomplete:
                return
            case .refused(let why):
                count(
                    "cp-continuation",
                    "\(label): a PMD control-point response in parts was dropped (\(why)); counted, and summed up in the log later"
                )
                if let type = PMDMeasurementType(rawValue: part.measurementType) {
                    switch pmd[type] ?? .idle {
                    case .gettingSettings, .starting: refuse(type, "its control-point response was dropped (\(why))")
                    default: break
                    }
                }
            case .complete(let response):
                guard let type = PMDMeasurementType(rawValue: response.measurementType) else { return }
                pmdResponse(response, type: type)
            }
        }
    }

    private func pmdResponse(_ response: PMDResponse, type: PMDMeasurementType) {
        guard let connection, let controlPoint = controlPointHandle else { return }
        switch (response.opcode, pmd[type] ?? .idle) {
        case (0x01, .gettingSettings):
            guard response.status == .success, let offered = try? PMDSetting.decodeList(response.parameters[...]) else {
                once("settings:\(type)", warning: "\(label): PMD \(type) settings refused (\(response.status)); not recorded")
                refuse(type, "PMD \(type) settings refused (\(response.status))")
                return
            }
            // One value per setting: ECG at 130 Hz where offered, otherwise the first value.
            let chosen = offered.compactMap { setting -> PMDSetting? in
                guard [.sampleRate, .resolution, .range, .channels].contains(setting.kind), let first = setting.values.first
                else { return nil }
                let value = setting.kind == .sampleRate && type == .ecg && setting.values.contains(130) ? 130 : first
                return PMDSetting(setting.kind, [value])
            }
            sampleRates[type] = Int(chosen.first { $0.kind == .sampleRate }?.values.first ?? (type == .ecg ? 130 : 55))
            pmd[type] = .starting
            command(connection, controlPoint, PMDCommand.startMeasurement(type, settings: chosen).encoded())
        case (0x02, .starting):
            switch response.status {
            case .success:
                pmd[type] = .running
                let rate = sampleRates[type] ?? 130
                timelines[type] = PMDStreamTimeline(measurementType: type, sampleRateHz: rate)
                sessionStarts[type] = now
                journal.info("\(label): PMD \(type) streaming at \(rate) Hz")
            case .alreadyInState:
                // Still streaming from before a lost link: stop it, then start afresh.
                pmd[type] = .restarting
                command(connection, controlPoint, PMDCommand.stopMeasurement(type).encoded())
            case .invalidMTU:
                once(
                    "pmd-mtu:\(type)",
                    warning: "\(label): the device refused PMD \(type) for the link's MTU (\(mtu)); recording heart rate only")
                refuse(type, "the device refused PMD \(type) for the link's MTU (\(mtu))")
            default:
                once(
                    "start:\(type):\(response.status)",
                    warning: "\(label): the device refused to start PMD \(type) (\(response.status))")
                refuse(type, "the device refused to start PMD \(type) (\(response.status))")
            }
        case (0x03, .stopping), (0x03, .restarting):
            pmd[type] = .idle
            if stopping != nil, !pmd.values.contains(.stopping) {
                let done = stopping
                stopping = nil
                done?()
                return
            }
            applyPMD()
        default:
            break
        }
        publishStatus()
    }

    // MARK: Data

    private func heartRateMeasurement(_ value: [UInt8]) {
        let time = now
        let boot = clock.bootID
        guard heartRateGuard.admit(at: time) else {
            count(
                "hr-rate",
                "\(label): heart-rate measurements arrive faster than \(Int(Self.heartRateBound.perSecond)) a second; the excess is dropped and recorded as a gap; counted, and summed up in the log later"
            )
            streams[.heartRate]?.openGap(after: nil, now: time, why: "more heart-rate measurements than a strap sends")
            streams[.onWristState]?.openGap(after: time, now: time, why: "more heart-rate measurements than a strap sends")
            return
        }
        let before = heartRate.malformed
        let output = heartRate.receive(value, at: time)
        if heartRate.malformed > before {
            count(
                "hrm",
                "\(label): a heart-rate measurement that does not decode was dropped; counted, and summed up in the log later")
            return
        }
        let contact = (try? HeartRateMeasurement(decoding: value))?.sensorContact
        if contact == .inContact, let address, !contactOnThisLink {
            contactOnThisLink = true
            candidates.contactSeen(address)
        }
        if let beat = output.beat, let stream = streams[.heartRate] {
            if beat.rrIntervals.count > WearableSamples.rrColumns {
                count(
                    "rr",
                    "\(label): a measurement carried \(beat.rrIntervals.count) RR intervals; the store keeps \(WearableSamples.rrColumns) per measurement and the rest were dropped; counted, and summed up in the log later"
                )
            }
            stream.emit(
                boot: boot, times: [time], receiveTimes: [time], values: WearableSamples.heartRate(beat, contact: contact))
        }
        if let stream = streams[.onWristState], let onWrist = output.wristState {
            stream.emit(boot: boot, times: [time], receiveTimes: [time], values: WearableSamples.wrist(onWrist: onWrist))
        }
    }

    private func pmdFrame(_ value: [UInt8]) {
        guard let first = value.first, let type = PMDMeasurementType(rawValue: first & 0x3F), var timeline = timelines[type],
            pmd[type] == .running
        else {
            count(
                "frame-unexpected",
                "\(label): a PMD frame of a stream that is not running was dropped; counted, and summed up in the log later")
            return
        }
        let before = timeline.counters
        let events = timeline.receive(value, at: now)
        let after = timeline.counters
        timelines[type] = timeline
        // What each counter that moved means, in one line per kind (logged once, then summed up).
        let findings: [(counter: KeyPath<PMDStreamTimeline.Counters, Int>, key: String, what: String)] = [
            (\.duplicates, "dup", "frame repeating the previous timestamp dropped"),
            (\.undecodable, "undecodable", "frame that does not decode dropped and recorded as a gap"),
            (\.resets, "reset", "device clock reset; recorded as a gap, mapping restarted"),
            (\.jumps, "jump", "device time jumped; recorded as a gap, mapping restarted"),
            (\.missing, "missing", "frames missing; recorded as a gap"),
            (
                \.implausible, "implausible",
                "frame holding more samples than \(timeline.maximumFrameSamples) or than its device time covers at \(sampleRates[type] ?? 0) Hz dropped and recorded as a gap"
            ),
            (
                \.overRate, "rate",
                "samples arrive faster than \(PMDStreamTimeline.rateMargin) × \(sampleRates[type] ?? 0) Hz; the excess is dropped and recorded as a gap"
            ),
            (
                \.clockRate, "clock-rate",
                "device clock runs at a rate the host clock disagrees with (beyond \(Int(ClockRateCheck.tolerance * 100)) %); its frames are refused and recorded as a gap until it agrees again"
            ),
        ]
        for finding in findings where after[keyPath: finding.counter] > before[keyPath: finding.counter] {
            count("\(finding.key):\(type)", "\(label): PMD \(type) \(finding.what); counted, and summed up in the log later")
        }
        handle(events, of: type)
    }

    private func handle(_ events: [PMDStreamTimeline.Event], of type: PMDMeasurementType) {
        guard let stream = streams[type == .ecg ? .electrocardiogram : .photoplethysmogram], !events.isEmpty else { return }
        let boot = clock.bootID
        for event in events {
            switch event {
            case .gap(let gap):
                stream.openGap(after: gap.after, now: gap.receiveTime, why: "PMD \(type): \(gap.reason)")
            case .frame(let timed):
                uncertainty[type] = timed.uncertainty
                let receive = [Int64](repeating: timed.receiveTime, count: timed.sampleTimes.count)
                if type == .ecg {
                    let values = WearableSamples.electrocardiogram(
                        timed, sampleRate: sampleRates[type] ?? 130, sessionStart: sessionStarts[type] ?? 0)
                    stream.emit(boot: boot, times: timed.sampleTimes, receiveTimes: receive, values: values)
                } else {
                    stream.emit(
                        boot: boot, times: timed.sampleTimes, receiveTimes: receive,
                        values: WearableSamples.photoplethysmogram(timed))
                }
            }
        }
        publishStatus()
    }

    /// Releases a PMD stream's held frames (it stops, or the link went down).
    private func flush(_ type: PMDMeasurementType) {
        guard var timeline = timelines[type] else { return }
        let events = timeline.finish()
        timelines[type] = nil
        handle(events, of: type)
    }

    /// Writes a PMD command. A response in parts continues only the command just sent: parts
    /// left over from before (a device that never ended them) are dropped here.
    private func command(_ connection: GATTConnection, _ controlPoint: UInt16, _ bytes: [UInt8]) {
        responses.reset()
        connection.write(controlPoint, value: bytes)
    }

    /// The device will not run `type` on this link: it is not started again until the next
    /// connection, and a staked stream's time without it is a gap.
    private func refuse(_ type: PMDMeasurementType, _ why: String) {
        pmd[type] = .refused
        refusals[type] = why
        streams[type == .ecg ? .electrocardiogram : .photoplethysmogram]?.openGap(after: nil, now: now, why: why)
    }

    private func gap(_ type: PMDMeasurementType, why: String) {
        streams[type == .ecg ? .electrocardiogram : .photoplethysmogram]?.openGap(after: nil, now: now, why: why)
    }

    // MARK: Losing and closing the link

    private func linkLost(_ why: String) {
        guard phase != .stopped else { return }
        let time = now
        for type in Array(timelines.keys) { flush(type) }
        // Wrist state records changes: its gap is the loss itself, not the time since the last
        // change; and the state while the link was down is unknown, so the first one after the
        // reconnect is recorded again.
        for stream in streams.values {
            stream.openGap(after: stream.sensor == .onWristState ? time : nil, now: time, why: "link lost: \(why)")
        }
        heartRate.restart()
        if let address { candidates.linkEnded(address, contactSeen: contactOnThisLink) }
        if case .name? = configuration.match, candidates.trusted != address {
            address = nil  // not known to be the strap: chosen again among the candidates at the next scan
        }
        resetLinkState()
        wait(backoff.linkLost(upFor: time &- connectedAt))
        journal.warning(
            "\(label): link lost (\(why)); reconnecting in \(FetchPolicy.describe(retryAt &- time)) with full re-subscription")
        if let done = stopping {
            stopping = nil
            done()
        }
    }

    private func resetLinkState() {
        connection = nil
        reads = [:]
        subscriptions = [:]
        pmdSubscribed = 0
        pmdReady = false
        pmd = [:]
        responses.reset()
        pmdRetryAt = [:]
        pmdBlocked = nil
        refusals = [:]
        heartRateGuard = RateGuard(perSecond: Self.heartRateBound.perSecond, burst: Self.heartRateBound.burst)
        contactOnThisLink = false
        heartRateHandle = nil
        batteryHandle = nil
        controlPointHandle = nil
        dataHandle = nil
    }

    /// A planned disconnect is coming: PMD STOP for every running stream; `done` runs once the
    /// device confirmed them all (or at once when none runs, or when the link drops).
    func stopStreams(_ done: @escaping () -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        stopping = done
        applyPMDStopAll()
        if !pmd.values.contains(.stopping) {
            stopping = nil
            done()
        }
    }

    private func applyPMDStopAll() {
        guard let connection, let controlPoint = controlPointHandle else { return }
        for (type, current) in pmd where current == .running || current == .starting {
            pmd[type] = .stopping
            command(connection, controlPoint, PMDCommand.stopMeasurement(type).encoded())
            flush(type)
        }
    }

    func close() {
        dispatchPrecondition(condition: .onQueue(queue))
        phase = .stopped
        connection?.close()
        resetLinkState()
        publishStatus()
    }

    // MARK: Status and logging

    private func publishStatus() {
        var common: [String: String] = ["link": phase.rawValue]
        if let battery { common["battery"] = "\(battery) %" }
        if let rssi { common["rssi"] = "\(rssi) dBm" }
        if phase == .ready || phase == .discovering { common["mtu"] = "\(mtu)" }
        for (sensor, stream) in streams {
            var status = common
            if sensor == .electrocardiogram || sensor == .photoplethysmogram {
                let type: PMDMeasurementType = sensor == .electrocardiogram ? .ecg : .ppg
                status["pmd"] = (pmdBlocked ?? refusals[type]).map { "not recorded: \($0)" } ?? "\(pmd[type] ?? .idle)"
                if let rate = sampleRates[type] { status["sampleRate"] = "\(rate) Hz" }
                if let value = uncertainty[type] { status["clockUncertainty"] = String(format: "%.2f ms", Double(value) / 1e6) }
            } else {
                status["clockUncertainty"] = "none (stamped on receipt)"
            }
            stream.setStatus(status)
        }
    }

    private func once(_ key: String, warning message: String) {
        problems.report("wearable \(configuration.name): \(key)", "<4>" + message)
    }

    /// Counts one more of `key` and logs `message` the first time.
    private func count(_ key: String, _ message: String) {
        counts[key, default: 0] += 1
        once(key, warning: message)
    }
}
