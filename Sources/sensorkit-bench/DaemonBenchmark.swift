import Dispatch
import Foundation
import Glibc
import SensorDaemon
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorStore
import SensorSystem

/// `make bench SECTIONS=daemon` (docs/measurements/daemon.md): the real sensorkitd's start to
/// `READY=1` with a full 7-day store beside an empty one; then a daemon recording the demo rig's
/// streams (accelerometer and gyroscope at 100 Hz, generated, in a child process of this binary):
/// its CPU share and wake-ups (context switches of all its threads) while recording beside the
/// same daemon idle, the latency from a sample's arrival to its commit, and peak RSS.
enum DaemonBenchmark {
    static let second: Int64 = 1_000_000_000
    static let day: Int64 = 86_400 * second
    static let recordSeconds = 60.0
    static let idleSeconds = 10.0
    static let latencySeconds = 20.0

    static func run() throws {
        print("\n== daemon")
        let sensorkitd = DaemonUnderTest.path
        guard FileManager.default.isExecutableFile(atPath: sensorkitd) else {
            print("skipped: no \(sensorkitd) (make bench builds it; by hand: swift build -c release --product sensorkitd)")
            return
        }
        try startToReady(sensorkitd)
        try recording(CommandLine.arguments[0])
    }

    // MARK: start to READY=1

