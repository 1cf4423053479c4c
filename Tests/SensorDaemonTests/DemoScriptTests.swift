import Foundation
import Glibc
import SensorSimulation
import SensorSystem
import SensorTestKit
import Testing

/// `scripts/demo.sh` end to end with the debug build's binaries (the folder of this test bundle):
/// the umockdev tablet, the emulated chest strap and the emulated optical sensor are recorded,
/// every sensor family shows samples in the summary (heart rate, ECG and PPG from the wearables
/// too), values are written for people, the health table does not call streams that have just
/// begun STALLED, and nothing the script started outlives it — neither when it ends by itself nor
/// when Ctrl-C ends the recording.
@Suite(.serialized, .needs(.umockdev))
struct DemoScriptTests {
    static let top = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let sensors = [
        "accelerometer", "rotationRate", "ambientLightSensor", "ambientPressure", "pedometerData",
        "heartRate", "onWristState", "electrocardiogram", "photoplethysmogram",
    ]

    struct Outcome {
        var status: Int32
        var output: String
        /// The rig's folder, from "where the data lives: FOLDER/state".
        var rig: String?
    }

    /// Runs the demo inside `timeout`; `interruptAfter`: SIGINT to the script that many seconds
    /// after it announces the recording.
    static func run(seconds: Int, strapDrops: Int = 25, interruptAfter: Double? = nil) throws -> Outcome {
        let binaries = (IIODaemonRun.daemonBinary as NSString).deletingLastPathComponent
        // Output to a file, not a pipe: every child the script starts would hold a pipe's write end.
        let outputPath = NSTemporaryDirectory() + "demo-output-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let sink = open(outputPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard sink >= 0 else { throw SystemError("open(\(outputPath))", errno: errno) }
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { Glibc.close(null) }
        // ChildProcess: default signal dispositions and an empty mask, as from a terminal (Foundation's
        // Process would pass on the runner's blocked signals, and a shell cannot trap those).
        let process = try ChildProcess(
            [
                "/usr/bin/timeout", "--kill-after=15", "75", "/usr/bin/env",
                "DEMO_SECONDS=\(seconds)", "DEMO_STRAP_DROPS=\(strapDrops)", "/bin/bash",
                top + "/scripts/demo.sh", binaries,
            ], stdin: null, stdout: sink, stderr: sink)
        Glibc.close(sink)
        var interrupted = false
        var recordingSince: Date?
        func output() -> String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
        while process.isRunning {
            usleep(100_000)
            if recordingSince == nil, output().contains("== recording for") { recordingSince = Date() }
            if let after = interruptAfter, let since = recordingSince, !interrupted, Date().timeIntervalSince(since) >= after {
                // Ctrl-C to the script (timeout's child) only: timeout would take a SIGINT of its
                // own as the cue to SIGKILL the script after --kill-after.
                interrupted = true
                let children =
                    (try? String(contentsOfFile: "/proc/\(process.pid)/task/\(process.pid)/children", encoding: .utf8)) ?? ""
                for child in children.split(separator: " ").compactMap({ Int32($0) }) { kill(child, SIGINT) }
            }
        }
        let text = output()
        let rig = text.split(separator: "\n").lazy.compactMap { line -> String? in
            guard let range = line.range(of: "where the data lives: ") else { return nil }
            return line[range.upperBound...].split(separator: " ").first.map { String($0.dropLast("/state".count)) }
        }.first
        return Outcome(status: process.exitStatus ?? -1, output: text, rig: rig)
    }

