import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import Synchronization

/// `live` (and `live-ble` alone): how long a wearable's sample takes from the daemon's receipt of
/// its notification to a live subscriber (docs/live.md). The real `sensorkitd` connects over the
/// emulated transport to an H10 served by `sensorkit-wearable` in a process of its own (1 Hz heart
/// rate, 130 Hz ECG in 73-sample PMD frames); a study app subscribes to both. A sample's latency is
/// the subscriber's SR time on arrival minus the sample's write time, which for a wearable is the
/// boot-clock instant the driver read the notification (docs/ble.md §8, "Timestamps"): both are
/// CLOCK_BOOTTIME of this machine plus the boot's anchor. The lab profile is measured beside the
/// anchor of the same daemon in the study profile with the hold set to 0, whose PMD frames wait
/// up to 1 s for their clock fit.
enum BLELiveLatencyBenchmark {
    static let app = "org.sensorkit.bench-live-ble"
    static let address = "C0:FF:EE:00:00:10"
    /// Streaming before the measured window, so the PMD clock check has agreed once (until then
    /// frames are held four times as long in the study profile: docs/ble.md §3).
    static let warmup = 3.0
    static let collect = 15.0

    struct Figures {
        var heartRate: [Double] = []
        var ecg: [Double] = []
        var ecgFrames = 0
    }

    static func run() throws {
        print(
            "\n== live (BLE): a wearable's sample from the daemon's receipt of its notification to a live subscriber, real sensorkitd, emulated H10 (issue 30) =="
        )
        let folder = (CommandLine.arguments[0] as NSString).deletingLastPathComponent
        let sensorkitd = DaemonUnderTest.path
        let wearable = folder + "/sensorkit-wearable"
        for tool in ["/usr/bin/timeout", sensorkitd, wearable] where !FileManager.default.isExecutableFile(atPath: tool) {
            print("  skipped: \(tool) is missing (make bench builds sensorkitd and sensorkit-wearable; Debian coreutils)")
            return
        }
        let lab = try measure("profile = lab\n", sensorkitd: sensorkitd, wearable: wearable, name: "lab")
        let study = try measure("profile = study\n[store]\nhold = 0\n", sensorkitd: sensorkitd, wearable: wearable, name: "study")
        func line(_ name: String, _ latencies: [Double], _ what: String) -> String {
            let figures = percentiles(latencies)
            return "  \(name.padding(toLength: 44, withPad: " ", startingAt: 0)) p50 \(IIOBenchmark.format(figures.p50)) ms, "
                + "p99 \(IIOBenchmark.format(figures.p99)) ms, max \(IIOBenchmark.format(figures.max)) ms (\(latencies.count) \(what) in \(IIOBenchmark.format(collect)) s)"
        }
        print(line("lab profile, ECG", lab.ecg, "samples, \(lab.ecgFrames) frames"))
        print(line("lab profile, heart rate", lab.heartRate, "samples"))
        print(line("anchor: study profile, hold 0, ECG", study.ecg, "samples, \(study.ecgFrames) frames"))
        print(line("anchor: study profile, hold 0, heart rate", study.heartRate, "samples"))
        let labAll = percentiles(lab.ecg + lab.heartRate)
        let studyAll = percentiles(study.ecg + study.heartRate)
        print(
            "  ratio lab ÷ study (ECG and heart rate together): p50 \(IIOBenchmark.format(labAll.p50 / max(1e-9, studyAll.p50)))×, p99 \(IIOBenchmark.format(labAll.p99 / max(1e-9, studyAll.p99)))×"
        )
        print(
            "  lab targets (ECG and heart rate together): p50 ≤ 20 ms (\(labAll.p50 <= 20 ? "met" : "missed")), p99 ≤ 50 ms (\(labAll.p99 <= 50 ? "met" : "missed"))"
        )
        if lab.heartRate.count < Int(collect) / 2 || lab.ecg.count < 130 * Int(collect) / 2 || study.ecg.isEmpty {
            print("  WARNING: too few samples reached the subscriber (logs kept with SENSORKIT_BENCH_KEEP=1)")
        }
    }

    static func percentiles(_ latencies: [Double]) -> (p50: Double, p99: Double, max: Double) {
        let sorted = latencies.sorted()
        guard let last = sorted.last else { return (.nan, .nan, .nan) }
        func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        return (percentile(0.5), percentile(0.99), last)
    }

