import BLETestKit
import Foundation
import Glibc
import SensorSimulation
import SensorSystem
import Testing

@testable import BLEBridge

struct WearableEmulatorOptionsTests {
    @Test func profilesAddressesAndNames() throws {
        let options = try WearableEmulatorOptions.parse([
            "--dir", "/tmp/x", "--profile", "h10", "--profile", "strap", "--profile", "strap",
            "--name", "Strap B", "--profile", "verity", "--address", "d2:00:00:00:00:09",
            "--duration", "2.5", "--disconnect-every", "7", "--clock-reset-after", "30", "--server-mtu", "185",
            "--flood-undecodable", "10000", "--controller", "/tmp/x/hci",
        ])
        #expect(
            options.profiles().map(\.address) == [
                "C0:FF:EE:00:00:10", "C0:FF:EE:00:00:01", "C0:FF:EE:00:00:02", "D2:00:00:00:00:09",
            ])
        #expect(options.profiles().map(\.name) == ["Polar H10 0A0B0C0D", "HR Strap 0001", "Strap B", "Polar Sense 1A2B3C4D"])
        #expect(options.profiles().map(\.pmdTypes) == [[0, 2], [], [], [1, 3]])
        #expect(
            options.duration == 2.5 && options.disconnectEvery == 7 && options.clockResetAfter == 30 && options.serverMTU == 185)
        #expect(options.floodUndecodable == 10000 && options.controller == "/tmp/x/hci")
        #expect(try WearableEmulatorOptions.parse(["--dir", "d"]).profiles().map(\.model) == ["H10"])
        #expect(try WearableEmulatorOptions.parse(["--help"]).help)
    }

    @Test func refusals() {
        let refused: [[String]] = [
            [], ["--profile", "h10"], ["--dir"], ["--dir", "d", "--name", "x"], ["--dir", "d", "--profile", "watch"],
            ["--dir", "d", "--profile", "h10", "--address", "C0:FF:EE:00:00"],
            ["--dir", "d", "--profile", "h10", "--address", "+0:FF:EE:00:00:01"],
            ["--dir", "d", "--profile", "h10", "--profile", "h10", "--address", "C0:FF:EE:00:00:10"],
            ["--dir", "d", "--duration", "0"], ["--dir", "d", "--duration", "nan"], ["--dir", "d", "--disconnect-every", "-1"],
            ["--dir", "d", "--server-mtu", "22"], ["--dir", "d", "--server-mtu", "70000"],
            ["--dir", "d", "--profile", "h10", "--name", ""],
            ["--dir", "d", "--profile", "h10", "--name", String(repeating: "x", count: 30)], ["--dir", "d", "extra"],
            ["--dir", "d", "--flood-undecodable", "0"], ["--dir", "d", "--flood-undecodable", "lots"],
            ["--dir", "d", "--controller", "relative/hci"], ["--dir", "d", "--controller"],
        ]
        for arguments in refused {
            #expect(throws: WearableEmulatorOptions.Refusal.self, "\(arguments)") { try WearableEmulatorOptions.parse(arguments) }
        }
    }
}

