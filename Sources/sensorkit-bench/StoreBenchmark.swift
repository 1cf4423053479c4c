import Foundation
import Glibc
import SensorKitModel
import SensorStore
import SensorSystem
import Synchronization

/// `sensorkit-bench store`: the embargo store on generated reference streams, beside anchors
/// measured in the same run on the same data (bench/store_anchors.py). Figures are printed, not
/// asserted. Deterministic data: the same seed gives the same bytes on every machine.
enum StoreBenchmark {
    static let day: Int64 = 86_400_000_000_000
    static let second: Int64 = 1_000_000_000
    /// Boot time of the first sample (an hour after boot).
    static let start: Int64 = 3_600 * second
    static let days = 8

    static func run() throws {
        print("\n== store: embargo store (issue 3) ==")
        let workdir = NSTemporaryDirectory() + "sensorkit-bench-store-\(getpid())"
        try FileManager.default.createDirectory(atPath: workdir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: workdir) }

        // First, in a process that has not run anything yet: its threads are the store's.
        let wakeups = CommandLine.arguments.contains("--stream") ? nil : try StoreWakeupBenchmark.measure(workdir: workdir)
        if let wakeups, CommandLine.arguments.contains("--wakeups") { return StoreWakeupBenchmark.report(wakeups) }

        var measured: [(ReferenceStream, OurFigures)] = []
        say("  generating…")
        // `--quick`: the accelerometer only, no anchors (for profiling the store itself).
        let quick = CommandLine.arguments.contains("--quick")
        var generators: [(name: String, make: () -> ReferenceStream)] = [
            ("accelerometer", { .accelerometer() }), ("ecg", { .electrocardiogram() }), ("ppg", { .photoplethysmogram() }),
        ]
        // `--stream NAME` (accelerometer, ecg, ppg): that stream alone, no anchors (for profiling).
        let arguments = CommandLine.arguments
        if let flag = arguments.firstIndex(of: "--stream"), flag + 1 < arguments.count {
            generators = generators.filter { $0.name == arguments[flag + 1] }
        } else if quick {
            generators = [generators[0]]
        }
        let onlyOurs = quick || arguments.contains("--stream")
        for (_, make) in generators {
            let stream = make()
            say("  \(stream.name): generated \(stream.count) samples/day; ingesting \(days) days…")
            let figures = try measure(stream, workdir: workdir)
            measured.append((stream, figures))
        }
        let extras = !arguments.contains("--stream")
        let live = extras ? try measureLiveIngest(workdir: workdir) : nil
        let unbatched = extras ? try measureBatchedReceive(workdir: workdir, latency: nil) : nil
        let batched = extras ? try measureBatchedReceive(workdir: workdir, latency: .exponential) : nil
        let derived = extras ? try measureBatchedReceive(workdir: workdir, latency: .derived) : nil