    /// The summary's "SENSOR SAMPLES SPAN RATE GAPS" lines: samples, rate and gaps per sensor.
    static func summary(_ output: String) -> [String: (samples: Int, rate: Double?, gaps: String)] {
        var table: [String: (Int, Double?, String)] = [:]
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 5, sensors.contains(String(fields[0])), let samples = Int(fields[1]) else { continue }
            table[String(fields[0])] = (samples, Double(fields[3]), fields[4...].joined(separator: " "))
        }
        return table
    }

    /// Processes whose command line names the rig's folder (the daemon, umockdev, the feeder, the emulator).
    static func survivors(of rig: String) -> [String] {
        let own = getpid()
        return ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry in
            guard let pid = Int32(entry), pid != own,
                let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
            else { return nil }
            let command = String(decoding: data.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
            return command.contains(rig) ? "\(pid): \(command)" : nil
        }
    }

    static func expectRecordedEverything(_ outcome: Outcome) {
        let table = summary(outcome.output)
        for sensor in sensors {
            #expect((table[sensor]?.samples ?? 0) > 0, "\(sensor) has no samples in the summary\n\(outcome.output)")
        }
        // Kernel and device timestamps: the stream's 100 Hz and the H10's 130 Hz ECG, not arrival times.
        if let rate = table["accelerometer"]?.rate { #expect(abs(rate - 100) < 5, "accelerometer \(rate) Hz") }
        if let rate = table["electrocardiogram"]?.rate { #expect(abs(rate - 130) < 6.5, "ECG \(rate) Hz") }
        if let rate = table["photoplethysmogram"]?.rate { #expect(abs(rate - 55) < 2.75, "PPG \(rate) Hz") }
    }

    /// The first values read as a person writes them: units, a few decimals, enum names; and the
    /// status right after the app starts says `starting`, not STALLED or LOW.
    static func expectReadableOutput(_ outcome: Outcome) throws {
        let output = outcome.output
        let firstValues = try #require(
            output.range(of: "-- accelerometer: first values").map { String(output[$0.lowerBound...]) }, "\(output)")
        for wanted in [
            " g, y ", " rad/s", " lx, sensor placement ", " kPa, ", " °C", " steps in ", " beats/min, confidence ",
            " µV, lead ", "worn (skin contact)", "optical ppg0 ",
        ] {
            #expect(firstValues.contains(wanted), "no \"\(wanted)\" in\n\(firstValues)")
        }
        // No machine-length floats (417.53499999999997), no raw enum numbers (onWrist 1.0, lead 2.0).
        let long = try Regex("[0-9]\\.[0-9]{5,}")
        let section = firstValues.components(separatedBy: "== the daemon's view now").first ?? firstValues
        #expect(section.firstMatch(of: long) == nil, "\(section)")
        #expect(!section.contains("onWrist 1") && !section.contains("lead 2.0"), "\(section)")
        let firstStatus = try #require(
            output.components(separatedBy: "== the study app starts recording").dropFirst().first?
                .components(separatedBy: "\n\n").dropFirst().first, "\(output)")
        #expect(!firstStatus.contains("STALLED") && !firstStatus.contains("LOW"), "\(firstStatus)")
    }

    static func expectCleanedUp(_ outcome: Outcome) throws {
        let rig = try #require(outcome.rig, "no rig folder in the output\n\(outcome.output)")
        #expect(rig.hasPrefix("/tmp/sensorkit-demo-"))
        #expect(survivors(of: rig).isEmpty, "still running: \(survivors(of: rig))")
        #expect(!FileManager.default.fileExists(atPath: rig), "the rig's folder is left behind")
    }

    /// The strap drops its link every 5 s: the wearable's streams show gaps with their reason.
    @Test func recordsEveryFamilyExplainsTheStrapsGapsAndStopsEverythingItStarted() throws {
        let outcome = try Self.run(seconds: 12, strapDrops: 5)
        #expect(outcome.status == 0, "exit \(outcome.status)\n\(outcome.output)")
        Self.expectRecordedEverything(outcome)
        try Self.expectReadableOutput(outcome)
        let table = Self.summary(outcome.output)
        for sensor in ["heartRate", "electrocardiogram"] {
            #expect(
                table[sensor]?.gaps.contains("systemInitiated") == true,
                "\(sensor): \(table[sensor]?.gaps ?? "-")\n\(outcome.output)")
        }
        #expect(table["accelerometer"]?.gaps == "none", "\(outcome.output)")
        try Self.expectCleanedUp(outcome)
    }

    @Test func ctrlCEndsTheRecordingShowsTheSummaryAndStopsEverything() throws {
        let outcome = try Self.run(seconds: 300, interruptAfter: 10)
        #expect(outcome.output.contains("== recording ended by Ctrl-C"), "\(outcome.output)")
        Self.expectRecordedEverything(outcome)
        try Self.expectCleanedUp(outcome)
    }
}
