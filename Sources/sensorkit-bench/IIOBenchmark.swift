import Dispatch
import Foundation
import Glibc
import IIOBridge
import SensorDaemon
import SensorKitModel
import SensorSimulation
import SensorStore
import SensorSystem
import Synchronization

/// `sensorkit-bench iio`: a 400 Hz BMI160 stream (accel + gyro + timestamp, 24-byte scans) fed by
/// umockdev from the same script to three readers in the same run:
///
/// - ours: this binary's `iio-ingest` child — libudev enumeration, `IIODeviceCapture` (the
///   daemon's non-blocking reader, reassembly, decoding, stamping, batching), both streams' batches
///   appended to a `SensorStore` on the reading thread as the daemon's pipeline does, `close()` so
///   every chunk is committed;
/// - anchor: `iio_readdev -s N -b 400 iio:device0` (libiio 0.24, Debian `libiio-utils`);
/// - reference: `head -c` copying the bytes (the cheapest possible reader).
///
/// Each reader runs under umockdev-run inside this binary's `iio-measure`, which reports the
/// reader's own CPU from `getrusage(RUSAGE_CHILDREN)` — umockdev's script runner, which feeds the
/// PTY and costs the same for everyone, is left out (and shown beside it). Each reader runs on N
/// and on N/40 scans; the difference divided by the difference in scans is its CPU-seconds per
/// million scans with start-up (process, libudev, SQLite, libiio context) cancelled out. The
/// script is fed as fast as the PTY takes it (`r 0`); the timestamps say 400 Hz.
enum IIOBenchmark {
    static let scanBytes = 24
    static let perLine = 64

