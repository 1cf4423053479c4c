import Foundation
import Glibc

/// The `iio` section's second part: what capture costs a tablet's battery. A kernel buffer with a
/// watermark wakes its reader once per watermark's worth of scans, at the chip's rate; this feeds
/// the fixture's BMI160 at 100 Hz in bursts of the daemon's watermark for that rate (≈ 100 ms of
/// scans, `DeviceCapturePlan`), one umockdev script line (`r 100 …`: umockdev waits 100 ms, then
/// makes the line readable) per burst. `iio_readdev` cannot open a pipe (libiio's local backend
/// reads `/sys/bus/iio/devices` and `/dev/iio:deviceN`), so both readers get the same umockdev
/// feed, one PTY write per burst.
///
/// Per reader: wake-ups per second are its context switches (`ru_nvcsw + ru_nivcsw` of the
/// reader process, all threads, from `getrusage(RUSAGE_CHILDREN)`), and CPU per scan its CPU;
/// both from a long and a short run, the difference divided by the difference in seconds (or
/// scans), so start-up cancels out.
enum IIOWakeupBenchmark {
    static let hertz = 100
    /// `DeviceCapturePlan`'s watermark at `hertz`; the ingest child reports the one it used.
    static let burst = hertz / 10
    static let seconds = (long: 20, short: 5)

    /// `sensorkit-bench iio-daemon`: the whole daemon beside `iio_readdev` measured alike, alone
    /// (≈ 1.5 min instead of the section's ≈ 4), to compare two builds in alternating runs.
    static func runDaemonAlone() throws {
        print("\n== iio-daemon: the battery targets, whole daemon beside iio_readdev (issue 25) ==")
        try IIOBenchmark.withWorkdir { workdir in
            let device = workdir + "/bmi160-\(hertz)hz.umockdev"
            try IIOBenchmark.describeDevice(hertz: hertz).write(toFile: device, atomically: true, encoding: .utf8)
            try IIODaemonWakeupBenchmark.run(workdir: workdir, device: device, anchor: nil)
        }
    }

    static func run(workdir: String, me: String) throws {
        print(
            "\n  -- battery: 100 Hz 6-axis BMI160 in watermark-sized bursts (\(burst) scans every \(1000 * burst / hertz) ms), umockdev-fed (issue 15) --"
        )
        let device = workdir + "/bmi160-\(hertz)hz.umockdev"
        try IIOBenchmark.describeDevice(hertz: hertz).write(toFile: device, atomically: true, encoding: .utf8)
        let counts = [seconds.long * hertz, seconds.short * hertz]
        for count in counts {
            try Data(IIOBenchmark.streamScript(scans: count, hertz: hertz, perLine: burst, delay: 1000 * burst / hertz))
                .write(to: URL(fileURLWithPath: workdir + "/paced-\(count).script"))
        }
        typealias Reader = (name: String, file: String, command: (Int) -> [String])
        let readers: [Reader] = [
            ("ours: read → committed chunk", "paced-ours", { [me, "iio-ingest", workdir + "/paced-store-\($0)", String($0)] }),
            ("  of which read → batches", "paced-ours-nostore", { [me, "iio-ingest", "-", String($0)] }),
            (
                "anchor: iio_readdev -b \(burst)", "paced-readdev",
                { ["/usr/bin/iio_readdev", "-s", String($0), "-b", String(burst), "iio:device0"] }
            ),
        ]
        var figures: [(wakeups: Double, cpu: Double)] = []
        for reader in readers {
            var runs: [(reader: Double, switches: Int, tree: Double, wall: Double)] = []
            for count in counts {
                let base = workdir + "/\(reader.file)-\(count)"
                runs.append(
                    try IIOBenchmark.underUmockdev(
                        device: device, script: workdir + "/paced-\(count).script", base: base,
                        me: me, command: reader.command(count)))
                let output = (try? String(contentsOfFile: base + ".out", encoding: .utf8)) ?? ""
                if reader.file.hasPrefix("paced-ours") {
                    if !output.contains("ingested \(count) \(count) watermark \(burst)") {
                        print("  WARNING: iio-ingest did not read \(count) scans with watermark \(burst): \(output)")
                    }
                } else if IIOBenchmark.fileSize(base + ".out") != count * IIOBenchmark.scanBytes {
                    print(
                        "  WARNING: iio_readdev wrote \(IIOBenchmark.fileSize(base + ".out")) bytes, not \(count * IIOBenchmark.scanBytes)"
                    )
                }
            }
            let span = Double(seconds.long - seconds.short)
            let wakeups = Double(runs[0].switches - runs[1].switches) / span
            let cpu = (runs[0].reader - runs[1].reader) / (span * Double(hertz))
            figures.append((wakeups, cpu))
            print(
                "  \(reader.name.padding(toLength: 30, withPad: " ", startingAt: 0)) \(IIOBenchmark.format(wakeups)) wake-ups/s, "
                    + "\(IIOBenchmark.format(cpu * 1e6)) CPU-µs per scan (this run: \(runs[0].switches) switches, "
                    + "\(IIOBenchmark.format(runs[0].reader)) CPU-s, \(IIOBenchmark.format(runs[0].wall)) s wall)")
        }
        print(
            "  ratio ours ÷ iio_readdev: \(IIOBenchmark.format(figures[0].wakeups / max(1e-9, figures[2].wakeups)))× wake-ups, "
                + "\(IIOBenchmark.format(figures[0].cpu / max(1e-12, figures[2].cpu)))× CPU per scan "
                + "(targets: ≤ 12 wake-ups/s, ≤ 1.5× CPU per scan)")
        try IIODaemonWakeupBenchmark.run(workdir: workdir, device: device, anchor: figures[2])
    }
}