        if !onlyOurs { say("  running anchors (bench/store_anchors.py)…") }
        let anchors = onlyOurs ? [:] : runAnchors(measured.map(\.0), workdir: workdir)
        for (stream, ours) in measured {
            report(stream, ours, anchors[stream.name])
        }
        if let live {
            print("\n  accelerometer, live pattern (a 1 s batch then flush(): one piece + one fsynced commit per second,")
            print("  sealed every 10 min): ingest \(format(live)) CPU-s per million samples")
        }
        if let wakeups { StoreWakeupBenchmark.report(wakeups) }
        if let unbatched, let batched, let derived {
            print("  one hour of the accelerometer with receive times of IIO batch reads (every 10 samples share their")
            print("  read's receive time), B/sample on disk: 50 µs + Exp(200 µs) after the newest sample, ns resolution:")
            print("  \(format(batched)) (\(signed(batched - unbatched))); at the newest sample's time (the daemon's IIO capture")
            print(
                "  without a timestamp channel derives sensor times from the read): \(format(derived)) (\(signed(derived - unbatched)));"
            )
            print("  the same hour with receive = sensor time: \(format(unbatched))")
        }
    }

    // MARK: Our store

    /// Eight days of `stream` in one-second batches, as the ingest flood hands them over.
    static func forEachBatch(of stream: ReferenceStream, boot: BootID, _ body: (SampleBatch) -> Void) {
        for dayIndex in 0..<days {
            let shift = Int64(dayIndex) * day
            var first = 0
            while first < stream.count {
                let end = min(first + stream.perSecond, stream.count)
                let times = stream.times[first..<end].map { $0 + shift }
                body(
                    SampleBatch(
                        boot: boot, sensorTimes: times, receiveTimes: times,
                        columns: stream.columns.map { .integers(Array($0[first..<end])) }))
                first = end
            }
        }
    }

    struct OurFigures {
        var bytesPerSample: Double
        /// The store's ingest: the process's CPU over the flood and `close()`, less
        /// `buildingCPUPerMillion`.
        var ingestCPUPerMillion: Double
        /// The appending thread's share (building batches, `append`'s checks and enqueueing).
        var callerCPUPerMillion: Double
        /// The bench building the batches it appends (measured alone, same loop).
        var buildingCPUPerMillion: Double
        var querySamplesPerSecond: Double
        var queryCPUPerMillion: Double
        var purgeSeconds: Double
        var purgedSamples: Int
        var lossless: Bool
        var note: String
    }

    /// Samples the ingest flood may run ahead of the store's writer (an eighth of the store's
    /// default `maxPendingSamples`; a live pipeline is never more than a second ahead).
    static let maxBacklog = 1_000_000

    static func configuration(_ directory: String) -> StoreConfiguration {
        var configuration = StoreConfiguration(directory: directory)
        configuration.retention = RetentionPolicy(hold: 0, window: 7 * day)
        configuration.purgeInterval = 0
        configuration.maxPendingSamples = .max / 2  // the bench outruns the writer on purpose
        return configuration
    }

    static func measure(_ stream: ReferenceStream, workdir: String) throws -> OurFigures {
        let directory = workdir + "/ours-" + stream.name
        let clock = BenchClock(boottime: start + Int64(days) * day + second)
        var timeline = Timeline.founded(by: clock)
        timeline.adoptCurrentBoot(of: clock)
        let configuration = configuration(directory)

        // Ingest eight days in one-second batches, as the pipeline hands them over.
        var store = try SensorStore(configuration: configuration, clock: clock, timeline: timeline)
        let id = try store.register(stream.descriptor)
        let cpuBefore = cpuSeconds()
        let callerBefore = threadCPUSeconds()
        var appended = 0
        forEachBatch(of: stream, boot: clock.bootID) { batch in
            store.append(batch, to: id)
            // A pipeline hands batches over as they are recorded, so the writer never holds a
            // backlog of days: the flood waits (off the CPU) while the writer is more than
            // `maxBacklog` samples behind, instead of piling gigabytes of fresh batches.
            // (Checked every 64 batches: the count takes the inbox's lock, which the writer
            // also takes.)
            appended += 1
            if appended % 64 == 0 { while store.pendingSampleCount > maxBacklog { usleep(500) } }
        }
        let callerCPU = threadCPUSeconds() - callerBefore
        try store.close()
        let ingestCPU = cpuSeconds() - cpuBefore
        // What the loop above spends building its batches (slicing them out of the cold
        // day-long source, six arrays a batch), measured alone: the bench's cost, not the
        // store's. A pipeline hands over batches it has just filled.
        let buildingBefore = threadCPUSeconds()
        var built = 0
        forEachBatch(of: stream, boot: clock.bootID) { built += $0.count }
        let buildingCPU = threadCPUSeconds() - buildingBefore
        let total = stream.count * days
        let fileBytes = ["", "-wal"].reduce(Int64(0)) { $0 + fileSize(configuration.databasePath + $1) }

        // Query the last full day, decoding every value; then check it against the source.
        store = try SensorStore(configuration: configuration, clock: clock, timeline: timeline)
        let shift = Int64(days - 1) * day
        guard let anchor = timeline.anchors[clock.bootID] else { throw StoreError.currentBootNotAdopted }
        let from = anchor + stream.times.min()! + shift - 1
        let to = anchor + stream.times.max()! + shift
        var checksum: Int64 = 0
        var decoded = 0
        let threadBefore = threadCPUSeconds()
        let wallBefore = monotonicSeconds()
        let cursor = try store.samples(sensor: stream.descriptor.sensor, device: "host", from: from, to: to)
        while let block = try cursor.next() {
            for time in block.sensorTimes { checksum &+= time }
            for time in block.receiveTimes { checksum &+= time }
            for column in 0..<stream.columns.count {
                for value in block.rawColumn(column) { checksum &+= value }
            }
            decoded += block.count
        }
        let queryWall = monotonicSeconds() - wallBefore
        let queryCPU = threadCPUSeconds() - threadBefore
        let lossless = try verify(stream, store: store, from: from, to: to, shift: shift) && decoded == stream.count
        if checksum == 42 { print("") }  // keeps the summing loop from being optimised away

        // Purge at a full window: now is just past day 7, so day 0 falls out.
        let purgeBefore = monotonicSeconds()
        let purged = try store.purge()
        let purgeSeconds = monotonicSeconds() - purgeBefore
        try store.close()
        try? FileManager.default.removeItem(atPath: directory)
        return OurFigures(
            bytesPerSample: Double(fileBytes) / Double(total),
            ingestCPUPerMillion: (ingestCPU - buildingCPU) / Double(total) * 1e6,
            callerCPUPerMillion: callerCPU / Double(total) * 1e6,
            buildingCPUPerMillion: buildingCPU / Double(built) * 1e6,
            querySamplesPerSecond: Double(decoded) / queryWall,
            queryCPUPerMillion: queryCPU / Double(decoded) * 1e6,
            purgeSeconds: purgeSeconds, purgedSamples: purged.purgedSamples, lossless: lossless,
            note: "\(days) days in one 1 s-batch stream; file bytes incl. catalog and chunk index")
    }

    /// Every sample of the day compared with the generated source: times (boot clock), receive
    /// times and values, in order.
    static func verify(_ stream: ReferenceStream, store: SensorStore, from: Int64, to: Int64, shift: Int64) throws -> Bool {
        // The source in time order (the generator's times are increasing, so that is its order).
        let cursor = try store.samples(sensor: stream.descriptor.sensor, device: "host", from: from, to: to)
        var index = 0
        while let block = try cursor.next() {
            for i in 0..<block.count {
                guard index < stream.count, block.bootInstant(at: i).nanoseconds == stream.times[index] + shift,
                    block.receiveBootInstant(at: i).nanoseconds == stream.times[index] + shift
                else { return false }
                for column in 0..<stream.columns.count
                where block.rawColumn(column)[block.rawColumn(column).startIndex + i] != stream.columns[column][index] {
                    return false
                }
                index += 1
            }
        }
        return index == stream.count
    }

    /// Ten minutes of the accelerometer as a live daemon writes it: a batch per second, each made
    /// durable at once (a piece and an fsynced commit), sealed at the end.
    static func measureLiveIngest(workdir: String) throws -> Double {
        let stream = ReferenceStream.accelerometer(seconds: 600)
        let directory = workdir + "/ours-live"
        let clock = BenchClock(boottime: start + day)
        var timeline = Timeline.founded(by: clock)
        timeline.adoptCurrentBoot(of: clock)
        let store = try SensorStore(configuration: configuration(directory), clock: clock, timeline: timeline)
        let id = try store.register(stream.descriptor)
        let before = cpuSeconds()
        var first = 0
        while first < stream.count {
            let end = min(first + stream.perSecond, stream.count)
            let times = Array(stream.times[first..<end])
            store.append(
                SampleBatch(
                    boot: clock.bootID, sensorTimes: times, receiveTimes: times,
                    columns: stream.columns.map { .integers(Array($0[first..<end])) }), to: id)
            try store.flush()
            first = end
        }
        try store.close()
        let cpu = cpuSeconds() - before
        try? FileManager.default.removeItem(atPath: directory)
        return cpu / Double(stream.count) * 1e6
    }

    /// How a modelled IIO read's receive time relates to its newest sample.
    enum ReadLatency {
        /// 50 µs + Exp(200 µs) after the newest sample's (timestamp channel) time.
        case exponential
        /// Exactly the newest sample's time: sensor times are derived from the receive time
        /// (receive − k·period), as `IIODeviceCapture` does without a timestamp channel.
        case derived
    }

    /// An hour of the accelerometer with receive times as an IIO buffer read would give them
    /// (a read every 10 samples; every sample of a read shares its receive time), or, for
    /// `model` nil, receive = sensor time.
    static func measureBatchedReceive(workdir: String, latency model: ReadLatency?) throws -> Double {
        let stream = ReferenceStream.accelerometer(seconds: 3_600)
        var random = BenchRandom(seed: 99)
        var receive = [Int64](repeating: 0, count: stream.count)
        var batchStart = 0
        while batchStart < stream.count {
            let end = min(batchStart + 10, stream.count)
            let latency: Int64 =
                switch model {
                case .exponential: 50_000 + Int64(-log(random.unit() + 1e-300) * 200_000)
                case .derived, nil: 0
                }
            for i in batchStart..<end { receive[i] = model == nil ? stream.times[i] : stream.times[end - 1] + latency }
            batchStart = end
        }
        let directory = workdir + "/ours-receive"
        let clock = BenchClock(boottime: start + day)
        var timeline = Timeline.founded(by: clock)
        timeline.adoptCurrentBoot(of: clock)
        let configuration = configuration(directory)
        let store = try SensorStore(configuration: configuration, clock: clock, timeline: timeline)
        let id = try store.register(stream.descriptor)
        var first = 0
        while first < stream.count {
            let end = min(first + stream.perSecond, stream.count)
            store.append(
                SampleBatch(
                    boot: clock.bootID, sensorTimes: Array(stream.times[first..<end]),
                    receiveTimes: Array(receive[first..<end]),
                    columns: stream.columns.map { .integers(Array($0[first..<end])) }), to: id)
            first = end
        }
        try store.close()
        let bytes = fileSize(configuration.databasePath) + fileSize(configuration.databasePath + "-wal")
        try? FileManager.default.removeItem(atPath: directory)
        return Double(bytes) / Double(stream.count)
    }

    // MARK: Anchors

    /// Writes each stream's day column-major as little-endian int64 and runs the Python anchors.
    static func runAnchors(_ streams: [ReferenceStream], workdir: String) -> [String: [String: [String: Any]]] {
        var manifest: [[String: Any]] = []
        for stream in streams {
            let path = workdir + "/\(stream.name).bin"
            var bytes = Data(capacity: stream.count * 8 * (stream.columns.count + 1))
            for column in [stream.times] + stream.columns {
                column.withUnsafeBytes { bytes.append(contentsOf: $0) }  // x86-64 and arm64 are little endian
            }
            _ = FileManager.default.createFile(atPath: path, contents: bytes)
            manifest.append([
                "name": stream.name, "path": path, "count": stream.count,
                "columns": stream.descriptor.schema.columns.map(\.name), "types": stream.arrowTypes,
            ])
        }
        let manifestPath = workdir + "/manifest.json"
        guard let json = try? JSONSerialization.data(withJSONObject: ["streams": manifest]),
            FileManager.default.createFile(atPath: manifestPath, contents: json)
        else { return [:] }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("bench/store_anchors.py").path
        // Debian's interpreter, the one the tests and scripts use (SENSORKIT_PYTHON overrides it).
        let python = ProcessInfo.processInfo.environment["SENSORKIT_PYTHON"] ?? "/usr/bin/python3"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script, manifestPath]
        let output = Pipe()
        process.standardOutput = output
        do {
            try process.run()
        } catch {
            print("  anchors: \(python) not available (\(error))")
            return [:]
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0,
            let parsed = try? JSONSerialization.jsonObject(with: data) as? [String: [String: [String: Any]]]
        else {
            print("  anchors: store_anchors.py failed (status \(process.terminationStatus))")
            return [:]
        }
        return parsed
    }

    // MARK: Report

    static func report(_ stream: ReferenceStream, _ ours: OurFigures, _ anchors: [String: [String: Any]]?) {
        print("\n  \(stream.title): \(stream.count) samples/day, \(days) days stored, window 7 d")
        let names = [
            ("sqlite_rows", "SQLite rows"), ("csv_gz", "CSV.gz"), ("parquet_zstd", "Parquet zstd"),
            ("parquet_best", "Parquet delta+zstd19"),
        ]
        func anchor(_ key: String, _ metric: String) -> Double? { anchors?[key]?[metric] as? Double }
        func line(_ label: String, _ value: Double, _ metric: String, xdf: Double? = nil, unit: String = "") {
            var text = "    \(label.padding(toLength: 30, withPad: " ", startingAt: 0)) ours \(format(value))\(unit)"
            if let xdf { text += " | XDF raw \(format(xdf)) (×\(format(value / xdf)))" }
            for (key, name) in names {
                if let figure = anchor(key, metric) {
                    text += " | \(name) \(format(figure)) (×\(format(value / figure)))"
                } else {
                    text += " | \(name) " + ((anchors?[key]?["error"] as? String) ?? "not available")
                }
            }
            print(text)
        }
        line("bytes/sample on disk", ours.bytesPerSample, "bytes_per_sample", xdf: stream.xdfBytesPerSample)
        line("ingest CPU-s / M samples", ours.ingestCPUPerMillion, "ingest_cpu_s_per_m")
        line("query, full day (samples/s)", ours.querySamplesPerSecond, "query_samples_per_s")
        line("purge one day at 7-day window (s)", ours.purgeSeconds, "purge_s")
        let flood = ours.ingestCPUPerMillion + ours.buildingCPUPerMillion
        print(
            "    ingest split: the flood took \(format(flood)) CPU-s/M: \(format(ours.callerCPUPerMillion)) on the appending thread (building 1 s batches, appending), \(format(flood - ours.callerCPUPerMillion)) on the writer queue and close(); building the batches alone, measured after: \(format(ours.buildingCPUPerMillion)); the store's ingest (above): flood − building"
        )
        print(
            "    query on CPU time: \(format(1 / ours.queryCPUPerMillion))M samples per CPU-second of the querying thread (wall-clock figure above depends on the machine's load); purge removed \(ours.purgedSamples) samples"
        )
        print("    lossless: \(ours.lossless ? "yes" : "NO") (every time, receive time and value of the queried day compared)")
        for (key, name) in names {
            if let note = anchors?[key]?["note"] as? String { print("    \(name): \(note)") }
        }
        let best = anchor("parquet_best", "bytes_per_sample")
        let rows = anchor("sqlite_rows", "bytes_per_sample")
        var targets = "    targets: lossless \(ours.lossless ? "yes" : "NO")"
        targets +=
            best.map {
                "; ≤0.9× best Parquet: ×\(format(ours.bytesPerSample / $0)) \(ours.bytesPerSample <= 0.9 * $0 ? "met" : "missed")"
            } ?? "; best Parquet not available"
        targets +=
            rows.map {
                "; ≤⅙ SQLite rows: ×\(format(ours.bytesPerSample / $0)) \(ours.bytesPerSample <= $0 / 6 ? "met" : "missed")"
            } ?? ""
        targets +=
            "; query ≥20 M/s on one core: \(format(ours.querySamplesPerSecond / 1e6)) M/s wall, \(format(1 / ours.queryCPUPerMillion)) M/s CPU \(ours.querySamplesPerSecond >= 20e6 ? "met" : 1 / ours.queryCPUPerMillion >= 20 ? "met on CPU time" : "missed")"
        targets +=
            "; ingest ≤0.1 CPU-s/M: \(format(ours.ingestCPUPerMillion)) \(ours.ingestCPUPerMillion <= 0.1 ? "met" : "missed")"
        print(targets)
    }

    /// Prints and flushes at once (stdout is fully buffered when it is not a terminal).
    static func say(_ line: String) {
        print(line)
        fflush(nil)
    }

    /// `format` with an explicit sign.
    static func signed(_ value: Double) -> String { (value < 0 ? "−" : "+") + format(abs(value)) }

    static func format(_ value: Double) -> String {
        if value >= 1e6 { return String(format: "%.1fM", value / 1e6) }
        if value >= 100 { return String(format: "%.0f", value) }
        if value >= 1 { return String(format: "%.2f", value) }
        return String(format: "%.3f", value)
    }

    // MARK: Measuring

    /// `getrusage(RUSAGE_SELF)`: every thread of the process, the writer queue's included.
    static func cpuSeconds() -> Double { rusageSeconds(0) }
    /// `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`: the calling thread's CPU time to the nanosecond
    /// (`getrusage(RUSAGE_THREAD)` counts scheduler ticks here, 10 ms: a tenth of a round of the
    /// decode bench).
    static func threadCPUSeconds() -> Double {
        Double(LinuxSystemClock.read(CLOCK_THREAD_CPUTIME_ID)) * 1e-9
    }

    /// `getrusage(2)`: user + system CPU time.
    static func rusageSeconds(_ who: __rusage_who_t) -> Double {
        var usage = rusage()
        getrusage(who, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    static func monotonicSeconds() -> Double {
        Double(LinuxSystemClock.read(CLOCK_MONOTONIC)) / 1e9
    }

    static func fileSize(_ path: String) -> Int64 {
        (try? SystemCalls.stat(path)).map { Int64($0.st_size) } ?? 0
    }
}

/// A clock that stands still at a chosen boot time (the bench is not about waiting).
final class BenchClock: SystemClock {
    let bootID = BootID("bench-boot")
    let boottime: Int64
    init(boottime: Int64) { self.boottime = boottime }
    func boottimeNanoseconds() -> Int64 { boottime }
    func realtimeNanoseconds() -> Int64 { 1_790_000_000_000_000_000 + boottime }
    func wallClockSynchronized() -> Bool { true }
}

/// SplitMix64 with Box–Muller normals: the bench's only source of randomness, seeded.
struct BenchRandom {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }

    mutating func gaussian() -> Double {
        (-2 * log(1 - unit())).squareRoot() * cos(2 * .pi * unit())
    }

    /// Uniform integer in `range`.
    mutating func integer(in range: ClosedRange<Int64>) -> Int64 {
        range.lowerBound + Int64(next() % UInt64(range.upperBound - range.lowerBound + 1))
    }
}

