import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem

/// The battery part's last line: the real `sensorkitd` (every thread: reading, pipeline, store,
/// server, timers) on the same umockdev feed as `IIOWakeupBenchmark`'s readers, beside
/// `iio_readdev` on it (docs/measurements/iio.md, "Whole daemon"). The daemon records only with a
/// stake, so a first run (device, no feed) lets a study app start recording accelerometer and
/// rotationRate — and is measured before that, with no stake, as the idle floor; the second run
/// gets the paced feed and is measured over a window in its middle from outside (`DaemonWindow`:
/// the process CPU clock, and /proc's context switches of every thread, per thread by name),
/// without a call to the daemon that would wake it. The samples are fetched through the client
/// afterwards, so the figure cannot come from a daemon that recorded nothing. The ratio's anchor is
/// `iio_readdev` on the same feed, below a `umockdev-run` of its own, measured the same way over
/// the same window beside the daemon (`Readdev`); the ratio to it alone, once before and once after
/// the daemon (`readdevWindow`), is printed beside it.
///
/// The daemon runs as on a tablet: a system bus with logind on it (`tabletSystemBus`), and the
/// window in the steady state — it starts `settle` s after the daemon, once the threads
/// libdispatch started for the start-up have retired (idle workers end after ≈ 5 s), since a
/// battery pays for the hours of recording, not for the first seconds.
enum IIODaemonWakeupBenchmark {
    static let app = "org.sensorkit.bench-battery"
    static let settle = 10.0
    static let window = 10.0
    /// Long enough that the feed outlasts the window, whenever the daemon opens the device.
    static let feedSeconds = 24

