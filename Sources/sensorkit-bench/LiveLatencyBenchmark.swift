import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import Synchronization

/// `live`: how long a sample takes from the device read to a live subscriber (docs/live.md). The
/// real `sensorkitd` reads a 100 Hz BMI160 fed by umockdev in watermark-sized bursts; a study app
/// subscribes to the accelerometer, and each sample's latency is the subscriber's SR time on
/// arrival minus the sample's write time (when the daemon read it from the device). The lab
/// profile (each read handed over at once) is measured beside the anchor of the same daemon in
/// the study profile with the hold set to 0 (the battery-friendly hand-over of whole batches).
enum LiveLatencyBenchmark {
    static let app = "org.sensorkit.bench-live"
    static let hertz = IIOWakeupBenchmark.hertz
    static let burst = IIOWakeupBenchmark.burst
    static let collect = 6.0
    static let feedSeconds = 20

    static func run() throws {
        print("\n== live: a sample from the device read to a live subscriber, real sensorkitd, umockdev-fed (issue 30) ==")
        let sensorkitd = DaemonUnderTest.path
        for tool in ["/usr/bin/umockdev-run", "/usr/bin/timeout", sensorkitd]
        where !FileManager.default.isExecutableFile(atPath: tool) {
            print("  skipped: \(tool) is missing (make bench builds sensorkitd; Debian umockdev, coreutils)")
            return
        }
        let workdir = NSTemporaryDirectory() + "sensorkit-bench-live-\(getpid())"
        try FileManager.default.createDirectory(atPath: workdir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: workdir) }
        let device = workdir + "/bmi160-\(hertz)hz.umockdev"
        try IIOBenchmark.describeDevice(hertz: hertz).write(toFile: device, atomically: true, encoding: .utf8)
        let script = workdir + "/paced.script"
        try Data(IIOBenchmark.streamScript(scans: feedSeconds * hertz, hertz: hertz, perLine: burst, delay: 1000 * burst / hertz))
            .write(to: URL(fileURLWithPath: script))
        let grant = "[grant \(app)]\nsensors = accelerometer, rotationRate\n"
        let lab = try measure(
            "profile = lab\n" + grant, sensorkitd: sensorkitd, device: device, script: script, log: workdir + "/lab")
        let study = try measure(
            "profile = study\n[store]\nhold = 0\n" + grant, sensorkitd: sensorkitd, device: device, script: script,
            log: workdir + "/study")
        func line(_ name: String, _ figures: Figures) -> String {
            "  \(name.padding(toLength: 44, withPad: " ", startingAt: 0)) p50 \(IIOBenchmark.format(figures.p50)) ms, "
                + "p99 \(IIOBenchmark.format(figures.p99)) ms, max \(IIOBenchmark.format(figures.max)) ms (\(figures.count) samples in \(IIOBenchmark.format(collect)) s)"
        }
        print(line("lab profile (hand-over at each read)", lab))
        print(line("anchor: study profile, hold 0 (batched)", study))
        print(
            "  ratio lab ÷ study: p50 \(IIOBenchmark.format(lab.p50 / max(1e-9, study.p50)))×, p99 \(IIOBenchmark.format(lab.p99 / max(1e-9, study.p99)))×"
        )
        print(
            "  lab targets: p50 ≤ 20 ms (\(lab.p50 <= 20 ? "met" : "missed")), p99 ≤ 50 ms (\(lab.p99 <= 50 ? "met" : "missed"))"
        )
        if lab.count < hertz || study.count < hertz {
            print("  WARNING: too few samples reached the subscriber; see \(workdir)/*.log.err (kept: SENSORKIT_BENCH_KEEP=1)")
        }
    }

    struct Figures {
        var p50: Double, p99: Double, max: Double, count: Int
    }

    /// Runs the daemon with `configuration` twice — once without a feed to take the stake, then
    /// with the paced feed — and gathers the latencies of `collect` seconds of subscription.
    static func measure(_ configuration: String, sensorkitd: String, device: String, script: String, log: String) throws
        -> Figures
    {
        let rig = try DaemonBenchmark.RigFolder(configuration: configuration)
        defer { rig.remove() }
        try DaemonHarness.writeApp(
            app, in: rig.apps, entitlements: ["motion-accelerometer", "motion-rotation-rate"], users: [String(getuid())])
        let first = try IIODaemonWakeupBenchmark.Run(sensorkitd, rig, device: device, script: nil, log: log + "-stake")
        defer { first.stop() }
        guard first.ready(seconds: 30) else {
            throw IIOBenchmark.BenchError("sensorkitd sent no READY=1; see \(log)-stake.log.err")
        }
        let stake = try rig.connect(app: app)
        for sensor in [SRSensor.accelerometer, .rotationRate] {
            if let error = stake.call(.startRecording, { $0.sensor = sensor.rawValue }).error { throw error }
        }
        stake.close()
        first.stop()

        let second = try IIODaemonWakeupBenchmark.Run(sensorkitd, rig, device: device, script: script, log: log)
        defer { second.stop() }
        guard second.ready(seconds: 30) else { throw IIOBenchmark.BenchError("sensorkitd sent no READY=1; see \(log).log.err") }
        let watcher = try rig.connect(app: app)
        defer { watcher.close() }
        guard let timeline = watcher.welcome.timeline else { throw IIOBenchmark.BenchError("no timeline in hello") }
        let clock = LinuxSystemClock()
        let latencies = Mutex<[Double]>([])
        let ended = Mutex<WireReply?>(nil)
        let id = watcher.subscribe(sensor: .accelerometer) { delivery in
            switch delivery {
            case .batch(let batch):
                let now = timeline.anchor + clock.boottimeNanoseconds()
                latencies.withLock { all in
                    for written in batch.writeTimes { all.append(Double(now - written) / 1e6) }
                }
            case .ended(let reply): ended.withLock { $0 = reply }
            default: break
            }
        }
        usleep(UInt32(collect * 1e6))
        watcher.notify(.cancel, target: id)
        if let reply = ended.withLock({ $0 }), let error = reply.error, error.code != .cancelled {
            throw IIOBenchmark.BenchError("the subscription ended: \(error)")
        }
        second.stop()
        let sorted = latencies.withLock { $0 }.sorted()
        guard !sorted.isEmpty else { return Figures(p50: .nan, p99: .nan, max: .nan, count: 0) }
        func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        return Figures(p50: percentile(0.5), p99: percentile(0.99), max: sorted.last!, count: sorted.count)
    }
}