struct WearableSignalsTests {
    /// A minute of signals, read with the client's own decoders: heart rate in range with RR
    /// intervals that add up to the time covered, an ECG whose R waves come once per beat.
    @Test func heartRateRRAndECGAgree() throws {
        var signals = WearableSignals()
        var beats = 0
        var rrSeconds = 0.0
        for second in 1...60 {
            let measurement = try HeartRateMeasurement(
                decoding: signals.heartRateMeasurement(from: Double(second - 1), to: Double(second), withRR: true))
            #expect((60...80).contains(measurement.beatsPerMinute))
            #expect(measurement.sensorContact == .inContact)
            beats += measurement.rrIntervals.count
            rrSeconds += measurement.rrIntervals.map(HeartRateMeasurement.seconds(ofRRInterval:)).reduce(0, +)
        }
        #expect((60...80).contains(beats))
        #expect(abs(rrSeconds - 60) < 1.5)
        // A second instance: the same beats (the schedule is deterministic), read from the start.
        var ecgSignals = WearableSignals()
        let ecg = (0..<(60 * 130)).map { ecgSignals.electrocardiogram(at: Double($0) / 130) }
        let rWaves = zip(ecg, ecg.dropFirst()).filter { $0.0 < 600 && $0.1 >= 600 }.count
        #expect(abs(rWaves - beats) <= 2)
        #expect(ecg.max()! < 2000 && ecg.min()! > -1000)
        let ppg = signals.photoplethysmogram(at: 59.5)
        #expect(ppg.count == 4)
        #expect(
            try HeartRateMeasurement(decoding: signals.heartRateMeasurement(from: 60, to: 61, withRR: false)).rrIntervals.isEmpty)
    }

    /// PPI and ACC follow the same beats: each second's PP intervals are that second's RR
    /// intervals (ms against 1/1024 s, within rounding), their heart rates in range; ACC reads
    /// about 1 g, mostly on −z, as a chest strap at rest does.
    @Test func pulseIntervalsAndAccelerationFollowTheBeats() throws {
        var strap = WearableSignals()
        var optical = WearableSignals()
        for second in 1...60 {
            let rr = try HeartRateMeasurement(
                decoding: strap.heartRateMeasurement(from: Double(second - 1), to: Double(second), withRR: true)
            ).rrIntervals
            let pulses = optical.pulseIntervals(from: Double(second - 1), to: Double(second))
            #expect(pulses.count == rr.count)
            for (pulse, interval) in zip(pulses, rr) {
                #expect(abs(Double(pulse.milliseconds) - Double(interval) * 1000 / 1024) <= 1)
                #expect((55...85).contains(pulse.beatsPerMinute))
            }
        }
        for time in stride(from: 0.0, to: 10, by: 0.02) {
            let mG = strap.acceleration(at: time).map(Double.init)
            #expect(abs((mG.map { $0 * $0 }.reduce(0, +)).squareRoot() - 1000) < 60)
            #expect(mG[2] < -900)
        }
    }
}

/// `sensorkit-wearable` as a process: the emulated transport finds it, the GATT client reads a
/// heart-rate notification and an ECG frame from it, and SIGTERM takes its entries away.
@Suite(.serialized) struct WearableEmulatorProcessTests {
    static var executable: String {
        let bundle = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (bundle as NSString).deletingLastPathComponent + "/sensorkit-wearable"
    }

