import SensorKitModel
import SensorSystem
import Testing

@testable import BLEBridge

/// The wearable link's protocol, fed events by hand: no socket, no clock, no queue
/// (docs/ble.md, "The wearable link").
@Suite struct WearableLinkMachineTests {
    typealias Machine = WearableLinkMachine
    static let second: Int64 = 1_000_000_000
    static let address = "C0:FF:EE:00:00:10"
    static let report = BLEScanReport(
        address: address, data: AdvertisingData(parsing: [0x0A, 0x09] + Array("Polar H10".utf8)))
    /// An H10's database: DIS model, battery, HRS with body sensor location, PMD.
    static let h10: [GATTCharacteristicID: GATTClient.Properties] = [
        .deviceInformation(.modelNumber): [.read], .batteryLevel: [.read, .notify],
        .heartRateMeasurement: [.notify], .bodySensorLocation: [.read],
        .pmdControlPoint: [.read, .write, .indicate], .pmdData: [.notify],
    ]
    static let getECGSettings: [UInt8] = [0x01, 0x00]
    static let stopECG: [UInt8] = [0x03, 0x00]
    /// `F0 01 00 00 00` + sample rate 130 and resolution 14.
    static let ecgSettings: [UInt8] = [0xF0, 0x01, 0x00, 0x00, 0x00, 0x00, 0x01, 0x82, 0x00, 0x01, 0x01, 0x0E, 0x00]
    static let started: [UInt8] = [0xF0, 0x02, 0x00, 0x00, 0x00]
    static let stoppedResponse: [UInt8] = [0xF0, 0x03, 0x00, 0x00, 0x00]

    /// A machine and the time, with every action it answered kept.
    struct Driver {
        var machine: Machine
        var now: Int64 = 10 * WearableLinkMachineTests.second
        var log: [Machine.Action] = []

        init(streams: [SRSensor] = [.heartRate, .onWristState, .electrocardiogram]) {
            machine = Machine(
                configuration: WearableConfiguration(
                    name: "chest", match: .address(WearableLinkMachineTests.address), streams: streams),
                durations: { "\($0 / 1_000_000) ms" })
        }

        @discardableResult
        mutating func on(_ event: Machine.Event, after nanoseconds: Int64 = 1_000_000) -> [Machine.Action] {
            now += nanoseconds
            let actions = machine.on(event, at: now)
            log += actions
            return actions
        }

        @discardableResult
        mutating func gatt(_ event: GATTLinkEvent) -> [Machine.Action] { on(.gatt(event)) }

        /// Scan, connect, discover `database` at `mtu`, answer every read (battery 80 %, model
        /// "H10", features `features`) and confirm every subscription.
        @discardableResult
        mutating func connect(
            mtu: Int = 247, database: [GATTCharacteristicID: GATTClient.Properties] = WearableLinkMachineTests.h10,
            features: [UInt8] = [0x0F, 0x03]
        ) -> [Machine.Action] {
            #expect(on(.scanned([WearableLinkMachineTests.report])) == [.connect(WearableLinkMachineTests.report)])
            on(.connected)
            var answered = gatt(.ready(mtu: mtu, characteristics: database))
            for action in answered {
                switch action {
                case .read(let id):
                    let value: [UInt8] =
                        switch id {
                        case .batteryLevel: [80]
                        case .pmdControlPoint: features
                        case .bodySensorLocation: [1]
                        default: Array("H10".utf8)
                        }
                    answered += gatt(.readCompleted(id, value: value))
                case .subscribe(let id):
                    answered += gatt(.subscribed(id))
                default: break
                }
            }
            return answered
        }

        static func writes(_ actions: [Machine.Action]) -> [[UInt8]] {
            actions.compactMap { if case .write(.pmdControlPoint, let bytes) = $0 { bytes } else { nil } }
        }

        static func gaps(_ actions: [Machine.Action]) -> [(SRSensor, String)] {
            actions.compactMap { if case .openGap(let sensor, _, _, let why) = $0 { (sensor, why) } else { nil } }
        }

        static func problems(_ actions: [Machine.Action]) -> [String] {
            actions.compactMap { if case .log(.problem(let key, _)) = $0 { key } else { nil } }
        }

        static func lastStatus(_ actions: [Machine.Action]) -> [SRSensor: [String: String]]? {
            actions.reversed().lazy.compactMap { if case .status(let status) = $0 { status } else { nil } }.first
        }

