import Foundation
import Glibc
import SensorKitModel
import SensorStore

/// `sensorkit-bench store`'s wake-up figures (docs/store.md, "When the writer wakes"): context
/// switches per second of this process while it holds an open store (default configuration,
/// `synchronous=FULL`), idle, and with two streams handed 100 samples each once a second, the way
/// the IIO capture delivers a 100 Hz chip's batches. `getrusage(RUSAGE_SELF)` counts every thread
/// of the process (the writer queue's worker, the dispatch manager, the bench's own); the bench
/// thread's share (`RUSAGE_THREAD`: one sleep a second, one futex per append burst at most) is
/// printed beside, and the difference is the store's. `sensorkit-bench store --wakeups` runs
/// this alone.
enum StoreWakeupBenchmark {
    struct Figures {
        /// Switches per second of the whole process, and of the bench's thread alone.
        var idle: (process: Double, bench: Double)
        var appending: (process: Double, bench: Double)
        var seconds: Int
    }

    static func measure(workdir: String, seconds: Int = 5) throws -> Figures {
        let directory = workdir + "/ours-wakeups"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = BenchClock(boottime: StoreBenchmark.start + StoreBenchmark.day)
        var timeline = Timeline.founded(by: clock)
        timeline.adoptCurrentBoot(of: clock)
        var configuration = StoreConfiguration(directory: directory)
        configuration.retention = RetentionPolicy(hold: 0, window: 7 * StoreBenchmark.day)
        let store = try SensorStore(configuration: configuration, clock: clock, timeline: timeline)
        defer { try? store.close() }
        let source = ReferenceStream.accelerometer(seconds: seconds + 1)
        var second = source.descriptor
        second.source["bench"] = .string("reference accelerometer, second stream")
        let streams = [try store.register(source.descriptor), try store.register(second)]

        // Let the open settle (its commit, the queue's worker parking) before counting.
        Thread.sleep(forTimeInterval: 1)
        let idle = try count(seconds: seconds) { _ in }
        let appending = try count(seconds: seconds) { index in
            let range = index * source.perSecond..<(index + 1) * source.perSecond
            let times = Array(source.times[range])
            for stream in streams {
                store.append(
                    SampleBatch(
                        boot: clock.bootID, sensorTimes: times, receiveTimes: times,
                        columns: source.columns.map { .integers(Array($0[range])) }), to: stream)
            }
        }
        return Figures(idle: idle, appending: appending, seconds: seconds)
    }

    /// Switches per second over `seconds` one-second rounds, each starting with `body(round)`.
    private static func count(seconds: Int, _ body: (Int) throws -> Void) throws -> (process: Double, bench: Double) {
        let started = StoreBenchmark.monotonicSeconds()
        let before = (switches(RUSAGE_SELF.rawValue), switches(rusageThread))
        for round in 0..<seconds {
            try body(round)
            let next = started + Double(round + 1)
            Thread.sleep(forTimeInterval: max(0, next - StoreBenchmark.monotonicSeconds()))
        }
        let elapsed = StoreBenchmark.monotonicSeconds() - started
        let after = (switches(RUSAGE_SELF.rawValue), switches(rusageThread))
        return (Double(after.0 - before.0) / elapsed, Double(after.1 - before.1) / elapsed)
    }

    /// Linux's `RUSAGE_THREAD` (glibc declares it only under `_GNU_SOURCE`, which Swift's Glibc
    /// module does not define).
    private static let rusageThread: __rusage_who_t = 1

    /// `ru_nvcsw + ru_nivcsw`: voluntary and involuntary context switches.
    private static func switches(_ who: __rusage_who_t) -> Int {
        var usage = rusage()
        getrusage(who, &usage)
        return usage.ru_nvcsw + usage.ru_nivcsw
    }

    static func report(_ figures: Figures) {
        func line(_ label: String, _ value: (process: Double, bench: Double)) {
            func rate(_ value: Double) -> String { String(format: "%.1f", value) }
            print(
                "  \(label): \(rate(value.process)) switches/s in all, \(rate(value.bench)) of them the bench's thread,"
                    + " \(rate(value.process - value.bench)) the store's")
        }
        print("\n  wake-ups of a process holding an open store (context switches, \(figures.seconds) s each):")
        line("idle", figures.idle)
        line("2 streams × 100 samples appended once a second", figures.appending)
    }
}