    static func startToReady(_ sensorkitd: String) throws {
        let full = try RigFolder(), empty = try RigFolder()
        defer { full.remove(); empty.remove() }
        let filled = try fill(full.state, days: 7)
        print(
            String(
                format:
                    "full store: 7 days of accelerometer + gyroscope at 100 Hz (%.1f M samples), %.0f MB on disk, made in %.0f s through the store API",
                Double(filled.samples) / 1e6, Double(filled.bytes) / 1e6, filled.seconds))
        var fullTimes: [Double] = [], emptyTimes: [Double] = [], fullRSS: [Int] = []
        for _ in 0..<5 {
            emptyTimes.append(try timeToReady(sensorkitd, empty).seconds)
            let run = try timeToReady(sensorkitd, full)
            fullTimes.append(run.seconds)
            fullRSS.append(run.peakKiB)
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        print(
            String(
                format:
                    "start to READY=1, full 7-day store: median %.0f ms (of 5: %@)   target ≤ 300 ms   anchor, empty store: median %.0f ms",
                median(fullTimes) * 1e3, fullTimes.map { String(format: "%.0f", $0 * 1e3) }.joined(separator: ", "),
                median(emptyTimes) * 1e3))
        print("peak RSS of sensorkitd started on the full store: \(fullRSS.max() ?? 0) KiB (VmHWM at READY)")
    }

    /// A state directory, apps.d and config for a sensorkitd of its own.
    struct RigFolder {
        static let withoutIIO = "profile = lab\n[iio]\nenabled = no\n"
        let path: String
        var state: String { path + "/state" }
        var socket: String { path + "/s.sock" }
        var config: String { path + "/sensorkitd.conf" }
        var apps: String { path + "/apps.d" }
        var daemonArguments: [String] { ["--socket", socket, "--config", config, "--apps-dir", apps, "--state-dir", state] }

        init(configuration: String = withoutIIO) throws {
            var template = Array("/tmp/skb-XXXXXX".utf8CString)
            guard let made = mkdtemp(&template) else { throw SystemError("mkdtemp", errno: errno) }
            path = String(cString: made)
            try FileManager.default.createDirectory(atPath: path + "/apps.d", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(
                atPath: path + "/state", withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            try configuration.write(toFile: path + "/sensorkitd.conf", atomically: true, encoding: .utf8)
        }

        func remove() { try? FileManager.default.removeItem(atPath: path) }

        /// A connection as `app` (nil: an admin session) once the daemon on this rig listens:
        /// tries for 15 s.
        func connect(app: String?) throws -> ReaderConnection {
            var lastError: (any Error)?
            for _ in 0..<150 {
                do { return try ReaderConnection(socketPath: socket, app: app) } catch { lastError = error }
                usleep(100_000)
            }
            throw IIOBenchmark.BenchError("cannot connect to sensorkitd: \(lastError.map { "\($0)" } ?? "?")")
        }
    }

    /// A clock of an earlier boot that has run `boottime` ns and whose wall clock is now: the
    /// samples written with it lie in the days before this run.
    final class EarlierBootClock: SystemClock {
        let bootID = BootID("bench-earlier-boot")
        let boottime: Int64
        let realtime: Int64
        init(boottime: Int64) {
            self.boottime = boottime
            realtime = LinuxSystemClock().realtimeNanoseconds()
        }
        func boottimeNanoseconds() -> Int64 { boottime }
        func realtimeNanoseconds() -> Int64 { realtime }
        func wallClockSynchronized() -> Bool { true }
    }

    /// Writes `days` of two 100 Hz motion streams ending now into a store in `state`, and the
    /// timeline the daemon will load; returns samples written, file size and seconds taken.
    static func fill(_ state: String, days: Int) throws -> (samples: Int, bytes: Int64, seconds: Double) {
        let started = Date()
        let span = Int64(days) * day
        let clock = EarlierBootClock(boottime: span + second)
        var timeline = Timeline.founded(by: clock)
        timeline.adoptCurrentBoot(of: clock)
        try TimelineFile.save(timeline, to: state + "/" + TimelineFile.fileName)
        let store = try SensorStore(configuration: StoreConfiguration(directory: state), clock: clock, timeline: timeline)
        let schema = SampleSchema(["x", "y", "z"].map { .integer(name: $0, scale: 0.000598, offset: 0, unit: "m/s²") })
        let streams = try [SRSensor.accelerometer, .rotationRate].map { sensor in
            try store.register(
                StreamDescriptor(
                    sensor: sensor, device: SRDevice.hostIdentifier,
                    source: ["chip": .string("bmi160"), "rate": .integer(100)], schema: schema))
        }
        var random = BenchRandom(seed: 7)
        let batch = 1_000  // 10 s at 100 Hz
        var written = 0
        var time = second
        while time + Int64(batch) * 10_000_000 <= span {
            for stream in streams {
                let times = (0..<batch).map { time + Int64($0) * 10_000_000 }
                let columns = (0..<3).map { axis in
                    (0..<batch).map { _ in Int64(axis == 2 ? 16_384 : 0) + Int64(random.next() % 7) - 3 }
                }
                store.append(
                    SampleBatch(
                        boot: clock.bootID, sensorTimes: times, receiveTimes: times, columns: columns.map { .integers($0) }),
                    to: stream)
                written += batch
            }
            time += Int64(batch) * 10_000_000
            while store.pendingSampleCount > 1_000_000 { usleep(5_000) }
        }
        try store.close()
        let bytes = ((try? FileManager.default.attributesOfItem(atPath: store.configuration.databasePath))?[.size] as? Int64) ?? 0
        return (written, bytes, Date().timeIntervalSince(started))
    }

    /// Starts sensorkitd on `folder` with `$NOTIFY_SOCKET` bound here; seconds from spawn to the
    /// `READY=1` datagram, and its VmHWM then. Stops it with SIGTERM.
    static func timeToReady(_ sensorkitd: String, _ folder: RigFolder) throws -> (seconds: Double, peakKiB: Int) {
        let notifyPath = folder.path + "/notify"
        unlink(notifyPath)
        let listener = try NotifyListener(path: notifyPath)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: sensorkitd)
        process.arguments = folder.daemonArguments
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = notifyPath
        process.environment = environment
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        let start = DispatchTime.now().uptimeNanoseconds
        try process.run()
        let ready = listener.waitFor("READY=1", seconds: 30)
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let peak = ProcessFigures(pid: process.processIdentifier).peakKiB
        process.terminate()
        process.waitUntilExit()
        guard ready else { throw SystemError("sensorkitd sent no READY=1 within 30 s", errno: 0) }
        return (elapsed, peak)
    }

    // MARK: recording

    static func recording(_ bench: String) throws {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: bench)
        child.arguments = ["serve-daemon-rig"]
        let output = Pipe(), input = Pipe()
        child.standardOutput = output
        child.standardInput = input
        try child.run()
        let lines = LineReader(output.fileHandleForReading)
        let pid = child.processIdentifier
        guard lines.next()?.hasPrefix("IDLE") == true else { throw SystemError("the rig daemon did not start", errno: 0) }
        let idleStart = ProcessFigures(pid: pid)
        usleep(UInt32(idleSeconds * 1e6))
        let idleEnd = ProcessFigures(pid: pid)
        try input.fileHandleForWriting.write(contentsOf: Data("record\n".utf8))
        guard lines.next()?.hasPrefix("RECORDING") == true else { throw SystemError("the rig daemon did not record", errno: 0) }
        usleep(2_000_000)  // the first commit and chunk settle
        let recordStart = ProcessFigures(pid: pid)
        usleep(UInt32(recordSeconds * 1e6))
        let recordEnd = ProcessFigures(pid: pid)
        try input.fileHandleForWriting.write(contentsOf: Data("latency\n".utf8))
        let latency = lines.next() ?? ""
        let peak = ProcessFigures(pid: pid).peakKiB
        try input.fileHandleForWriting.write(contentsOf: Data("stop\n".utf8))
        child.waitUntilExit()

        let idle = idleEnd.since(idleStart), busy = recordEnd.since(recordStart)
        print(
            String(
                format: "recording accelerometer + gyroscope (generated, 100 Hz each, 10 samples a batch) for %.0f s:",
                recordSeconds))
        print(
            String(
                format: "  daemon CPU: %.2f %% of one core   target ≤ 1 %%   anchor, same daemon idle (no stake) %.0f s: %.2f %%",
                busy.cpuPercent, idleSeconds, idle.cpuPercent))
        print(
            String(
                format:
                    "  wake-ups (voluntary + nonvoluntary context switches of all threads, /proc/PID/task/*/status): %.1f /s   anchor idle: %.1f /s   (the two generated sources alone tick 20 /s)",
                busy.switchesPerSecond, idle.switchesPerSecond))
        print("  arrival → committed chunk: \(latency)")
        print("  peak RSS (VmHWM of the rig process: daemon, sources and this bench's child code): \(peak) KiB")
    }

    /// The child: a daemon (in this process) with two generated 100 Hz motion sources and an app
    /// entitled to both. Waits idle, records when told, then measures arrival-to-commit latency.
    static func serveRig() throws {
        let app = "org.example.bench"
        let harness = try DaemonHarness(
            sources: [
                GeneratedSource(sensor: .accelerometer, rate: 100, perTick: 10),
                GeneratedSource(sensor: .rotationRate, rate: 100, perTick: 10),
            ],
            prepare: { folder in
                try DaemonHarness.writeApp(
                    app, in: folder + "/apps.d", entitlements: ["motion-accelerometer", "motion-rotation-rate"], users: ["root"])
            })
        defer { harness.stop() }
        say("IDLE")
        _ = readLine()
        try harness.grant([.accelerometer, .rotationRate], to: app)
        let connection = try harness.connect(app: app)
        for sensor in [SRSensor.accelerometer, .rotationRate] {
            if let error = connection.call(.startRecording, { $0.sensor = sensor.rawValue }).error { throw error }
        }
        say("RECORDING")
        _ = readLine()
        guard let store = (harness.daemon.store as? StoreBackend)?.store else { throw SystemError("no store", errno: 0) }
        // Poll the committed samples every 10 ms: a sample's latency is the poll that first sees
        // it minus its receive time (the pipeline's arrival), so the figures are up to 10 ms high.
        var latencies: [Int64] = []
        var seen = harness.now
        let end = Date().addingTimeInterval(latencySeconds)
        while Date() < end {
            usleep(10_000)
            let now = harness.now
            let cursor = try store.samples(sensor: .accelerometer, device: SRDevice.hostIdentifier, from: seen, to: now)
            while let block = try cursor.next() {
                for i in 0..<block.count {
                    latencies.append(now - block.receiveTime(at: i))
                    seen = max(seen, block.sensorTime(at: i))
                }
            }
        }
        latencies.sort()
        func at(_ q: Double) -> Double {
            latencies.isEmpty ? .nan : Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * q))]) / 1e6
        }
        say(
            String(
                format:
                    "p50 %.0f ms, p99 %.0f ms, max %.0f ms over %d accelerometer samples in %.0f s (poll every 10 ms; the store commits every 0.5 s)   target: within the commit interval",
                at(0.5), at(0.99), at(1), latencies.count, latencySeconds))
        _ = readLine()
    }
}