    /// `anchor`: `iio_readdev`'s figures by the difference of a long and a short run, printed
    /// beside the anchor measured alike (nil when run alone: `iio-daemon`).
    static func run(workdir: String, device: String, anchor: (wakeups: Double, cpu: Double)?) throws {
        let sensorkitd = DaemonUnderTest.path
        guard FileManager.default.isExecutableFile(atPath: sensorkitd) else {
            print(
                "  whole daemon: skipped, no \(sensorkitd) (make bench builds it; by hand: swift build -c release --product sensorkitd)"
            )
            return
        }
        let hertz = IIOWakeupBenchmark.hertz, burst = IIOWakeupBenchmark.burst
        let rig = try DaemonBenchmark.RigFolder(
            // The study profile's batched hand-over (the lab profile hands over at each read, for
            // live subscribers), with the hold at 0 so the samples can be counted right after.
            configuration: "profile = study\n[store]\nhold = 0\n[grant \(app)]\nsensors = accelerometer, rotationRate\n")
        // SENSORKIT_BENCH_KEEP=1 keeps the rig (its state holds the stake), to profile the daemon by hand.
        defer {
            if ProcessInfo.processInfo.environment["SENSORKIT_BENCH_KEEP"] == "1" {
                print("  kept: \(rig.path)")
            } else {
                rig.remove()
            }
        }
        try DaemonHarness.writeApp(
            app, in: rig.apps, entitlements: ["motion-accelerometer", "motion-rotation-rate"], users: [String(getuid())])
        let systemBus = try tabletSystemBus()
        defer { systemBus.close() }
        setenv("DBUS_SYSTEM_BUS_ADDRESS", systemBus.address, 1)
        defer { unsetenv("DBUS_SYSTEM_BUS_ADDRESS") }

        // Run 1: the device, no feed. Idle (no stake) once READY=1, then the stake.
        let first = try Run(sensorkitd, rig, device: device, script: nil, log: workdir + "/daemon-idle")
        defer { first.stop() }
        guard first.ready(seconds: 30) else {
            throw IIOBenchmark.BenchError("sensorkitd sent no READY=1; see \(workdir)/daemon-idle.log.err")
        }
        usleep(1_000_000)
        let idleStart = DaemonWindow.Reading(pid: first.daemon)
        usleep(UInt32(window * 1e6))
        let idle = DaemonWindow(from: idleStart, to: DaemonWindow.Reading(pid: first.daemon))
        let stake = try rig.connect(app: app)
        for sensor in [SRSensor.accelerometer, .rotationRate] {
            if let error = stake.call(.startRecording, { $0.sensor = sensor.rawValue }).error { throw error }
        }
        stake.close()
        first.stop()

        // Run 2: the paced feed; the window starts `settle` s after the daemon does.
        let scans = feedSeconds * hertz
        let script = workdir + "/daemon-paced-\(scans).script"
        try Data(IIOBenchmark.streamScript(scans: scans, hertz: hertz, perLine: burst, delay: 1000 * burst / hertz))
            .write(to: URL(fileURLWithPath: script))
        let anchorBefore = try readdevWindow(device: device, script: script, scans: scans, log: workdir + "/readdev-window-1")
        let launched = Date()
        let second = try Run(sensorkitd, rig, device: device, script: script, log: workdir + "/daemon-paced")
        defer { second.stop() }
        // The anchor again, beside the daemon: its own umockdev device and the same feed, read over
        // the same window, so a machine that drifts between windows moves both (the ratio before
        // and after moved by a fifth from run to run; docs/measurements/iio.md, "2026-12-07, late").
        let beside = try Readdev(device: device, script: script, scans: scans, log: workdir + "/readdev-beside")
        defer { beside.finish() }
        // A client has talked to the daemon before the window, as one always has on a tablet: it
        // starts threads of libdispatch's that retire before the window (within ≈ 5 s).
        let early = try rig.connect(app: app)
        early.close()
        usleep(UInt32(max(0, settle - Date().timeIntervalSince(launched)) * 1e6))
        let start = DaemonWindow.Reading(pid: second.daemon)
        let besideStart = DaemonWindow.Reading(pid: beside.pid)
        usleep(UInt32(window * 1e6))
        let busy = DaemonWindow(from: start, to: DaemonWindow.Reading(pid: second.daemon))
        let anchorBeside = DaemonWindow(from: besideStart, to: DaemonWindow.Reading(pid: beside.pid))
        let reader = try rig.connect(app: app)
        defer { reader.close() }
        let atWindowEnd = fetchedCount(reader)
        var recorded = atWindowEnd
        _ = DaemonHarness.eventually(Double(feedSeconds) + 5, every: 0.5) {
            recorded = fetchedCount(reader)
            return recorded >= scans
        }
        second.stop()
        beside.finish()
        let anchorAfter = try readdevWindow(device: device, script: script, scans: scans, log: workdir + "/readdev-window-2")

        let scansInWindow = busy.seconds * Double(hertz)
        let anchorRuns = [anchorBefore, anchorAfter].map { $0.cpuMicroseconds / ($0.seconds * Double(hertz)) }
        let anchorPerScan = anchorRuns.reduce(0, +) / Double(anchorRuns.count)
        let anchorWakeups = (anchorBefore.switchesPerSecond + anchorAfter.switchesPerSecond) / 2
        let besidePerScan = anchorBeside.cpuMicroseconds / (anchorBeside.seconds * Double(hertz))
        print(
            "  anchor measured as the daemon is: iio_readdev -b \(IIOWakeupBenchmark.burst) on the same feed, "
                + "beside the daemon in its window (a umockdev device of its own): "
                + "\(IIOBenchmark.format(anchorBeside.switchesPerSecond)) wake-ups/s, \(IIOBenchmark.format(besidePerScan)) CPU-µs per scan; "
                + "alone in the same length of window before and after the daemon: \(IIOBenchmark.format(anchorWakeups)) wake-ups/s, "
                + "\(anchorRuns.map { IIOBenchmark.format($0) }.joined(separator: " and ")) CPU-µs per scan"
                + (anchor.map { " (the difference of a long and a short run above: \(IIOBenchmark.format($0.cpu * 1e6)))" } ?? "")
        )
        let cpuPerScan = busy.cpuMicroseconds / scansInWindow
        print(
            "  sensorkitd, whole daemon (stake on accel + gyro)  \(IIOBenchmark.format(busy.switchesPerSecond)) wake-ups/s, "
                + "\(IIOBenchmark.format(cpuPerScan)) CPU-µs per scan (\(IIOBenchmark.format(busy.seconds)) s window after \(IIOBenchmark.format(settle)) s; "
                + "CPU from the process's CPU clock, every thread, ended ones included; wake-ups from /proc, every thread"
                + (busy.ended > 0 ? " but the \(busy.ended) that ended in the window" : "") + ")"
        )
        print("  (sensorkitd: \(sensorkitd))")
        print("  (sensorkitd's system bus: a private dbus-daemon with python-dbusmock's logind on it, as a tablet has one)")
        // The target's ratio is the one beside: the two in the same seconds of the same machine.
        let cpuRatio = cpuPerScan / max(1e-12, besidePerScan)
        print(
            "  ratio sensorkitd ÷ iio_readdev beside it (the same window): "
                + "\(IIOBenchmark.format(busy.switchesPerSecond / max(1e-9, anchorBeside.switchesPerSecond)))× wake-ups, "
                + "\(IIOBenchmark.format(cpuRatio))× CPU per scan (targets: ≤ 12 wake-ups/s, ≤ 1.5× CPU per scan); "
                + "÷ iio_readdev alone before and after: \(IIOBenchmark.format(cpuPerScan / max(1e-12, anchorPerScan)))× CPU per scan"
        )
        print(
            "  battery targets, whole daemon beside iio_readdev: wake-ups \(IIOBenchmark.format(busy.switchesPerSecond))/s "
                + "(target ≤ 12: \(busy.switchesPerSecond <= 12 ? (busy.ended > 0 ? "met, a lower bound" : "met") : "missed")), "
                + "CPU per scan \(IIOBenchmark.format(cpuRatio))× iio_readdev's (target ≤ 1.5×: \(cpuRatio <= 1.5 ? "met" : "missed"))"
        )
        print(
            "  idle floor (same daemon, device present, no stake, no feed, \(IIOBenchmark.format(window)) s): "
                + "\(IIOBenchmark.format(idle.switchesPerSecond)) wake-ups/s, "
                + "\(IIOBenchmark.format(idle.cpuMicroseconds / idle.seconds / 1e4)) % of one core"
        )
        for (what, figures) in [("recording", busy), ("idle", idle)] {
            let threads = figures.threads
            print(
                "  per thread, \(what) (/proc/PID/task/*/comm and wchan; switches/s, CPU-ms): "
                    + threads.byName.filter { $0.switchesPerSecond >= 0.05 }.map {
                        "\($0.name)\($0.count > 1 ? " ×\($0.count)" : ""): \(IIOBenchmark.format($0.switchesPerSecond)), "
                            + IIOBenchmark.format(Double($0.cpuNanoseconds) / 1e6)
                    }.joined(separator: "; ")
                    + (threads.ended > 0 ? "; \(threads.ended) thread(s) ended in the window (their counts are missing)" : ""))
        }
        if atWindowEnd >= scans {
            print("  WARNING: the feed ended before the window did (\(atWindowEnd) samples fetched at its end)")
        }
        if recorded < scans {
            print(
                "  WARNING: the daemon recorded \(recorded) of \(scans) accelerometer samples; see \(workdir)/daemon-paced.log.err"
            )
        }
        print(
            "  recorded: \(recorded) of \(scans) accelerometer samples fetched through the client (\(atWindowEnd) at the window's end)"
        )
    }