/// One generated day of a reference stream: boot-clock times from `StoreBenchmark.start` and
/// integer columns.
struct ReferenceStream {
    let name: String
    let title: String
    let descriptor: StreamDescriptor
    let times: [Int64]
    let columns: [[Int64]]
    let perSecond: Int
    /// XDF stores a sample as 1 + 8 bytes of timestamp and 4 bytes per channel (float32/int32).
    let xdfBytesPerSample: Double
    /// The narrowest Arrow integer type per value column, for the Parquet anchors.
    let arrowTypes: [String]

    var count: Int { times.count }

    /// The issue's reference: 100 Hz, ±20 µs uniform jitter at ns resolution, int16 counts with
    /// z ≈ 16384 (1 g), slow motion (≈800 and 300 LSB, periods 37 s and 3.1 s), σ = 2.5 LSB noise.
    static func accelerometer(seconds: Int = 86_400) -> ReferenceStream {
        var random = BenchRandom(seed: 1)
        let count = seconds * 100
        var times = [Int64](repeating: 0, count: count)
        var axes = [[Int64]](repeating: [Int64](repeating: 0, count: count), count: 3)
        let phases: [(Double, Double)] = [(0.3, 1.9), (2.1, 0.4), (4.0, 2.7)]
        let base: [Double] = [0, 0, 16_384]
        for i in 0..<count {
            times[i] = StoreBenchmark.start + Int64(i) * 10_000_000 + random.integer(in: -20_000...20_000)
            let t = Double(i) / 100
            for axis in 0..<3 {
                let motion = 800 * sin(2 * .pi * t / 37 + phases[axis].0) + 300 * sin(2 * .pi * t / 3.1 + phases[axis].1)
                let value = (base[axis] + motion + 2.5 * random.gaussian()).rounded()
                axes[axis][i] = Int64(max(-32_768, min(32_767, value)))
            }
        }
        let scale = 9.80665 / 16_384
        return ReferenceStream(
            name: "accelerometer", title: "reference accelerometer (100 Hz, 3 × int16 counts)",
            descriptor: StreamDescriptor(
                sensor: .accelerometer, source: ["bench": .string("reference accelerometer"), "rate": .integer(100)],
                schema: SampleSchema(["x", "y", "z"].map { .integer(name: $0, scale: scale, offset: 0, unit: "m/s²") })),
            times: times, columns: axes, perSecond: 100, xdfBytesPerSample: 21, arrowTypes: ["int16", "int16", "int16"])
    }

