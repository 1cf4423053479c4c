import Dispatch
import Foundation
import Glibc
import IIOBridge
import SensorKitModel
import SensorSystem
import Synchronization

/// The `iio` section's third part: polled sensors (issue 15). Real `IIOPolledSource`s read
/// sysfs-shaped files (`in_accel_x_raw`, `in_pressure_input`, `in_illuminance_input`,
/// `in_steps_input` in a temporary directory) in this binary's `iio-polled` child, so nothing of
/// the bench's own threads is counted:
///
/// - jitter: each sample's stamp (`CLOCK_BOOTTIME` when the read returned), moved to
///   `DispatchTime`'s clock by a paired reading of both clocks (the tightest of 20), against the
///   instant its timer was meant to fire (the schedule's first deadline plus whole intervals);
/// - wake-ups: the child's voluntary context switches (`ru_nvcsw`, every thread: a thread that
///   blocked and was woken) over a window that starts after the sources are running and ends
///   before they stop (`getrusage(RUSAGE_SELF)`), per second, beside the ideal (distinct
///   deadlines per second of the union of the streams' grids) and the unaligned sum of their
///   rates. Involuntary switches (`ru_nivcsw`: preemptions, which depend on the machine's load)
///   are shown beside them. A context switch is not a CPU wake-up: Dispatch wakes its manager
///   thread and then a worker within the same wake. So the reads are also grouped by instant
///   (every stream's read stamps in the window, sorted; a stamp more than 1 ms after the one
///   before starts a new instant): read instants per second are what the CPU is woken for.
///
/// Each is run with the daemon's `PollSchedule.grid` and with `PollSchedule.unaligned` (one strict
/// zero-leeway timer per stream at its own phase) so the difference shows. The jitter's anchor
/// (`nanosleep`) is the best a user-space timer does on this machine at this moment: one thread
/// that sleeps with `clock_nanosleep(TIMER_ABSTIME)` until each grid instant and does the same
/// reads — no Dispatch hand-off, no queue.
enum IIOPolledBenchmark {
    static let ms: Int64 = 1_000_000

    /// A stream of the child: what it reads and how often.
    struct Stream {
        let kind: String
        let interval: Int64
        var argument: String { "\(kind):\(interval)" }
    }

    static let motion = Stream(kind: "accel", interval: 10 * ms)
    /// The demo rig's polled tablet sensors (scripts/demo.sh, Tests/Fixtures/iio/demo-tablet.umockdev):
    /// a BMP280 without a buffer (no rate: 100 ms), a TSL2591 (integration time 0.2 s), a BMA400's
    /// step counter (5 s).
    static let tablet = [
        Stream(kind: "pressure", interval: 100 * ms), Stream(kind: "light", interval: 200 * ms),
        Stream(kind: "steps", interval: 5_000 * ms),
    ]

    static func run(me: String) throws {
        print("\n  -- polled sensors: timer jitter at 100 Hz and shared wake-ups (issue 15) --")
        let workdir = NSTemporaryDirectory() + "sensorkit-bench-polled-\(getpid())"
        try FileManager.default.createDirectory(atPath: workdir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: workdir) }

        func child(_ name: String, _ schedule: String, seconds: Int, _ streams: [Stream]) throws -> Result {
            let base = workdir + "/\(name)-\(schedule)"
            let run = try IIOBenchmark.measureChild(
                [me, "iio-polled", base + ".result", schedule, String(seconds)] + streams.map(\.argument),
                stdout: base + ".log", stderr: base + ".log.err")
            let text = (try? String(contentsOfFile: base + ".result", encoding: .utf8)) ?? ""
            guard run.status == 0, let result = Result(text) else {
                throw IIOBenchmark.BenchError(
                    "iio-polled \(name) \(schedule) exited with status \(run.status); see \(base).log.err")
            }
            return result
        }