    /// Runs the daemon with `profile` and an H10 on the emulated transport, takes the stake,
    /// subscribes to heart rate and ECG and gathers the latencies of `collect` seconds after the
    /// first `warmup` seconds of ECG.
    static func measure(_ profile: String, sensorkitd: String, wearable: String, name: String) throws -> Figures {
        let rig = try DaemonBenchmark.RigFolder(configuration: "")
        let keep = ProcessInfo.processInfo.environment["SENSORKIT_BENCH_KEEP"] == "1"
        defer { if !keep { rig.remove() } }
        let directory = rig.path + "/ble"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try
            (profile + """
                [iio]
                enabled = no
                [grant \(app)]
                sensors = heartRate, electrocardiogram
                [ble]
                transport = emulated:\(directory)
                [wearable chest]
                address = \(address)
                streams = heartRate, electrocardiogram

                """).write(toFile: rig.config, atomically: true, encoding: .utf8)
        try DaemonHarness.writeApp(app, in: rig.apps, entitlements: ["heart-rate", "ecg"], users: [String(getuid())])
        let log = rig.path + "/" + name
        let peripheral = try IIOBenchmark.spawn(
            [
                "/usr/bin/timeout", "--kill-after=5", "120", wearable, "--dir", directory, "--profile", "h10", "--address",
                address,
            ],
            stdout: log + "-wearable.log", stderr: log + "-wearable.log.err")
        defer {
            kill(peripheral.pid, SIGTERM)
            peripheral.wait()
        }
        let daemon = try IIODaemonWakeupBenchmark.Run(
            sensorkitd, rig, under: ["/usr/bin/timeout", "--kill-after=5", "120"], log: log)
        defer { daemon.stop() }
        guard daemon.ready(seconds: 30) else { throw IIOBenchmark.BenchError("sensorkitd sent no READY=1; see \(log).log.err") }
        let watcher = try rig.connect(app: app)
        defer { watcher.close() }
        guard let timeline = watcher.welcome.timeline else { throw IIOBenchmark.BenchError("no timeline in hello") }
        for sensor in [SRSensor.heartRate, .electrocardiogram] {
            if let error = watcher.call(.startRecording, { $0.sensor = sensor.rawValue }).error { throw error }
        }
        let clock = LinuxSystemClock()
        // SR ns: from when on arrivals count (set once the first ECG batch is in, plus the warm-up).
        let window = Mutex<(from: Int64?, to: Int64?)>((nil, nil))
        let figures = Mutex(Figures())
        let ended = Mutex<WireReply?>(nil)
        func subscribe(_ sensor: SRSensor) -> UInt32 {
            watcher.subscribe(sensor: sensor, device: "ble:" + address) { delivery in
                switch delivery {
                case .batch(let batch):
                    let now = timeline.anchor + clock.boottimeNanoseconds()
                    let counted = window.withLock { range -> Bool in
                        if range.from == nil, sensor == .electrocardiogram { range.from = now + Int64(warmup * 1e9) }
                        guard let from = range.from, now >= from else { return false }
                        if range.to == nil { range.to = now + Int64(collect * 1e9) }
                        return now < range.to!
                    }
                    guard counted else { return }
                    let latencies = batch.writeTimes.map { Double(now - $0) / 1e6 }
                    figures.withLock {
                        if sensor == .electrocardiogram {
                            $0.ecg += latencies
                            $0.ecgFrames += Set(batch.writeTimes).count
                        } else {
                            $0.heartRate += latencies
                        }
                    }
                case .ended(let reply): ended.withLock { $0 = $0 ?? reply }
                default: break
                }
            }
        }
        let ids = [subscribe(.heartRate), subscribe(.electrocardiogram)]
        let deadline = Date().addingTimeInterval(30 + warmup + collect)
        while Date() < deadline, ended.withLock({ $0 }) == nil {
            if let to = window.withLock({ $0.to }), timeline.anchor + clock.boottimeNanoseconds() > to { break }
            usleep(50_000)
        }
        for id in ids { watcher.notify(.cancel, target: id) }
        if let reply = ended.withLock({ $0 }), let error = reply.error, error.code != .cancelled {
            throw IIOBenchmark.BenchError("the subscription ended: \(error); see \(log).log.err")
        }
        guard window.withLock({ $0.to }) != nil else {
            throw IIOBenchmark.BenchError("no ECG reached the subscriber; see \(log).log.err")
        }
        return figures.withLock { $0 }
    }
}