    /// `iio_readdev -b burst` on the paced feed under umockdev, measured as the daemon is: a
    /// `window` starting `settle` s after it starts, from outside (`DaemonWindow`). The long/short
    /// difference of `IIOWakeupBenchmark` counts its start-up and end in neither run alike, and
    /// moved between 4.0 and 7.3 µs a scan from run to run; the window read 5.4–5.5 in three runs.
    static func readdevWindow(device: String, script: String, scans: Int, log: String) throws -> DaemonWindow {
        let reader = try Readdev(device: device, script: script, scans: scans, log: log)
        defer { reader.finish() }
        usleep(UInt32(max(0, settle - Date().timeIntervalSince(reader.launched)) * 1e6))
        let start = DaemonWindow.Reading(pid: reader.pid)
        usleep(UInt32(window * 1e6))
        return DaemonWindow(from: start, to: DaemonWindow.Reading(pid: reader.pid))
    }

    /// `iio_readdev -b burst` reading the paced feed below a `umockdev-run` of its own; `pid` is
    /// the reader below it. It stops by itself once it has read the feed.
    final class Readdev {
        let group: ChildProcess
        let pid: pid_t
        let launched: Date
        private var finished = false

        init(device: String, script: String, scans: Int, log: String) throws {
            group = try IIOBenchmark.spawn(
                IIOBenchmark.umockdevRun(device: device, script: script, seconds: 120)
                    + ["/usr/bin/iio_readdev", "-s", String(scans), "-b", String(IIOWakeupBenchmark.burst), "iio:device0"],
                stdout: "/dev/null", stderr: log + ".err")
            launched = Date()
            pid = try Run.descendant(
                of: group, named: "iio_readdev", within: 5, missing: "no iio_readdev below umockdev-run; see \(log).err")
        }

