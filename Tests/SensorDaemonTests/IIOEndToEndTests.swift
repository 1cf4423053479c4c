import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorTestKit
import Testing

/// The real `sensorkitd` recording mocked IIO hardware (umockdev), checked through the reader API
/// only: kernel timestamps and values in SensorKit units, FIFO overflow as a deletion record,
/// hotplug remove and re-add during recording, a rate and range change, garbage in sysfs.
/// `IIODaemonRun` has the harness; each test prints the daemon's log when it fails.
@Suite(.serialized, .needs(.umockdev))
struct IIOEndToEndTests {
    static let accelerometer = SRSensor.accelerometer
    static let accelTombstones = SRSensor.accelerometer.rawValue + ".tombstones"
    static let bmi160 = IIODaemonRun.fixtures + "/bmi160.umockdev"
    static let syspath0 = "/sys/devices/platform/iio-test/iio:device0"
    static let ms: Int64 = 1_000_000

    /// The fixture's udev `ACCEL_MOUNT_MATRIX` "0, 1, 0; -1, 0, 0; 0, 0, 1" (it wins over the
    /// identity `in_mount_matrix`): device x = chip y, device y = −chip x, device z = chip z.
    static func expectedAccel(_ scan: BMI160Scan, scale: Double = 0.000598) -> [Double] {
        [Double(scan.accel.y), -Double(scan.accel.x), Double(scan.accel.z)].map { $0 * scale / 9.80665 }
    }

    static func expectedGyro(_ scan: BMI160Scan) -> [Double] {
        [Double(scan.gyro.y), -Double(scan.gyro.x), Double(scan.gyro.z)].map { $0 * 0.001065 }
    }

    static func close(_ a: Double, _ b: Double) -> Bool { abs(a - b) <= 1e-9 * max(1, abs(b)) }

    /// Checks a fetch against scans: exact kernel timestamps on the SR timeline, values in units.
    static func check(
        _ fetched: Fetched, against scans: [BMI160Scan], anchor: Int64,
        expected: (BMI160Scan) -> [Double], log: @autoclosure () -> String
    ) {
        #expect(fetched.sensorTimes == scans.map { anchor + $0.timestamp }, "sensor times are not the kernel's\n\(log())")
        guard fetched.count == scans.count, fetched.columns.count >= 3 else { return }
        var wrong: [String] = []
        for (index, scan) in scans.enumerated() {
            let values = (0..<3).map { fetched.columns[$0][index] }
            if !zip(values, expected(scan)).allSatisfy(close) { wrong.append("#\(index): \(values) ≠ \(expected(scan))") }
        }
        #expect(wrong.isEmpty, "values differ:\n\(wrong.prefix(5).joined(separator: "\n"))")
    }

    // MARK: Static scenario: umockdev-run with a script

    /// Scans with known values and kernel timestamps, a 0.5 s hole in the middle (a kernel FIFO
    /// overflow as the reader sees it), fed by `umockdev-run -s`. The fixture's BMI160 has no
    /// gyroscope rate: the hole is the chip's, so both streams get a record over it. The app's stake is made in a
    /// first run (no data), so when the daemon restarts it records at once and every scan lies
    /// after the app's first `startRecording`.
    @Test(.timeLimit(.minutes(3))) func recordsKernelTimestampsAndValuesInSensorKitUnits() throws {
        let run = try IIODaemonRun()
        defer { run.stop() }
        try run.stakeInAFirstRun([.accelerometer, .rotationRate], device: Self.bmi160)

        let start = boottimeNow()
        let before = BMI160Scan.stream(count: 50, start: start, period: 10 * Self.ms)
        let after = BMI160Scan.stream(count: 50, start: start + 990 * Self.ms, period: 10 * Self.ms, seed: 50)
        let scans = before + after
        let script = try run.write("stream.script", BMI160Scan.script(scans, perLine: 5, delay: 40))
        try run.startUnderUmockdevRun(device: Self.bmi160, scripts: ["/dev/iio:device0": script])

        let app = try run.connect()
        let (_, anchor) = try run.timeline(app)
        let from = anchor + start - 1_000 * Self.ms
        var accel = Fetched()
        let complete = try IIODaemonRun.eventually(15) {
            let now = try run.timeline(app).now
            accel = run.fetch(app, Self.accelerometer.rawValue, from: from, to: now).batch
            return accel.count >= scans.count
        }
        #expect(complete, "got \(accel.count) of \(scans.count) accelerometer samples\n\(run.log)")
        Self.check(accel, against: scans, anchor: anchor, expected: { Self.expectedAccel($0) }, log: run.log)

        // The two streams' last batches are committed one after the other.
        var gyro = Fetched()
        _ = try IIODaemonRun.eventually(5) {
            gyro = run.fetch(app, SRSensor.rotationRate.rawValue, from: from, to: try run.timeline(app).now).batch
            return gyro.count >= scans.count
        }
        Self.check(gyro, against: scans, anchor: anchor, expected: Self.expectedGyro, log: run.log)
        let now = try run.timeline(app).now

        // The hole is a systemInitiated deletion record from the last scan before it to the first
        // after, for each stream the scans feed.
        for tombstones in [Self.accelTombstones, SRSensor.rotationRate.rawValue + ".tombstones"] {
            let records = run.fetch(app, tombstones, from: from, to: now).batch
            let holes = (0..<records.count).filter { records.columns[1][$0] == Double(SRDeletionReason.systemInitiated.rawValue) }
            #expect(holes.count == 1, "\(tombstones): \(records)\n\(run.log)")
            if let hole = holes.first {
                #expect(records.sensorTimes[hole] == anchor + before.last!.timestamp)
                #expect(Int64(records.columns[0][hole]) == anchor + after.first!.timestamp)
            }
        }
        #expect(
            run.log.contains("kernel FIFO overflow: no samples for 500.0 ms at a 10.0 ms period, about 49 lost"), "\(run.log)")