        for (schedule, seconds) in [("grid", 10), ("unaligned", 4), ("nanosleep", 4)] {
            let result = try child("jitter", schedule, seconds: seconds, [motion])
            print(
                "  1 stream at 100 Hz, \(schedule.padding(toLength: 9, withPad: " ", startingAt: 0)) \(seconds) s: lateness p50 \(micro(result.p50)) µs, "
                    + "p99 \(micro(result.p99)) µs, max \(micro(result.max)) µs over \(result.samples) samples, "
                    + "\(result.missed) instants missed; \(IIOBenchmark.format(result.wakeups)) wake-ups/s, "
                    + "\(IIOBenchmark.format(result.preemptions)) preemptions/s (target: p99 ≤ 1000 µs)")
        }
        for (name, streams) in [("tablet", tablet), ("tablet+motion", [motion] + tablet)] {
            let ideal = distinctDeadlinesPerSecond(streams.map(\.interval))
            let sum = streams.reduce(0.0) { $0 + 1e9 / Double($1.interval) }
            let rates = streams.map { "\($0.kind) \(IIOBenchmark.format(1e9 / Double($0.interval))) Hz" }.joined(separator: ", ")
            print(
                "  \(name): \(rates); ideal \(IIOBenchmark.format(ideal)) wake-ups/s (distinct deadlines), unaligned sum \(IIOBenchmark.format(sum))/s; "
                    + "voluntary context switches (wake-ups of a thread) and read instants (wake-ups of the CPU) per second:")
            for schedule in ["grid", "unaligned"] {
                let result = try child(name, schedule, seconds: 4, streams)
                print(
                    "    \(schedule.padding(toLength: 9, withPad: " ", startingAt: 0)) read instants \(IIOBenchmark.format(result.instants))/s = "
                        + "\(IIOBenchmark.format(result.instants / ideal))× ideal, \(IIOBenchmark.format(result.instants / sum))× unaligned sum; "
                        + "switches \(IIOBenchmark.format(result.wakeups))/s = \(IIOBenchmark.format(result.wakeups / ideal))× ideal, "
                        + "\(IIOBenchmark.format(result.wakeups / sum))× unaligned sum "
                        + "(\(IIOBenchmark.format(result.preemptions)) preemptions/s; "
                        + "first stream: p99 lateness \(micro(result.p99)) µs, \(result.missed) instants missed)")
            }
        }
    }

    /// Distinct deadlines per second of streams on one grid (each at whole multiples of its
    /// interval), counted over a minute.
    static func distinctDeadlinesPerSecond(_ intervals: [Int64]) -> Double {
        let window: Int64 = 60_000 * ms
        var instants = Set<Int64>()
        for interval in intervals where interval > 0 {
            for instant in stride(from: 0, to: window, by: Int(interval)) { instants.insert(instant) }
        }
        return Double(instants.count) / 60
    }

    static func micro(_ nanoseconds: Int64) -> String { String(format: "%.0f", Double(nanoseconds) / 1e3) }

    /// What the child wrote: wake-ups and preemptions per second, then the first stream's
    /// samples, lateness percentiles (ns) and missed instants.
    struct Result {
        let wakeups: Double
        let preemptions: Double
        let instants: Double
        let samples: Int
        let p50: Int64
        let p99: Int64
        let max: Int64
        let missed: Int

        init(
            wakeups: Double, preemptions: Double, instants: Double, samples: Int, p50: Int64, p99: Int64, max: Int64, missed: Int
        ) {
            (self.wakeups, self.preemptions, self.instants, self.samples) = (wakeups, preemptions, instants, samples)
            (self.p50, self.p99, self.max, self.missed) = (p50, p99, max, missed)
        }

        init?(_ text: String) {
            let fields = text.split(whereSeparator: \.isWhitespace)
            guard fields.count == 8, let wakeups = Double(fields[0]), let preemptions = Double(fields[1]),
                let instants = Double(fields[2]),
                let samples = Int(fields[3]), let p50 = Int64(fields[4]), let p99 = Int64(fields[5]), let max = Int64(fields[6]),
                let missed = Int(fields[7])
            else { return nil }
            self.init(
                wakeups: wakeups, preemptions: preemptions, instants: instants, samples: samples, p50: p50, p99: p99, max: max,
                missed: missed)
        }

        var line: String { "\(wakeups) \(preemptions) \(instants) \(samples) \(p50) \(p99) \(max) \(missed)\n" }
    }

    // MARK: The child

    /// `sensorkit-bench iio-polled RESULT grid|unaligned SECONDS KIND:INTERVAL…`: polls one
    /// sysfs-shaped device per stream for SECONDS (after half a second of warm-up), stops them
    /// (every held sample is delivered), writes a `Result` line to RESULT.
    static func child(_ arguments: [String]) throws {
        let anchor = arguments.count > 1 && arguments[1] == "nanosleep"
        guard arguments.count >= 4, let seconds = Double(arguments[2]),
            let base = anchor ? .grid : ["grid": PollSchedule.grid, "unaligned": .unaligned][arguments[1]]
        else { throw IIOBenchmark.BenchError("usage: iio-polled RESULT grid|unaligned|nanosleep SECONDS KIND:INTERVAL…") }
        let streams = try arguments.dropFirst(3).map { argument -> Stream in
            let parts = argument.split(separator: ":")
            guard parts.count == 2, let interval = Int64(parts[1]), interval > 0 else {
                throw IIOBenchmark.BenchError("bad stream \(argument)")
            }
            return Stream(kind: String(parts[0]), interval: interval)
        }
        let root = NSTemporaryDirectory() + "iio-polled-sysfs-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let clock = LinuxSystemClock()

        // Where each timer's grid starts, as the schedule chose it.
        let origins = Mutex([UInt64?](repeating: nil, count: streams.count))
        let stamps = Mutex([[Int64]](repeating: [], count: streams.count))
        var sources: [IIOPolledSource] = []
        var devices: [(sysfs: IIOSysfsDevice, reads: [IIOChip.ColumnSource])] = []
        for (index, stream) in streams.enumerated() {
            let path = root + "/iio:device\(index)"
            try writeDevice(path, kind: stream.kind)
            let sysfs = IIOSysfsDevice(path: path)
            let chip = try IIOChip(
                udev: UdevIIODevice(syspath: path, sysname: "iio:device\(index)", devnode: nil, properties: [:]),
                description: try sysfs.describe())
            guard let function = chip.functions.first(where: { $0.capture == .polled }) else {
                throw IIOBenchmark.BenchError("\(stream.kind): no polled function in \(chip.functions)")
            }
            let schedule = PollSchedule(leeway: base.leeway, strict: base.strict) { now, interval in
                let first = base.firstDeadline(now, interval)
                origins.withLock { $0[index] = first }
                return first
            }
            devices.append((sysfs, chip.columns(for: function).map(\.1)))
            if anchor { continue }
            sources.append(
                IIOPolledSource(
                    descriptor: chip.descriptor(for: function), sysfs: sysfs,
                    reads: chip.columns(for: function).map(\.1), interval: stream.interval,
                    clock: clock, log: .standardError, schedule: schedule))
        }
        // Boot time minus DispatchTime's clock (the anchor sleeps on CLOCK_MONOTONIC itself): the
        // boot clock read between two readings of the other, their mean taken as its instant; the
        // tightest of 20 pairs, since a preemption inside a pair would shift every lateness.
        let now = { anchor ? UInt64(monotonic()) : DispatchTime.now().uptimeNanoseconds }
        var pair: (width: UInt64, offset: Int64) = (.max, 0)
        for _ in 0..<20 {
            let before = now()
            let boot = clock.boottimeNanoseconds()
            let after = now()
            if after - before < pair.width { pair = (after - before, boot - Int64(before / 2 + after / 2)) }
        }
        let offset = pair.offset
        let running = Atomic(true)
        let anchorDone = DispatchSemaphore(value: 0)
        if anchor {
            let interval = streams[0].interval
            let device = devices[0]
            Thread {
                var deadline = base.firstDeadline(UInt64(monotonic()), interval)
                origins.withLock { $0[0] = deadline }
                while running.load(ordering: .relaxed) {
                    var target = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
                    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &target, nil) == EINTR {}
                    for read in device.reads {
                        if case let .raw(channel) = read { _ = try? device.sysfs.readRaw(channel) }
                    }
                    let stamp = clock.boottimeNanoseconds()
                    stamps.withLock { $0[0].append(stamp) }
                    deadline += UInt64(interval)
                }
                anchorDone.signal()
            }.start()
        }

        // Streams start when their device is found or their sensor first wanted, not together:
        // 7.3 ms apart, so each has its own phase against every other's interval unless aligned.
        for (index, source) in sources.enumerated() {
            if index > 0 { usleep(7_300) }
            source.setRecording(true) { event in
                guard case let .samples(batch) = event else { return }
                stamps.withLock { $0[index] += batch.receiveTimes }
            }
        }
        usleep(500_000)
        let start = (usage: selfSwitches(), time: clock.boottimeNanoseconds())
        usleep(useconds_t(seconds * 1e6))
        let end = (usage: selfSwitches(), time: clock.boottimeNanoseconds())
        for source in sources {
            source.setRecording(false) { _ in }
            source.close()
        }
        running.store(false, ordering: .relaxed)
        if anchor { anchorDone.wait() }
        let span = Double(end.time - start.time) / 1e9

        // The first stream's lateness: its reads after the first deadline, each against the grid
        // instant at or before it.
        guard let origin = origins.withLock({ $0[0] }).map({ Int64($0) }) else {
            throw IIOBenchmark.BenchError("the first stream never started")
        }
        let interval = streams[0].interval
        let onTimer = stamps.withLock { $0[0] }.map { $0 - offset }.filter { $0 >= origin }
        let lateness = onTimer.map { ($0 - origin) % interval }.sorted()
        let instants = onTimer.last.map { Int(($0 - origin) / interval) + 1 } ?? 0
        func percentile(_ p: Double) -> Int64 {
            lateness.isEmpty ? 0 : lateness[min(lateness.count - 1, Int(Double(lateness.count) * p))]
        }
        let inWindow = stamps.withLock { $0.joined() }.filter { $0 >= start.time && $0 < end.time }.sorted()
        let readInstants = zip(inWindow, inWindow.dropFirst()).filter { $1 - $0 > ms }.count + (inWindow.isEmpty ? 0 : 1)
        let result = Result(
            wakeups: Double(end.usage.voluntary - start.usage.voluntary) / span,
            preemptions: Double(end.usage.involuntary - start.usage.involuntary) / span,
            instants: Double(readInstants) / span,
            samples: lateness.count, p50: percentile(0.5), p99: percentile(0.99),
            max: lateness.last ?? 0, missed: Swift.max(0, instants - lateness.count))
        try result.line.write(toFile: arguments[0], atomically: true, encoding: .utf8)
    }

    static func monotonic() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// This process's context switches so far, every thread.
    static func selfSwitches() -> (voluntary: Int, involuntary: Int) {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return (usage.ru_nvcsw, usage.ru_nivcsw)
    }

    /// A sysfs-shaped device directory whose only function is polled: values end in `\n`.
    static func writeDevice(_ path: String, kind: String) throws {
        let attributes: [String: String]
        switch kind {
        case "accel":  // a motion sensor whose buffer is unusable: polled `_raw` values
            attributes = [
                "name": "bmi160", "in_accel_x_raw": "12", "in_accel_y_raw": "-16392", "in_accel_z_raw": "40",
                "in_accel_scale": "0.000598",
            ]
        case "pressure":
            attributes = ["name": "bmp280", "in_pressure_input": "101.325000", "in_temp_input": "23450"]
        case "light":
            attributes = ["name": "tsl2591", "in_illuminance_input": "123.456", "in_illuminance_integration_time": "0.200"]
        case "steps":
            attributes = ["name": "bma400", "in_steps_input": "1532", "in_steps_en": "1"]
        default:
            throw IIOBenchmark.BenchError("unknown stream kind \(kind)")
        }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        for (name, value) in attributes {
            try (value + "\n").write(toFile: path + "/" + name, atomically: false, encoding: .utf8)
        }
    }
}