        /// Connected, ECG recorded and streaming.
        static func streamingECG() -> Driver {
            var driver = Driver()
            driver.connect()
            #expect(writes(driver.on(.recording(.electrocardiogram, on: true))) == [WearableLinkMachineTests.getECGSettings])
            #expect(writes(driver.gatt(.notification(.pmdControlPoint, value: WearableLinkMachineTests.ecgSettings))).count == 1)
            driver.gatt(.notification(.pmdControlPoint, value: WearableLinkMachineTests.started))
            #expect(driver.machine.session?.pmd[.ecg]?.phase == .running)
            return driver
        }
    }

    @Test func theSetupReadsSubscribesAndRegistersTheStreamsOnce() {
        var driver = Driver()
        let setup = driver.connect()
        let reads = setup.compactMap { if case .read(let id) = $0 { id } else { nil } }
        #expect(reads == [.deviceInformation(.modelNumber), .batteryLevel, .bodySensorLocation, .pmdControlPoint])
        let subscriptions = setup.compactMap { if case .subscribe(let id) = $0 { id } else { nil } }
        #expect(subscriptions == [.batteryLevel, .heartRateMeasurement, .pmdControlPoint, .pmdData])
        let registered = setup.compactMap { if case .register(let device, let location) = $0 { (device, location) } else { nil } }
        #expect(registered.count == 1)
        #expect(registered.first?.0.identifier == "ble:" + Self.address)
        #expect(registered.first?.0.model == "H10")
        #expect(registered.first?.1 == BodySensorLocation(rawValue: 1))
        #expect(Driver.lastStatus(setup)?[.heartRate]?["battery"] == "80 %")
        #expect(driver.machine.phase == .ready)
        // A second connection is set up again in full, but the streams stay registered.
        driver.gatt(.linkLost("peer closed"))
        driver.on(.tick, after: 2 * Self.second)
        let again = driver.connect()
        #expect(!again.contains { if case .register = $0 { true } else { false } })
        #expect(again.filter { if case .subscribe = $0 { true } else { false } }.count == 4)
    }

    @Test func aLinkLostWhileReadingSettingsOpensGapsAndTheNextLinkStartsAgain() {
        var driver = Driver()
        driver.connect()
        driver.on(.recording(.heartRate, on: true))
        driver.on(.recording(.onWristState, on: true))
        #expect(Driver.writes(driver.on(.recording(.electrocardiogram, on: true))) == [Self.getECGSettings])
        let lost = driver.gatt(.linkLost("connection timed out"))
        let lostAt = driver.now
        #expect(lost.contains(.disconnect))
        #expect(lost.contains(.openGap(.heartRate, after: nil, at: lostAt, why: "link lost: connection timed out")))
        // Wrist state's gap starts at the loss itself, not at its last change.
        #expect(lost.contains(.openGap(.onWristState, after: lostAt, at: lostAt, why: "link lost: connection timed out")))
        #expect(lost.contains(.openGap(.electrocardiogram, after: nil, at: lostAt, why: "link lost: connection timed out")))
        #expect(driver.machine.phase == .waiting)
        #expect(driver.machine.retryAt == lostAt + RetryBackoff.wearable.first)
        // The answer to the lost link's request, arriving late, belongs to no link.
        #expect(driver.gatt(.notification(.pmdControlPoint, value: Self.ecgSettings)).isEmpty)
        // Not before the backoff ends.
        driver.on(.tick, after: RetryBackoff.wearable.first / 2)
        #expect(driver.on(.scanned([Self.report])).isEmpty)
        driver.on(.tick, after: RetryBackoff.wearable.first)
        #expect(driver.machine.phase == .searching)
        #expect(Driver.writes(driver.connect()) == [Self.getECGSettings])
        #expect(driver.machine.session?.pmd[.ecg]?.phase == .gettingSettings)
    }