/// One line to the parent, unbuffered.
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

/// CPU time and context switches of a process, from /proc: its threads' switch counts summed
/// (a thread that ended takes its counts with it), and per thread for a breakdown.
struct ProcessFigures {
    struct Thread {
        var name: String
        var switches: Int64
        /// On-CPU time (`/proc/PID/task/TID/schedstat`), nanoseconds.
        var cpuNanoseconds: Int64
    }

    let taken = DispatchTime.now().uptimeNanoseconds
    /// Every thread's, ended ones included, in clock ticks.
    var cpuTicks: Int64 = 0
    var switches: Int64 = 0
    var peakKiB = 0
    var threads: [Int: Thread] = [:]

    init(pid: Int32) {
        if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        {
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // After the command: state is field 3, utime 14, stime 15 (1-based).
            if fields.count > 13 { cpuTicks = (Int64(fields[11]) ?? 0) + (Int64(fields[12]) ?? 0) }
        }
        for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
            let folder = "/proc/\(pid)/task/\(task)"
            guard let tid = Int(task), let status = try? String(contentsOfFile: folder + "/status", encoding: .utf8) else {
                continue
            }
            // The name and where the thread sleeps now: libdispatch's threads all share one name,
            // but its manager sleeps in epoll, its workers on a futex, a reading thread in poll.
            let name = ((try? String(contentsOfFile: folder + "/comm", encoding: .utf8)) ?? "?").trimmingCharacters(in: .newlines)
            let wchan = (try? String(contentsOfFile: folder + "/wchan", encoding: .utf8)) ?? "?"
            var thread = Thread(
                name: name + " in " + wchan,
                switches: 0,
                cpuNanoseconds: ((try? String(contentsOfFile: folder + "/schedstat", encoding: .utf8))?
                    .split(separator: " ").first).flatMap { Int64($0) } ?? 0)
            for line in status.split(separator: "\n")
            where line.hasPrefix("voluntary_ctxt_switches") || line.hasPrefix("nonvoluntary_ctxt_switches") {
                thread.switches += Int64(line.split(separator: "\t").last?.trimmingCharacters(in: .whitespaces) ?? "") ?? 0
            }
            switches += thread.switches
            threads[tid] = thread
        }
        if let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        {
            peakKiB = Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
    }