    @Test(.timeLimit(.minutes(3))) func servesHeartRateAndECGUntilSIGTERM() throws {
        let directory = NSTemporaryDirectory() + "wearable-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let null = try SystemCalls.open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { SystemCalls.close(null) }
        // --duration bounds the child even if this test dies before its SIGTERM.
        let child = try ChildProcess(
            [Self.executable, "--dir", directory, "--profile", "h10", "--duration", "30"], stdin: null, stdout: null, stderr: null
        )
        defer {
            if child.isRunning { kill(child.pid, SIGKILL) }
            child.wait()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let transport = EmulatedBLETransport(directory: directory)
        var reports: [BLEScanReport] = []
        for _ in 0..<500 where reports.isEmpty {
            reports = try transport.scan()
            if reports.isEmpty { usleep(10_000) }
        }
        let report = try #require(reports.first)
        #expect(report.address == "C0:FF:EE:00:00:10")
        #expect(report.data.localName == "Polar H10 0A0B0C0D")

        let harness = WearableHarness(bearer: try transport.connect(report))
        let services = try #require(harness.services)
        let measurement = try #require(services.service(.heartRateService)?.characteristic(.heartRateMeasurement))
        let pmd = try #require(services.service(.polarMeasurementDataService))
        let controlPoint = try #require(pmd.characteristic(.polarMeasurementControlPoint))
        let data = try #require(pmd.characteristic(.polarMeasurementData))
        _ = harness.on { $0.subscribe(measurement) }
        _ = harness.on { $0.subscribe(controlPoint) }
        let dataSubscription = try #require(harness.on { $0.subscribe(data) })
        #expect(harness.completion(of: dataSubscription) == .writeCompleted(dataSubscription, handle: data.cccdHandle!))
        _ = harness.on { $0.write(controlPoint.valueHandle, value: PMDCommand.startECG.encoded()) }

        #expect(harness.waitUntil { !harness.notifications(handle: measurement.valueHandle).isEmpty })
        let beat = try HeartRateMeasurement(decoding: try #require(harness.notifications(handle: measurement.valueHandle).first))
        #expect((55...85).contains(beat.beatsPerMinute))
        #expect(beat.sensorContact == .inContact)

        #expect(harness.waitUntil { !harness.notifications(handle: data.valueHandle).isEmpty })
        let frame = try PMDFrame(decoding: try #require(harness.notifications(handle: data.valueHandle).first))
        #expect(frame.samples.count == 73)
        #expect(frame.samples.allSatisfy { $0.count == 1 && $0[0] > -1000 && $0[0] < 2000 })
        let nowSince2000 = Double(time(nil) - 946_684_800)
        #expect(abs(Double(frame.deviceTimestamp) / 1e9 - nowSince2000) < 60)

        kill(child.pid, SIGTERM)
        #expect(harness.waitUntil { !child.isRunning })
        #expect(child.exitStatus == 0)
        #expect(!FileManager.default.fileExists(atPath: directory + "/C0:FF:EE:00:00:10.adv"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/C0:FF:EE:00:00:10.att"))
    }
}

/// An `EmulatedWearable` in this process with both faults on: PPG frames decode as the client
/// reads them, stamped by a device clock that restarted at 2019-01-01, and the wearable drops the
/// link by itself.
@Suite(.serialized) struct EmulatedWearableFaultTests {
    @Test(.timeLimit(.minutes(3))) func veritySendsPPGWithAResetClockAndDropsTheLink() throws {
        let directory = NSTemporaryDirectory() + "wearable-faults-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let wearable = try EmulatedWearable(
            directory: directory, profile: .veritySense(),
            faults: EmulatedWearable.Faults(disconnectEvery: 2, clockResetAfter: 0.1))
        let harness = try WearableHarness(path: wearable.peripheral.attPath)
        let services = try #require(harness.services)
        let pmd = try #require(services.service(.polarMeasurementDataService))
        let controlPoint = try #require(pmd.characteristic(.polarMeasurementControlPoint))
        let data = try #require(pmd.characteristic(.polarMeasurementData))
        _ = harness.on { $0.subscribe(controlPoint) }
        let subscribed = try #require(harness.on { $0.subscribe(data) })
        #expect(harness.completion(of: subscribed) == .writeCompleted(subscribed, handle: data.cccdHandle!))
        _ = harness.on {
            $0.write(
                controlPoint.valueHandle,
                value: PMDCommand.startMeasurement(.ppg, settings: [PMDSetting(.sampleRate, [55])]).encoded())
        }

        #expect(harness.waitUntil { !harness.notifications(handle: data.valueHandle).isEmpty })
        let frame = try PMDFrame(decoding: try #require(harness.notifications(handle: data.valueHandle).first))
        #expect(frame.isCompressed && frame.samples.count == 20)
        #expect(frame.samples.allSatisfy { $0.count == 4 && $0[0] < -200_000 && $0[3] < 0 })
        let since2019 = Double(frame.deviceTimestamp) / 1e9 - 599_616_000
        #expect(since2019 >= 0 && since2019 < 5, "device time \(frame.deviceTimestamp) is not just after 2019-01-01")

        #expect(harness.wait { if case .linkFailed = $0 { true } else { nil } } == true)
        wearable.stop()
        #expect(!FileManager.default.fileExists(atPath: wearable.peripheral.advPath))
        #expect(!FileManager.default.fileExists(atPath: wearable.peripheral.attPath))
    }
}