    @Test func alreadyInStateIsStoppedAndStartedAfresh() {
        var driver = Driver()
        driver.connect()
        driver.on(.recording(.electrocardiogram, on: true))
        #expect(
            Driver.writes(driver.gatt(.notification(.pmdControlPoint, value: Self.ecgSettings))) == [
                [0x02, 0x00, 0x00, 0x01, 0x82, 0x00, 0x01, 0x01, 0x0E, 0x00]
            ])
        #expect(
            Driver.writes(driver.gatt(.notification(.pmdControlPoint, value: [0xF0, 0x02, 0x00, 0x06, 0x00]))) == [Self.stopECG])
        #expect(driver.machine.session?.pmd[.ecg]?.phase == .restarting)
        #expect(Driver.writes(driver.gatt(.notification(.pmdControlPoint, value: Self.stoppedResponse))) == [Self.getECGSettings])
        driver.gatt(.notification(.pmdControlPoint, value: Self.ecgSettings))
        driver.gatt(.notification(.pmdControlPoint, value: Self.started))
        #expect(driver.machine.session?.pmd[.ecg]?.phase == .running)
        #expect(driver.machine.sampleRates[.ecg] == 130)
    }

    @Test func aStopWhileStoppingIsConfirmedOnceWithoutASecondCommand() {
        var driver = Driver.streamingECG()
        #expect(Driver.writes(driver.on(.recording(.electrocardiogram, on: false))) == [Self.stopECG])
        let first = driver.on(.stopRequested)
        #expect(Driver.writes(first).isEmpty)
        #expect(!first.contains(.stopped))
        let second = driver.on(.stopRequested)
        #expect(Driver.writes(second).isEmpty)
        #expect(!second.contains(.stopped))
        let confirmed = driver.gatt(.notification(.pmdControlPoint, value: Self.stoppedResponse))
        #expect(confirmed.filter { $0 == .stopped }.count == 1)
        #expect(Driver.writes(confirmed).isEmpty)  // not started again: a stop is pending
        #expect(driver.log.filter { $0 == .stopped }.count == 1)
    }

    @Test func aStopWithNothingRunningIsDoneAtOnceAndALostLinkEndsAPendingStop() {
        var idle = Driver()
        #expect(idle.on(.stopRequested) == [.stopped])
        var driver = Driver.streamingECG()
        #expect(Driver.writes(driver.on(.stopRequested)) == [Self.stopECG])
        #expect(driver.gatt(.linkLost("gone")).contains(.stopped))
    }

    @Test func anMTUTooSmallForPMDRecordsHeartRateOnlyAndOpensAGap() {
        var driver = Driver()
        let setup = driver.connect(mtu: 23)
        #expect(Driver.problems(setup).contains("mtu"))
        #expect(!setup.contains(.subscribe(.pmdControlPoint)))
        #expect(setup.contains(.subscribe(.heartRateMeasurement)))
        let staked = driver.on(.recording(.electrocardiogram, on: true))
        #expect(Driver.writes(staked).isEmpty)
        #expect(
            Driver.gaps(staked).map(\.1) == [
                "\(SRSensor.electrocardiogram.rawValue) not recorded: the link's ATT MTU is 23, PMD needs at least 232"
            ])
        #expect(
            Driver.lastStatus(staked)?[.electrocardiogram]?["pmd"]
                == "not recorded: the link's ATT MTU is 23, PMD needs at least 232")
    }

    @Test func aMeasurementTheDeviceDoesNotOfferIsRefusedWithAGap() {
        var driver = Driver()
        driver.connect(features: [0x0F, 0x02])  // PPG only
        let staked = driver.on(.recording(.electrocardiogram, on: true))
        #expect(Driver.writes(staked).isEmpty)
        #expect(Driver.gaps(staked).map(\.1).contains("the device does not offer PMD ecg"))
        #expect(Driver.problems(staked) == ["feature:ecg"])
        #expect(driver.machine.session?.pmd[.ecg]?.phase == .refused)
        #expect(Driver.lastStatus(staked)?[.electrocardiogram]?["pmd"] == "not recorded: the device does not offer PMD ecg")
    }

    @Test func aRefusedStartIsAGapAndNotRetriedOnThisLink() {
        var driver = Driver()
        driver.connect()
        driver.on(.recording(.electrocardiogram, on: true))
        driver.gatt(.notification(.pmdControlPoint, value: Self.ecgSettings))
        let refused = driver.gatt(.notification(.pmdControlPoint, value: [0xF0, 0x02, 0x00, 0x0A, 0x00]))  // invalid MTU
        #expect(Driver.gaps(refused).map(\.1) == ["the device refused PMD ecg for the link's MTU (247)"])
        #expect(Driver.writes(driver.on(.tick, after: 10 * Self.second)).isEmpty)
    }

    @Test func aReconnectAfterALinkLossOwesOneGapPerRecordedStream() {
        var driver = Driver(streams: [.heartRate, .onWristState])
        driver.connect()
        driver.on(.recording(.heartRate, on: true))
        driver.on(.recording(.onWristState, on: true))
        let contact: [UInt8] = [0x06, 72]  // sensor contact detected, 72 bpm
        let first = driver.gatt(.notification(.heartRateMeasurement, value: contact))
        #expect(first.contains { if case .emit(.heartRate, _, _) = $0 { true } else { false } })
        #expect(first.contains { if case .emit(.onWristState, .wristState(onWrist: true), _) = $0 { true } else { false } })
        let lost = driver.gatt(.linkLost("supervision timeout"))
        #expect(Driver.gaps(lost).map(\.0) == [.heartRate, .onWristState])
        driver.on(.tick, after: Self.second)
        let setup = driver.connect()
        #expect(Driver.gaps(setup).isEmpty)
        // The state while the link was down is unknown: the same state is recorded again.
        let back = driver.gatt(.notification(.heartRateMeasurement, value: contact))
        #expect(back.contains { if case .emit(.onWristState, .wristState(onWrist: true), _) = $0 { true } else { false } })
        #expect(back.contains { if case .emit(.heartRate, _, _) = $0 { true } else { false } })
    }

    @Test func aFailedConnectBacksOffAndExplainsABusyChannel() {
        var driver = Driver()
        driver.on(.scanned([Self.report]))
        let failed = driver.on(.connectFailed(.busy("connect: Device or resource busy")))
        let lines = failed.compactMap { if case .log(.problem(_, let line)) = $0 { line } else { nil } }
        #expect(lines.count == 1)
        #expect(lines.first?.contains("usually bluetoothd") == true)
        #expect(lines.first?.contains("bluetoothctl remove \(Self.address)") == true)
        #expect(driver.machine.phase == .waiting)
        #expect(driver.machine.retryAt == driver.now + RetryBackoff.wearable.first)
    }

    @Test func hostileValuesAreDroppedAndCounted() {
        var driver = Driver()
        driver.connect()
        // A battery level above 100 % is not a level.
        let battery = driver.gatt(.notification(.batteryLevel, value: [150]))
        #expect(Driver.problems(battery) == ["battery"])
        #expect(driver.machine.battery == 80)
        // Control-point input that does not decode.
        #expect(Driver.problems(driver.gatt(.notification(.pmdControlPoint, value: [0xF0, 0x01]))) == ["cp"])
        #expect(Driver.problems(driver.gatt(.notification(.pmdControlPoint, value: [0x7E]))) == ["cp"])
        // A heart-rate value that does not decode (odd RR bytes) is no sample.
        let malformed = driver.gatt(.notification(.heartRateMeasurement, value: [0x10, 72, 0x01]))
        #expect(Driver.problems(malformed) == ["hrm"])
        // A PMD frame of a stream not running.
        #expect(Driver.problems(driver.gatt(.notification(.pmdData, value: [0x00, 1, 2, 3]))) == ["frame-unexpected"])
        // A settings answer whose TLVs do not decode refuses the stream.
        driver.on(.recording(.electrocardiogram, on: true))
        let settings = driver.gatt(.notification(.pmdControlPoint, value: [0xF0, 0x01, 0x00, 0x00, 0x00, 0x00, 0x05, 0x82]))
        #expect(Driver.problems(settings) == ["settings:ecg"])
        #expect(driver.machine.session?.pmd[.ecg]?.phase == .refused)
        #expect(driver.machine.phase == .ready)
    }

    @Test func anEndlessResponseInPartsRefusesTheStream() {
        var driver = Driver()
        driver.connect()
        driver.on(.recording(.electrocardiogram, on: true))
        var dropped: [Machine.Action] = []
        for _ in 0...PMDResponseAssembler.maximumParts {
            dropped += driver.gatt(.notification(.pmdControlPoint, value: [0xF0, 0x01, 0x00, 0x00, 0x01, 0x00]))
        }
        #expect(Driver.problems(dropped) == ["cp-continuation"])
        #expect(driver.machine.session?.pmd[.ecg]?.phase == .refused)
    }

    @Test func aStreamTheDeviceStopsIsAGapAndStartedAgainAfterAPause() {
        var driver = Driver.streamingECG()
        let stopped = driver.gatt(.notification(.pmdControlPoint, value: [0x01, 0x00]))
        #expect(Driver.gaps(stopped).map(\.1) == ["the device stopped the stream"])
        #expect(driver.machine.session?.pmd[.ecg]?.phase == .pausing)
        #expect(Driver.writes(driver.on(.tick, after: RetryBackoff.wearable.first / 2)).isEmpty)
        #expect(Driver.writes(driver.on(.tick, after: RetryBackoff.wearable.first)) == [Self.getECGSettings])
    }

    @Test func theConfiguredSensorsAndThePMDTableAgree() {
        #expect(
            WearableConfiguration.streamSensors == [
                .heartRate, .onWristState, .electrocardiogram, .photoplethysmogram, .accelerometer,
            ])
        #expect(Set(WearableConfiguration.streamSensors) == Set(WearableSamples.sensors))
        #expect(PMDStreamKind.of(.electrocardiogram)?.measurementType == .ecg)
        #expect(PMDStreamKind.of(.ppg)?.sensor == .photoplethysmogram)
        #expect(PMDStreamKind.of(.acc)?.sensor == .accelerometer)
        // PPI feeds heart rate beside HRS; heart rate's own source is not PMD.
        #expect(PMDStreamKind.of(.ppi)?.sensor == .heartRate && PMDStreamKind.of(SRSensor.heartRate) == nil)
    }
}