        // `sensorkitctl devices` material: chip, channels, rate, matrix, location, capture.
        let sources = try run.devices()
        let source = try #require(sources.first { $0.sensor == Self.accelerometer.rawValue }, "\(sources)")
        #expect(source.recording && source.state == "recording")
        #expect(source.source == "iio:bmi160@/sys/devices/platform/iio-test")
        #expect(source.details["chip"] == "bmi160")
        #expect(source.details["capture"] == "buffered")
        #expect(source.details["channels"] == "in_accel_x, in_accel_y, in_accel_z")
        #expect(source.details["samplingFrequency"] == "100 Hz")
        #expect(source.details["mountMatrix"] == "0, 1, 0; -1, 0, 0; 0, 0, 1")
        #expect(source.details["mountMatrixSource"] == "udev ACCEL_MOUNT_MATRIX")
        #expect(source.details["location"] == "display")
        #expect(source.details["timestamps"] == "kernel in_timestamp, boottime")
        #expect(source.details["scanBytes"] == "24")
        #expect(source.details["trigger"] == "bmi160-trigger")
    }

    /// A killed daemon loses none of the samples it held (docs/store.md, "Staged samples"): the
    /// study profile holds a chip's batches for 5 s, mirrored into the state directory as they are
    /// read, and the next start takes them in — exactly once, with the crash's deletion record
    /// after them. Without the mirror the 2.5 s held at the kill would be gone.
    @Test(.timeLimit(.minutes(3))) func aKilledDaemonKeepsTheSamplesItHeld() throws {
        let run = try IIODaemonRun(profile: "study", extraConfig: "[store]\nhold = 0\n")
        defer { run.stop() }
        try run.stakeInAFirstRun([.accelerometer], device: Self.bmi160)

        // 3 s of scans, then silence: after the first half-second batch, everything is held.
        let start = boottimeNow()
        let scans = BMI160Scan.stream(count: 300, start: start, period: 10 * Self.ms)
        let script = try run.write("stream.script", BMI160Scan.script(scans, perLine: 10, delay: 100))
        try run.startUnderUmockdevRun(device: Self.bmi160, scripts: ["/dev/iio:device0": script])
        let staged = run.folder + "/state/store.staged."
        func stagedCount() -> Int64 {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: run.folder + "/state")) ?? []
            return names.filter { (run.folder + "/state/" + $0).hasPrefix(staged) }.compactMap { name -> Int64? in
                guard let data = FileManager.default.contents(atPath: run.folder + "/state/" + name), data.count >= 56 else {
                    return nil
                }
                return data.withUnsafeBytes { Int64(littleEndian: $0.loadUnaligned(fromByteOffset: 48, as: Int64.self)) }
            }.max() ?? 0
        }
        #expect(IIODaemonRun.eventually(15) { stagedCount() >= 250 }, "staged \(stagedCount())\n\(run.log)")
        let held = stagedCount()
        let daemons = try CommandOutput.run(["/usr/bin/pgrep", "-f", "^\(IIODaemonRun.daemonBinary) --socket \(run.socket)"])
        let pid = try #require(Int32(daemons.output.split(separator: "\n").first ?? ""), "no daemon: \(daemons)")
        #expect(kill(pid, SIGKILL) == 0)
        run.stopDaemon()
        // The scripted stamps run close to real time: a restart within a sample period of the
        // last one would leave nothing between them to record.
        usleep(1_000_000)

        try run.startUnderUmockdevRun(device: Self.bmi160)
        let app = try run.connect()
        let (now, anchor) = try run.timeline(app)
        let from = anchor + start - 1_000 * Self.ms
        let accel = run.fetch(app, Self.accelerometer.rawValue, from: from, to: now).batch
        #expect(
            held >= 250 && accel.count == scans.count,
            "\(accel.count) of \(scans.count) samples, \(held) of them held at the kill\n\(run.log)")
        #expect(accel.sensorTimes.elementsEqual(scans.lazy.map { anchor + $0.timestamp }), "each scan once, in order")
        let records = run.fetch(app, Self.accelTombstones, from: from, to: now).batch
        #expect(
            records.count == 1 && (records.sensorTimes.first ?? 0) > anchor + scans.last!.timestamp,
            "records \(records.sensorTimes); last scan \(anchor + scans.last!.timestamp), now \(now)\n\(run.log)")
    }

    // MARK: Dynamic scenarios: the testbed controller

    /// The daemon under the testbed with the BMI160 added and an app recording its accelerometer
    /// (checked in `sensorkitctl devices`): the app's connection and its timeline's boot anchor.
    static func recordAccelerometerUnderTestbed(_ run: IIODaemonRun) throws -> (app: ReaderConnection, anchor: Int64) {
        try run.startUnderTestbed()
        try run.command("add", bmi160)
        let app = try run.connect()
        try run.startRecording(app, .accelerometer)
        #expect(
            try IIODaemonRun.eventually { try run.devices().contains { $0.sensor == accelerometer.rawValue && $0.bufferArmed } },
            "\(run.log)")
        return (app, try run.timeline(app).anchor)
    }

    /// Records, unplugs the chip, plugs it back (the kernel numbers it iio:device1 this time) and
    /// records again: the same stream identity, a deletion record over the absence, and recording
    /// back within a second of the re-add.
    @Test(.timeLimit(.minutes(3))) func hotplugRemoveAndReAddDuringRecording() throws {
        let run = try IIODaemonRun()
        defer { run.stop() }
        let (app, anchor) = try Self.recordAccelerometerUnderTestbed(run)

        let t1 = boottimeNow()
        let part1 = BMI160Scan.stream(count: 40, start: t1, period: 10 * Self.ms)
        try run.command(
            "script", "/dev/iio:device0", try run.write("part1.script", BMI160Scan.script(part1, perLine: 4, delay: 40)))
        var fetched = Fetched()
        #expect(
            try IIODaemonRun.eventually {
                fetched = run.fetch(app, Self.accelerometer.rawValue, from: anchor + t1 - 1, to: try run.timeline(app).now).batch
                return fetched.count >= part1.count
            }, "part 1: \(fetched.count) of \(part1.count)\n\(run.log)")

        let removedAt = boottimeNow()
        try run.command("remove", Self.syspath0)
        #expect(
            try IIODaemonRun.eventually { try !run.devices().contains { $0.sensor == Self.accelerometer.rawValue } }, "\(run.log)"
        )
        usleep(300_000)

        // umockdev 0.17 cannot re-create a removed node name, and real kernels renumber anyway.
        let renumbered = try String(contentsOfFile: Self.bmi160, encoding: .utf8)
            .replacingOccurrences(of: "iio:device0", with: "iio:device1").replacingOccurrences(of: "dev=244:0", with: "dev=244:1")
            .replacingOccurrences(of: "trigger0", with: "trigger1")
        let addedAt = boottimeNow()
        try run.command("add", try run.write("replugged.umockdev", Array(renumbered.utf8)))
        #expect(
            try IIODaemonRun.eventually {
                try run.devices().contains {
                    $0.sensor == Self.accelerometer.rawValue && $0.bufferArmed && $0.details["iioDevice"] == "iio:device1"
                }
            }, "\(run.log)")
        let t2 = boottimeNow()
        let part2 = BMI160Scan.stream(count: 40, start: t2, period: 10 * Self.ms, seed: 40)
        try run.command(
            "script", "/dev/iio:device1", try run.write("part2.script", BMI160Scan.script(part2, perLine: 4, delay: 40)))
        #expect(
            try IIODaemonRun.eventually {
                fetched = run.fetch(app, Self.accelerometer.rawValue, from: anchor + t1 - 1, to: try run.timeline(app).now).batch
                return fetched.count >= part1.count + part2.count
            }, "part 2: \(fetched.count - part1.count) of \(part2.count)\n\(run.log)")
        Self.check(fetched, against: part1 + part2, anchor: anchor, expected: { Self.expectedAccel($0) }, log: run.log)

        // Recording resumed within a second of the re-add: the first scan after it was received in time.
        if fetched.count == part1.count + part2.count {
            let resumed = fetched.writeTimes[part1.count] - (anchor + addedAt)
            #expect(resumed < 1_000 * Self.ms, "first sample after the re-add received \(resumed / Self.ms) ms later")
        }

        // A systemInitiated deletion record covers the absence: from the removal to the re-add.
        let now = try run.timeline(app).now
        let records = run.fetch(app, Self.accelTombstones, from: anchor + t1 - 1, to: now).batch
        let absent = (0..<records.count).filter { records.columns[1][$0] == Double(SRDeletionReason.systemInitiated.rawValue) }
        #expect(absent.count == 1, "deletion records: \(records)\n\(run.log)")
        if let record = absent.first {
            let (start, end) = (records.sensorTimes[record], Int64(records.columns[0][record]))
            #expect(
                start >= anchor + removedAt && start <= anchor + addedAt,
                "record starts \((start - anchor - removedAt) / Self.ms) ms after the removal")
            #expect(
                end >= anchor + addedAt && end <= anchor + t2,
                "record ends \((end - anchor - addedAt) / Self.ms) ms after the re-add")
            #expect(
                start > anchor + part1.last!.timestamp && end < anchor + part2.first!.timestamp, "the record overlaps samples")
        }
        #expect(try run.command("daemon-alive") == "1")
    }

    /// Someone sets the accelerometer to 400 Hz and switches its range (scale doubles), then udev
    /// says `change`: the daemon re-reads rate and scale, the stream is registered anew with them,
    /// and scans after the change are converted with the new scale.
    @Test(.timeLimit(.minutes(3))) func samplingRateAndRangeChange() throws {
        let run = try IIODaemonRun()
        defer { run.stop() }
        let (app, anchor) = try Self.recordAccelerometerUnderTestbed(run)

        // umockdev 0.17 feeds one script per node: the fast part follows the slow one after a
        // 4 s pause, in which the slow part's last batch reaches the store (the capture holds a
        // quiet chip's samples up to 1.5 s) and the test makes the change (a few milliseconds).
        let t1 = boottimeNow()
        let slow = BMI160Scan.stream(count: 30, start: t1, period: 10 * Self.ms)
        let fast = BMI160Scan.stream(count: 120, start: t1 + 4_300 * Self.ms, period: 2_500_000, seed: 30)
        let script = BMI160Scan.script([
            .init(scans: slow, perLine: 5, delay: 50),
            .init(scans: fast, perLine: 10, firstDelay: 4_000, delay: 25),
        ])
        try run.command("script", "/dev/iio:device0", try run.write("stream.script", script))
        var fetched = Fetched()
        #expect(
            try IIODaemonRun.eventually {
                fetched = run.fetch(app, Self.accelerometer.rawValue, from: anchor + t1 - 1, to: try run.timeline(app).now).batch
                return fetched.count >= slow.count
            }, "before the change: \(fetched.count) of \(slow.count)\n\(run.log)")

        try run.command("set", Self.syspath0, "in_accel_sampling_frequency", "400.000000")
        try run.command("set", Self.syspath0, "in_accel_scale", "0.001197")
        try run.command("uevent", Self.syspath0, "change")
        #expect(
            try IIODaemonRun.eventually {
                try run.devices().contains {
                    $0.sensor == Self.accelerometer.rawValue && $0.bufferArmed && $0.details["samplingFrequency"] == "400 Hz"
                }
            }, "\(run.log)")
        #expect(boottimeNow() < t1 + 3_900 * Self.ms, "the change took too long for the script's pause")
        #expect(run.log.contains("samplingFrequency 100 Hz → 400 Hz"), "\(run.log)")
        #expect(run.log.contains("x scale 0.000598 → 0.001197"), "\(run.log)")

        #expect(
            try IIODaemonRun.eventually {
                fetched = run.fetch(app, Self.accelerometer.rawValue, from: anchor + t1 - 1, to: try run.timeline(app).now).batch
                return fetched.count >= slow.count + fast.count
            }, "after the change: \(fetched.count - slow.count) of \(fast.count)\n\(run.log)")
        #expect(fetched.sensorTimes == (slow + fast).map { anchor + $0.timestamp })
        if fetched.count == slow.count + fast.count {
            var before = fetched, after = fetched
            before.sensorTimes = Array(fetched.sensorTimes.prefix(slow.count))
            before.columns = fetched.columns.map { Array($0.prefix(slow.count)) }
            after.sensorTimes = Array(fetched.sensorTimes.suffix(fast.count))
            after.columns = fetched.columns.map { Array($0.suffix(fast.count)) }
            Self.check(before, against: slow, anchor: anchor, expected: { Self.expectedAccel($0) }, log: run.log)
            Self.check(after, against: fast, anchor: anchor, expected: { Self.expectedAccel($0, scale: 0.001197) }, log: run.log)
        }
        // No FIFO overflow was imagined at 400 Hz; the only deletion record is the short
        // re-registration, between the two parts.
        let records = run.fetch(app, Self.accelTombstones, from: anchor + t1 - 1, to: try run.timeline(app).now).batch
        for index in 0..<records.count {
            #expect(
                records.sensorTimes[index] > anchor + slow.last!.timestamp
                    && Int64(records.columns[0][index]) < anchor + fast.first!.timestamp, "record \(index) overlaps samples")
        }
        #expect(!run.log.contains("FIFO overflow"), "\(run.log)")
    }

    // MARK: A remote rig

    /// A lab rig's `iiod` (Debian `iiod`, libiio 0.24) serving the mocked BMI160 on loopback, and
    /// the daemon recording it through a libiio `ip:` context like a local device. The rig's
    /// clock is not ours: sensor times keep the rig's spacing exactly and are fixed to local
    /// boottime at the first refill, so none may lie after the moment it was received.
    @Test(.timeLimit(.minutes(3)), .needs(.tools([("/usr/sbin/iiod", "iiod")])))
    func recordsARemoteRigServedByIIOD() throws {
        let port = try freeTCPPort()
        let uri = "ip:127.0.0.1:\(port)"
        let run = try IIODaemonRun(extraConfig: "[iio]\nremote = \(uri)\n")
        defer { run.stop() }
        try run.startPlain()  // the stake first, while the rig is still off
        let first = try run.connect()
        try run.startRecording(first, .accelerometer)
        first.close()
        run.stopDaemon()

        let start = boottimeNow()
        // Delivered as a rig would: each line of 10 scans (100 ms) no earlier than its last scan's
        // timestamp — the script starts 300 ms after `start`, its first line ends at start + 300 ms.
        let scans = BMI160Scan.stream(count: 100, start: start + 210 * Self.ms, period: 10 * Self.ms)
        let script = try run.write("rig.script", BMI160Scan.script(scans, perLine: 10, firstDelay: 300, delay: 100))
        try run.startHelper([
            "/usr/bin/timeout", "--kill-after=3", "60", "/usr/bin/umockdev-run", "-d", Self.bmi160,
            "-s", "/dev/iio:device0=\(script)", "--", "/usr/sbin/iiod", "-p", String(port),
        ])
        #expect(IIODaemonRun.eventually { acceptsConnections(port: port) }, "iiod did not listen\n\(run.log)")
        try run.startPlain()
        let app = try run.connect()
        let (_, anchor) = try run.timeline(app)
        var fetched = Fetched()
        #expect(
            try IIODaemonRun.eventually(15) {
                fetched =
                    run.fetch(
                        app, Self.accelerometer.rawValue, from: anchor + start - 60_000 * Self.ms, to: try run.timeline(app).now
                    ).batch
                return fetched.count >= scans.count
            },
            "\(fetched.count) of \(scans.count); got scans \(fetched.columns.first.map { $0.map { Int(($0 * 9.80665 / 0.000598).rounded()) - 12 } } ?? [])\n\(run.log)"
        )
        // No udev on the rig's side: the sysfs in_mount_matrix (identity) applies.
        let expected = { (scan: BMI160Scan) in
            [Double(scan.accel.x), Double(scan.accel.y), Double(scan.accel.z)].map { $0 * 0.000598 / 9.80665 }
        }
        // Exactly the scans the rig sent: more would mean duplicates (and skip the checks below).
        #expect(fetched.count == scans.count, "\(fetched.count) samples fetched of \(scans.count) scans sent")
        if fetched.count == scans.count {
            let steps = zip(fetched.sensorTimes.dropFirst(), fetched.sensorTimes).map { $0 - $1 }
            #expect(steps.allSatisfy { $0 == 10 * Self.ms }, "the rig's spacing is kept exactly")
            // Stamped from the least-delayed early refill: later deliveries are no earlier than it, give or
            // take the scheduling jitter of umockdev's script runner.
            let early = zip(fetched.sensorTimes, fetched.writeTimes).map { $0 - $1 }.max() ?? 0
            #expect(early <= 20 * Self.ms, "a sample is stamped \(early / Self.ms) ms after it arrived")
            var wrong = 0
            for (index, scan) in scans.enumerated()
            where !zip((0..<3).map { fetched.columns[$0][index] }, expected(scan)).allSatisfy(Self.close) {
                wrong += 1
            }
            #expect(wrong == 0)
        }
        let source = try #require(try run.devices().first { $0.sensor == Self.accelerometer.rawValue })
        #expect(source.source == "iio:bmi160@\(uri)/iio:device0")
        #expect(source.details["remote"] == uri && source.details["capture"] == "buffered")
        #expect(source.details["mountMatrixSource"] == "sysfs in_mount_matrix")
        #expect(source.details["timestamps"]?.hasPrefix("remote kernel in_timestamp") == true)
    }

    // MARK: Garbage

    /// `garbage.umockdev`: iio:device0 has a non-numeric scale (`0,000598`) and is skipped;
    /// iio:device1 lacks `scan_elements/in_accel_y_index` and iio:device2 has an unknown `_type`
    /// (`le:q16/16>>0`): both lose their buffer and are polled; iio:device3 is ignored by the
    /// configuration. One clear line each, and the daemon records the polled accelerometer.
    @Test(.timeLimit(.minutes(3))) func garbageInSysfsSkipsOrDegradesWithOneLineEach() throws {
        let run = try IIODaemonRun(extraConfig: "[iio]\nignore = iio:device3\n")
        defer { run.stop() }
        try run.startUnderUmockdevRun(device: IIODaemonRun.fixtures + "/garbage.umockdev")
        let app = try run.connect()
        #expect(try IIODaemonRun.eventually { try run.devices().count == 2 }, "\((try? run.devices()) ?? [])\n\(run.log)")
        let lines = run.log.split(separator: "\n")
        func count(_ text: String) -> Int { lines.filter { $0.contains(text) }.count }
        #expect(count("iio:device0: in_accel_scale: '0,000598': not a decimal number, skipping device") == 1, "\(run.log)")
        #expect(
            count("iio:device1: scan_elements/in_accel_y_index: missing; not using the buffer of lsm6dsl_accel") == 1,
            "\(run.log)")
        #expect(count("iio:device2: scan_elements/in_illuminance_type: 'le:q16/16>>0'") == 1, "\(run.log)")
        #expect(count("iio:device3") == 1 && count("iio:device3: ignored by the configuration") == 1, "\(run.log)")

        let sources = try run.devices()
        let accel = try #require(sources.first { $0.sensor == Self.accelerometer.rawValue }, "\(sources)")
        #expect(accel.details["chip"] == "lsm6dsl_accel" && accel.details["capture"] == "polled")
        #expect(accel.details["mountMatrixSource"] == "sysfs mount_matrix")
        let light = try #require(sources.first { $0.sensor == SRSensor.ambientLightSensor.rawValue }, "\(sources)")
        #expect(light.details["chip"] == "tsl2591" && light.details["capture"] == "polled")
        #expect(light.details["samplingFrequency"] == "polled every 100.0 ms")

        // Degraded, not dead: the polled accelerometer records its sysfs values.
        let startedAt = try run.timeline(app).now
        try run.startRecording(app, .accelerometer)
        var fetched = Fetched()
        #expect(
            try IIODaemonRun.eventually {
                fetched = run.fetch(app, Self.accelerometer.rawValue, from: startedAt, to: try run.timeline(app).now).batch
                return fetched.count >= 3
            }, "\(run.log)")
        let expected = [-16.0, 8.0, -16380.0].map { $0 * 0.000598 / 9.80665 }
        for index in 0..<fetched.count {
            #expect(zip((0..<3).map { fetched.columns[$0][index] }, expected).allSatisfy(Self.close))
        }
        #expect(app.call(.status).error == nil)
    }
}