    /// main.swift's one line: the `iio` section, or the `iio-ingest` child it starts.
    static func main(_ arguments: [String]) throws {
        if arguments.first == "iio-ingest", arguments.count == 3, let scans = Int(arguments[2]) {
            try ingest(storeDirectory: arguments[1], scans: scans)
        } else if arguments.first == "iio-measure", arguments.count > 4, arguments[3] == "--" {
            exit(try measureOne(result: arguments[1], output: arguments[2], command: Array(arguments.dropFirst(4))))
        } else if arguments.first == "iio-polled" {
            try IIOPolledBenchmark.child(Array(arguments.dropFirst()))
        } else if arguments.contains("iio-daemon") {
            try IIOWakeupBenchmark.runDaemonAlone()
        } else if arguments.isEmpty || arguments.contains("iio") {
            try run()
            try IIOPolledBenchmark.run(me: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        }
    }

    static func run() throws {
        print("\n== iio: 400 Hz 6-axis BMI160 stream, device read to committed chunk (issue 5) ==")
        let scans = ProcessInfo.processInfo.environment["SENSORKIT_BENCH_IIO_SCANS"].flatMap { Int($0) } ?? 240_000
        let small = max(400, scans / 40 / 400 * 400)
        for tool in ["/usr/bin/umockdev-run", "/usr/bin/iio_readdev", "/usr/bin/timeout", "/usr/bin/head"]
        where !FileManager.default.isExecutableFile(atPath: tool) {
            print("  skipped: \(tool) is missing (Debian umockdev, libiio-utils, coreutils)")
            return
        }
        try withWorkdir { workdir in try run(workdir: workdir, scans: scans, small: small) }
    }

    /// Runs `body` in a new temporary folder, removed after it unless SENSORKIT_BENCH_KEEP=1
    /// (which keeps the device descriptions and feeds, to profile a reader by hand).
    static func withWorkdir(_ body: (String) throws -> Void) throws {
        let workdir = NSTemporaryDirectory() + "sensorkit-bench-iio-\(getpid())"
        try FileManager.default.createDirectory(atPath: workdir, withIntermediateDirectories: true)
        defer {
            if ProcessInfo.processInfo.environment["SENSORKIT_BENCH_KEEP"] == "1" {
                print("  kept: \(workdir)")
            } else {
                try? FileManager.default.removeItem(atPath: workdir)
            }
        }
        try body(workdir)
    }

    private static func run(workdir: String, scans: Int, small: Int) throws {
        let device = workdir + "/bmi160.umockdev"
        try deviceDescription.write(toFile: device, atomically: true, encoding: .utf8)
        let me = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        for count in [scans, small] {
            try Data(streamScript(scans: count)).write(to: URL(fileURLWithPath: workdir + "/stream-\(count).script"))
        }
        print(
            "  \(scans) scans (\(format(Double(scans * scanBytes) / 1e6)) MB, \(scans / 400) s of data at 400 Hz); "
                + "each reader also runs on \(small) scans, and the difference is the per-scan cost (start-up cancels out)")

        func measure(_ name: String, _ count: Int, _ command: [String]) throws -> (reader: Double, tree: Double, wall: Double) {
            let run = try underUmockdev(
                device: device, script: workdir + "/stream-\(count).script", base: workdir + "/\(name)-\(count)",
                me: me, command: command)
            return (run.reader, run.tree, run.wall)
        }
        typealias Reader = (name: String, file: String, command: (Int) -> [String], check: (String, Int) -> String?)
        let sizeCheck: (String, Int) -> String? = { path, count in
            fileSize(path) == count * scanBytes ? nil : "\(path) has \(fileSize(path)) bytes, not \(count * scanBytes)"
        }
        let ingested: (String, Int) -> String? = { path, count in
            let report = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            return report.contains("ingested \(count) \(count)") ? nil : "iio-ingest: \(report)"
        }
        let readers: [Reader] = [
            ("ours: read → committed chunk", "ours", { [me, "iio-ingest", workdir + "/store-\($0)", String($0)] }, ingested),
            ("  of which read → batches", "ours-nostore", { [me, "iio-ingest", "-", String($0)] }, ingested),
            (
                "anchor: iio_readdev (libiio)", "readdev",
                { ["/usr/bin/iio_readdev", "-s", String($0), "-b", "400", "iio:device0"] }, sizeCheck
            ),
            ("reference: head -c", "head", { ["/usr/bin/head", "-c", String($0 * scanBytes), "/dev/iio:device0"] }, sizeCheck),
        ]
        var perMillion: [Double] = []
        for reader in readers {
            let big = try measure(reader.file, scans, reader.command(scans))
            let little = try measure(reader.file, small, reader.command(small))
            for count in [scans, small] {
                if let problem = reader.check(workdir + "/\(reader.file)-\(count).out", count) { print("  WARNING: \(problem)") }
            }
            let marginal = (big.reader - little.reader) / Double(scans - small) * 1e6
            let tree = (big.tree - little.tree) / Double(scans - small) * 1e6
            perMillion.append(marginal)
            print(
                "  \(reader.name.padding(toLength: 30, withPad: " ", startingAt: 0)) \(format(marginal)) CPU-s per million scans"
                    + " (with umockdev's feeding: \(format(tree)); this run: \(format(big.reader)) CPU-s, \(format(big.wall)) s wall)"
            )
        }
        print(
            "  ratio ours ÷ iio_readdev: \(format(perMillion[0] / max(1e-9, perMillion[2])))× "
                + "(ours decodes, stamps, batches, compresses and commits to SQLite; iio_readdev copies raw bytes to stdout)")
        try IIOWakeupBenchmark.run(workdir: workdir, me: me)
    }

    /// One reader under umockdev-run (`device`, `script` fed to `/dev/iio:device0`). The reader
    /// itself runs under this binary's `iio-measure`, which reports the reader's own CPU and
    /// context switches (`RUSAGE_CHILDREN` of just that process); the whole tree's CPU (umockdev's
    /// script runner included) is measured here. Output goes to `base`.out, logs beside it.
    static func underUmockdev(
        device: String, script: String, base: String, me: String,
        command: [String]
    ) throws -> (reader: Double, switches: Int, tree: Double, wall: Double) {
        let arguments =
            umockdevRun(device: device, script: script, seconds: 300) + [me, "iio-measure", base + ".cpu", base + ".out", "--"]
            + command
        let result = try measureChild(arguments, stdout: base + ".log", stderr: base + ".log.err")
        let fields = ((try? String(contentsOfFile: base + ".cpu", encoding: .utf8)) ?? "").split(whereSeparator: \.isWhitespace)
        guard result.status == 0, fields.count == 2, let reader = Double(fields[0]), let switches = Int(fields[1]) else {
            throw BenchError("\(command.first ?? "reader") exited with status \(result.status); see \(base).log.err")
        }
        return (reader, switches, result.cpu, result.wall)
    }

    /// `timeout … umockdev-run -d DEVICE [-s /dev/iio:device0=SCRIPT] --`, for the command to follow.
    static func umockdevRun(device: String, script: String?, seconds: Int) -> [String] {
        ["/usr/bin/timeout", "--kill-after=5", String(seconds), "/usr/bin/umockdev-run", "-d", device]
            + (script.map { ["-s", "/dev/iio:device0=\($0)"] } ?? []) + ["--"]
    }

    /// `sensorkit-bench iio-measure RESULT OUTPUT -- COMMAND…`: runs COMMAND (stdout to OUTPUT,
    /// stderr to OUTPUT.err), writes its CPU seconds (`getrusage(RUSAGE_CHILDREN)`) to RESULT and
    /// its context switches (`ru_nvcsw + ru_nivcsw`, every thread) after it and exits with its
    /// status. Run under umockdev-run so only the reader is measured.
    static func measureOne(result: String, output: String, command: [String]) throws -> Int32 {
        let run = try measureChild(command, stdout: output, stderr: output + ".err")
        try String(format: "%.6f %d\n", run.cpu, run.switches).write(toFile: result, atomically: true, encoding: .utf8)
        return run.status
    }

    // MARK: The child: our read path into the store

    /// `sensorkit-bench iio-ingest STORE-DIR SCANS`, run under umockdev-run: records both streams
    /// of the mocked chip until each has `SCANS` samples, closes the store, prints the counts.
    /// STORE-DIR `-` drops the batches instead (the read path alone).
    static func ingest(storeDirectory: String, scans: Int) throws {
        let clock = LinuxSystemClock()
        var timeline = Timeline.founded(by: clock)
        timeline.adoptCurrentBoot(of: clock)
        var configuration = StoreConfiguration(
            directory: storeDirectory == "-" ? NSTemporaryDirectory() + "iio-ingest-unused-\(getpid())" : storeDirectory)
        configuration.retention = RetentionPolicy(hold: 0, window: 7 * 86_400 * 1_000_000_000)
        let store: SensorStore? =
            storeDirectory == "-" ? nil : try SensorStore(configuration: configuration, clock: clock, timeline: timeline)

        let discovery = DispatchQueue(label: "bench.discovery")
        let monitor = try UdevIIOMonitor(queue: discovery)
        guard let device = try discovery.sync(execute: { try monitor.enumerate() }).first else {
            throw BenchError("no mocked device")
        }
        let chip = try IIOChip(udev: device, description: try IIOSysfsDevice(path: device.syspath).describe())
        guard let plan = chip.capturePlan else { throw BenchError("the mocked device cannot buffer") }
        let log = Journal.standardError
        let capture = IIODeviceCapture(
            sysfs: IIOSysfsDevice(path: device.syspath), devnode: device.devnode ?? "/dev/iio:device0",
            description: chip.description, plan: plan, controlQueue: DispatchQueue(label: "bench.control"),
            clock: clock, log: log)
        let sources = chip.functions.filter { $0.capture == .buffered }.map {
            IIOBufferedSource(chip: chip, function: $0, capture: capture)
        }
        let counts = Mutex([Int](repeating: 0, count: sources.count))
        let done = DispatchSemaphore(value: 0)
        for (index, source) in sources.enumerated() {
            let descriptor = source.descriptor
            var identity: SourceIdentity = descriptor.details.mapValues { .string($0) }
            identity["source"] = .string(descriptor.source)
            let stream = try store?.register(
                StreamDescriptor(
                    sensor: descriptor.sensor, device: descriptor.device, source: identity,
                    schema: SampleSchema(descriptor.columns.map(StoreBackend.storedColumn))))
            // On the delivering thread, as the daemon's pipeline hands batches to the store.
            source.setRecording(true) { event in
                guard case let .samples(batch) = event else { return }
                if let store, let stream {
                    store.append(
                        SampleBatch(
                            boot: batch.boot, sensorTimes: batch.sensorTimes, receiveTimes: batch.receiveTimes,
                            columns: batch.columns.map { .integers($0) }), to: stream)
                }
                let finished = counts.withLock { counts in
                    counts[index] += batch.count
                    return counts.allSatisfy { $0 >= scans }
                }
                if finished { done.signal() }
            }
        }
        guard done.wait(timeout: .now() + 240) == .success else {
            throw BenchError("only \(counts.withLock { $0 }) of \(scans) scans arrived")
        }
        for source in sources { source.close() }
        capture.retire()
        capture.settle()
        try store?.close()
        print("ingested " + counts.withLock { $0 }.map(String.init).joined(separator: " ") + " watermark \(plan.plan.watermark)")
    }

    // MARK: Material

    /// The fixture's BMI160 at 400 Hz (accel and gyro), without a trigger.
    static let deviceDescription = describeDevice(hertz: 400)

    /// The fixture's BMI160 at `hertz` (both functions), without a trigger.
    static func describeDevice(hertz: Int) -> String {
        """
        P: /devices/platform/iio-bench/iio:device0
        N: iio:device0
        E: DEVNAME=/dev/iio:device0
        E: SUBSYSTEM=iio
        E: ACCEL_MOUNT_MATRIX=0, 1, 0; -1, 0, 0; 0, 0, 1
        A: dev=244:0\\n
        A: name=bmi160\\n
        A: in_accel_x_raw=12\\n
        A: in_accel_y_raw=-16392\\n
        A: in_accel_z_raw=40\\n
        A: in_accel_scale=0.000598\\n
        A: in_accel_sampling_frequency=\(hertz).000000\\n
        A: in_anglvel_x_raw=3\\n
        A: in_anglvel_y_raw=-2\\n
        A: in_anglvel_z_raw=1\\n
        A: in_anglvel_scale=0.001065\\n
        A: in_anglvel_sampling_frequency=\(hertz).000000\\n
        A: current_timestamp_clock=realtime\\n
        A: buffer/enable=0\\n
        A: buffer/length=0\\n
        A: buffer/watermark=1\\n
        A: scan_elements/in_anglvel_x_en=0\\n
        A: scan_elements/in_anglvel_x_index=4\\n
        A: scan_elements/in_anglvel_x_type=le:s16/16>>0\\n
        A: scan_elements/in_anglvel_y_en=0\\n
        A: scan_elements/in_anglvel_y_index=5\\n
        A: scan_elements/in_anglvel_y_type=le:s16/16>>0\\n
        A: scan_elements/in_anglvel_z_en=0\\n
        A: scan_elements/in_anglvel_z_index=6\\n
        A: scan_elements/in_anglvel_z_type=le:s16/16>>0\\n
        A: scan_elements/in_accel_x_en=0\\n
        A: scan_elements/in_accel_x_index=7\\n
        A: scan_elements/in_accel_x_type=le:s16/16>>0\\n
        A: scan_elements/in_accel_y_en=0\\n
        A: scan_elements/in_accel_y_index=8\\n
        A: scan_elements/in_accel_y_type=le:s16/16>>0\\n
        A: scan_elements/in_accel_z_en=0\\n
        A: scan_elements/in_accel_z_index=9\\n
        A: scan_elements/in_accel_z_type=le:s16/16>>0\\n
        A: scan_elements/in_timestamp_en=0\\n
        A: scan_elements/in_timestamp_index=10\\n
        A: scan_elements/in_timestamp_type=le:s64/64>>0\\n

        """
    }

    /// `scans` scans of a moving device (slowly turning, with noise) stamped `hertz` apart, as a
    /// umockdev script of `r DELAY` lines of `perLine` scans each (escaped; no line starts with a
    /// space — umockdev 0.17 would eat it; such a space moves to the line before). `delay` is
    /// umockdev's pause in milliseconds before each line: 0 feeds as fast as the PTY takes it.
    /// The first scan is stamped now (`CLOCK_BOOTTIME`), so the stamps stay plausible however long
    /// the machine has been up.
    static func streamScript(scans: Int, hertz: Int = 400, perLine: Int = perLine, delay: Int = 0) -> [UInt8] {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func noise() -> Int16 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int16(truncatingIfNeeded: Int64(state >> 59) - 16)
        }
        var lines: [[UInt8]] = []
        var line: [UInt8] = []
        let start = LinuxSystemClock().boottimeNanoseconds()
        for i in 0..<scans {
            let phase = Double(i) / Double(hertz) * 0.5
            let values: [Int16] = [
                Int16(300 * sin(phase)) &+ noise(), Int16(200 * cos(phase)) &+ noise(), noise(),
                Int16(8_000 * sin(phase)) &+ noise(), Int16(-16_000 * cos(phase)) &+ noise(), 40 &+ noise(),
            ]
            for value in values { line += [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)] }
            line += [0, 0, 0, 0]
            let timestamp = start + Int64(i) * (1_000_000_000 / Int64(hertz))
            for shift in stride(from: 0, to: 64, by: 8) { line.append(UInt8(truncatingIfNeeded: timestamp >> Int64(shift))) }
            if (i + 1) % perLine == 0 || i == scans - 1 {
                lines.append(line)
                line = []
            }
        }
        for index in lines.indices.dropFirst() {
            while lines[index].first == 0x20 {
                lines[index - 1].append(0x20)
                lines[index].removeFirst()
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(scans * scanBytes * 2)
        for line in lines where !line.isEmpty {
            out += Array("r \(delay) ".utf8)
            for byte in line {
                if byte == 0x5E {
                    out += [0x5E, 0x60]
                } else if byte < 0x20 {
                    out += [0x5E, byte + 64]
                } else {
                    out.append(byte)
                }
            }
            out.append(0x0A)
        }
        return out
    }

    // MARK: Plumbing

    /// Spawns `arguments` (stdout to `stdout`, stderr to `stderr`; `ChildProcess`: empty signal
    /// mask, a process group of its own) and waits;
    /// CPU and context switches are the change in `getrusage(RUSAGE_CHILDREN)`, which counts every
    /// waited-for descendant (all its threads).
    static func measureChild(_ arguments: [String], stdout: String, stderr: String) throws -> (
        status: Int32, cpu: Double, switches: Int, wall: Double
    ) {
        let before = childrenUsage()
        let started = Date()
        let child = try spawn(arguments, stdout: stdout, stderr: stderr)
        child.wait()
        let after = childrenUsage()
        return (
            child.exitStatus ?? -1, after.cpu - before.cpu, after.switches - before.switches, Date().timeIntervalSince(started)
        )
    }

    /// Starts `arguments` (stdin /dev/null, stdout and stderr to these files) as a `ChildProcess`.
    static func spawn(_ arguments: [String], stdout: String, stderr: String) throws -> ChildProcess {
        let out = try SystemCalls.open(stdout, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o644)
        defer { SystemCalls.close(out) }
        let err = try SystemCalls.open(stderr, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o644)
        defer { SystemCalls.close(err) }
        let null = try SystemCalls.open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { SystemCalls.close(null) }
        return try ChildProcess(arguments, stdin: null, stdout: out, stderr: err)
    }

    static func childrenUsage() -> (cpu: Double, switches: Int) {
        var usage = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &usage)
        return (
            Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6,
            usage.ru_nvcsw + usage.ru_nivcsw
        )
    }

    static func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? -1
    }

    static func format(_ value: Double) -> String { String(format: "%.3f", value) }

    struct BenchError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