    /// A synthetic ECG at 130 Hz in µV (Polar H10 style): P-QRS-T from Gaussians at 55–80 bpm
    /// with respiratory sinus arrhythmia, baseline wander, σ = 6 µV noise. The device clock is
    /// mapped to boot time: a 130 Hz grid with a 25 ppm rate error, no jitter.
    static func electrocardiogram() -> ReferenceStream {
        var random = BenchRandom(seed: 2)
        let count = 86_400 * 130
        var times = [Int64](repeating: 0, count: count)
        var ecg = [Int64](repeating: 0, count: count)
        let period = 1e9 / 130 * (1 - 25e-6)
        var beatStart = 0.0
        var rr = 0.9
        let waves: [(offset: Double, width: Double, amplitude: Double)] = [
            (-0.20, 0.025, 120), (-0.035, 0.010, -90), (0, 0.011, 1_150), (0.035, 0.012, -260), (0.26, 0.045, 310),
        ]
        for i in 0..<count {
            times[i] = StoreBenchmark.start + Int64((Double(i) * period).rounded())
            let t = Double(i) / 130
            if t - beatStart >= rr {
                beatStart += rr
                let heartRate = 67 + 10 * sin(2 * .pi * t / 5_400) + 3 * sin(2 * .pi * t / 4.2) + random.gaussian()
                rr = 60 / heartRate
            }
            var value = 180 * sin(2 * .pi * t / 4.2) + 60 * sin(2 * .pi * t / 97)
            for wave in waves {
                for beat in [beatStart, beatStart + rr] {
                    let d = t - beat - 0.25 - wave.offset
                    value += wave.amplitude * exp(-d * d / (2 * wave.width * wave.width))
                }
            }
            ecg[i] = Int64((value + 6 * random.gaussian()).rounded())
        }
        return ReferenceStream(
            name: "ecg", title: "ECG (130 Hz, µV integers)",
            descriptor: StreamDescriptor(
                sensor: .electrocardiogram, source: ["bench": .string("synthetic ECG"), "rate": .integer(130)],
                schema: SampleSchema([.integer(name: "ecg", scale: 1, offset: 0, unit: "µV")])),
            times: times, columns: [ecg], perSecond: 130, xdfBytesPerSample: 13, arrowTypes: ["int32"])
    }