        /// Waits for the feed to be read (umockdev-run cleans up after it then), then ends the
        /// group; once.
        func finish() {
            guard !finished else { return }
            finished = true
            let deadline = launched.addingTimeInterval(Double(feedSeconds) + 10)
            while group.isRunning && Date() < deadline { usleep(50_000) }
            kill(-group.pid, SIGKILL)
            group.wait()
        }
    }

    /// Accelerometer samples the app can fetch now (hold 0).
    static func fetchedCount(_ connection: ReaderConnection) -> Int {
        guard let now = connection.call(.daemonStatus).info?["now"].flatMap({ Int64($0) }) else { return -1 }
        return DaemonHarness.fetchAll(connection, sensor: .accelerometer, from: 0, to: now, timeout: 20).batches.reduce(0) {
            $0 + $1.count
        }
    }

    /// Every tablet has a system bus with logind on it, and the daemon's device-usage driver
    /// follows logind from its start; this machine's build containers have none, and a daemon
    /// that looks for a bus that is not there retries (1 s, doubling) inside the window. So the
    /// daemon gets a private `dbus-daemon` as its system bus with python-dbusmock's `logind`
    /// template on it (seat0), the stand-in the end-to-end tests use.
    static func tabletSystemBus() throws -> PrivateBus {
        let bus = try PrivateBus(seconds: 600)
        let python = ProcessInfo.processInfo.environment["SENSORKIT_PYTHON"] ?? "/usr/bin/python3"
        _ = try bus.spawn(
            [
                "/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)", python, "-m", "dbusmock", "--system", "--template",
                "logind",
            ],
            log: "logind")
        let owned = DaemonHarness.eventually(20, every: 0.2) {
            (try? CommandOutput.run(
                ["/usr/bin/timeout", "5", "/usr/bin/busctl", "--address=" + bus.address, "status", "org.freedesktop.login1"]
            ).status) == 0
        }
        guard owned else {
            throw IIOBenchmark.BenchError(
                "logind (python-dbusmock's template, run by \(python); make deps installs it) did not come onto the private system bus within 20 s"
            )
        }
        return bus
    }

    /// `timeout … umockdev-run … -- sensorkitd …` with `$NOTIFY_SOCKET` here; `daemon` is the
    /// sensorkitd process below umockdev-run. `stop()`: SIGTERM (timeout relays it to its
    /// process group), then SIGKILL to the group after 8 s.
    final class Run {
        let group: ChildProcess
        let daemon: pid_t
        let listener: NotifyListener

        convenience init(_ sensorkitd: String, _ rig: DaemonBenchmark.RigFolder, device: String, script: String?, log: String)
            throws
        {
            try self.init(
                sensorkitd, rig, under: IIOBenchmark.umockdevRun(device: device, script: script, seconds: 120), log: log)
        }