    /// The change since `earlier`: CPU as % of one core and context switches per second.
    func since(_ earlier: ProcessFigures) -> (cpuPercent: Double, switchesPerSecond: Double) {
        let seconds = Double(taken - earlier.taken) / 1e9
        let hz = Double(sysconf(Int32(_SC_CLK_TCK)))
        return (Double(cpuTicks - earlier.cpuTicks) / hz / seconds * 100, Double(switches - earlier.switches) / seconds)
    }

    /// Per thread name (threads of one name together, with how many there were): context
    /// switches per second and on-CPU nanoseconds since `earlier`, most switches first; and the
    /// threads that ended meanwhile (their counts are missing from `since`).
    func threadsSince(_ earlier: ProcessFigures) -> (
        byName: [(name: String, count: Int, switchesPerSecond: Double, cpuNanoseconds: Int64)], ended: Int
    ) {
        let seconds = Double(taken - earlier.taken) / 1e9
        var byName: [String: (count: Int, switches: Int64, cpu: Int64)] = [:]
        for (tid, thread) in threads {
            let before = earlier.threads[tid]
            byName[thread.name, default: (0, 0, 0)].count += 1
            byName[thread.name]!.switches += thread.switches - (before?.switches ?? 0)
            byName[thread.name]!.cpu += thread.cpuNanoseconds - (before?.cpuNanoseconds ?? 0)
        }
        return (
            byName.map { ($0.key, $0.value.count, Double($0.value.switches) / seconds, $0.value.cpu) }
                .sorted { $0.switchesPerSecond > $1.switchesPerSecond },
            earlier.threads.keys.filter { threads[$0] == nil }.count
        )
    }
}

/// Lines from a pipe, one at a time, blocking.
final class LineReader {
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    init(_ handle: FileHandle) { self.handle = handle }
    func next() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            let data = handle.availableData
            if data.isEmpty { return nil }
            buffer += data
        }
    }
}