    /// Synthetic PPG at 55 Hz, 4 channels (3 optical + ambient, Polar Verity Sense style 22-bit
    /// counts): a pulse wave with dicrotic notch riding on per-channel DC, respiration and drift.
    static func photoplethysmogram() -> ReferenceStream {
        var random = BenchRandom(seed: 3)
        let count = 86_400 * 55
        var times = [Int64](repeating: 0, count: count)
        var channels = [[Int64]](repeating: [Int64](repeating: 0, count: count), count: 4)
        let period = 1e9 / 55 * (1 - 18e-6)
        let dc: [Double] = [262_000, 241_000, 198_000]
        let gain: [Double] = [2_400, 2_050, 1_700]
        var phase = 0.0
        for i in 0..<count {
            times[i] = StoreBenchmark.start + Int64((Double(i) * period).rounded())
            let t = Double(i) / 55
            let heartRate = 68 + 9 * sin(2 * .pi * t / 5_400) + 3 * sin(2 * .pi * t / 4.2)
            phase += heartRate / 60 / 55
            let p = phase - phase.rounded(.down)
            let pulse = exp(-pow((p - 0.18) / 0.07, 2)) + 0.35 * exp(-pow((p - 0.48) / 0.09, 2))
            let breathing = sin(2 * .pi * t / 4.2)
            let drift = sin(2 * .pi * t / 1_800)
            for channel in 0..<3 {
                let value = dc[channel] * (1 + 0.02 * drift) - gain[channel] * pulse + 420 * breathing + 35 * random.gaussian()
                channels[channel][i] = Int64(value.rounded())
            }
            channels[3][i] = Int64((1_500 + 300 * drift + 12 * random.gaussian()).rounded())
        }
        return ReferenceStream(
            name: "ppg", title: "PPG (55 Hz, 4 channels of 22-bit counts)",
            descriptor: StreamDescriptor(
                sensor: .photoplethysmogram, source: ["bench": .string("synthetic PPG"), "rate": .integer(55)],
                schema: SampleSchema(
                    ["ppg0", "ppg1", "ppg2", "ambient"].map { .integer(name: $0, scale: 1, offset: 0, unit: "") })),
            times: times, columns: channels, perSecond: 55, xdfBytesPerSample: 25,
            arrowTypes: ["int32", "int32", "int32", "int32"])
    }
}