        /// The daemon of `rig` started below `wrapper` (umockdev-run, or a plain `timeout`).
        init(_ sensorkitd: String, _ rig: DaemonBenchmark.RigFolder, under wrapper: [String], log: String) throws {
            let notify = rig.path + "/notify"
            unlink(notify)
            listener = try NotifyListener(path: notify)
            setenv("NOTIFY_SOCKET", notify, 1)
            defer { unsetenv("NOTIFY_SOCKET") }
            group = try IIOBenchmark.spawn(
                wrapper + [sensorkitd] + rig.daemonArguments, stdout: log + ".log", stderr: log + ".log.err")
            daemon = try Self.descendant(
                of: group, named: "sensorkitd", within: 2,
                missing: "no sensorkitd below \(wrapper.first ?? "?"); see \(log).log.err")
        }

        func ready(seconds: Double) -> Bool { listener.waitFor("READY=1", seconds: seconds) }

        func stop() {
            guard group.isRunning else { return }
            kill(group.pid, SIGTERM)
            let deadline = Date().addingTimeInterval(8)
            while group.isRunning && Date() < deadline { usleep(10_000) }
            kill(-group.pid, SIGKILL)
            group.wait()
        }

        /// The process named `name` below `group`, looked for every 10 ms for `seconds`; when it
        /// does not appear, the group is killed and `missing` thrown.
        static func descendant(of group: ChildProcess, named name: String, within seconds: Double, missing: String) throws
            -> pid_t
        {
            for _ in 0..<max(1, Int(seconds * 100)) {
                if let found = descendant(of: group.pid, named: name) { return found }
                usleep(10_000)
            }
            kill(-group.pid, SIGKILL)
            group.wait()
            throw IIOBenchmark.BenchError(missing)
        }

        /// The first process named `name` whose parent chain reaches `root`, from /proc/*/stat.
        static func descendant(of root: pid_t, named name: String) -> pid_t? {
            var parents: [pid_t: (parent: pid_t, name: String)] = [:]
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
                guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                    let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
                else { continue }
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                guard fields.count > 1, let parent = pid_t(fields[1]) else { continue }
                parents[pid] = (parent, String(stat[stat.index(after: open)..<close]))
            }
            for (pid, entry) in parents where entry.name == name {
                var ancestor = entry.parent
                while ancestor > 1 {
                    if ancestor == root { return pid }
                    ancestor = parents[ancestor]?.parent ?? 0
                }
            }
            return nil
        }
    }
}

/// What the daemon cost over a window, read from outside so that measuring does not wake it: a
/// call over its socket starts threads of libdispatch's that run into the window and retire in
/// it, about half a millisecond that is the bench's, not the recording's (docs/measurements/iio.md,
/// "2026-12-07, the worker monitor"). CPU from the process's CPU clock (`clock_getcpuclockid`:
/// nanoseconds, every thread, ended ones included); context switches from /proc, every thread
/// alive at the window's end (a thread that ended in it takes its count with it: `ended`).
struct DaemonWindow {
    struct Reading {
        let cpuNanoseconds: Int64
        let figures: ProcessFigures

        init(pid: Int32) {
            cpuNanoseconds = CPUMeter.processNanoseconds(pid)
            figures = ProcessFigures(pid: pid)
        }
    }

    let seconds: Double
    let cpuMicroseconds: Double
    let switchesPerSecond: Double
    let threads: (byName: [(name: String, count: Int, switchesPerSecond: Double, cpuNanoseconds: Int64)], ended: Int)
    var ended: Int { threads.ended }

    init(from start: Reading, to end: Reading) {
        seconds = Double(end.figures.taken - start.figures.taken) / 1e9
        cpuMicroseconds = Double(end.cpuNanoseconds - start.cpuNanoseconds) / 1e3
        threads = end.figures.threadsSince(start.figures)
        switchesPerSecond = threads.byName.reduce(0) { $0 + $1.switchesPerSecond }
    }
}
