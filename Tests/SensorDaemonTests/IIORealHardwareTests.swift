import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorTestKit
import Testing

/// The real `sensorkitd` under umockdev with devices shaped like a real tablet's
/// (`Tests/Fixtures/iio/tablet.umockdev`): two mxc4005 accelerometers on one I2C node whose
/// triggered buffer has no trigger (the driver registers one only with an interrupt line, so the
/// kernel refuses `buffer/enable`; the fixture's `enable` is a dangling link, which refuses the
/// daemon's write the same way), and an Intel ISH HID `accel_3d` that starts at 0 Hz, lists no
/// `_available` rates and has no `buffer/length`. docs/iio.md §2, §4.
@Suite(.serialized, .needs(.umockdev))
struct IIORealHardwareTests {
    static let tablet = IIODaemonRun.fixtures + "/tablet.umockdev"
    static let mxcParent = "/sys/devices/pci0000:00/0000:00:15.1/i2c_designware.1/i2c-1/i2c-MXC6655:00"
    static let hub =
        "/sys/devices/pci0000:00/0000:00:13.0/{33AECD58-B679-4E54-9BD9-A04D34F0C226}/001F:8087:0AC2.0001/HID-SENSOR-200073.3.auto"
    static let accelerometer = SRSensor.accelerometer.rawValue
    static let ms: Int64 = 1_000_000

    /// A HID sensor hub accelerometer scan: x, y, z as `le:s32/32`, 4 bytes of padding, `le:s64`
    /// timestamp (24 bytes).
    struct HIDAccelScan {
        var x: Int32, y: Int32, z: Int32
        var timestamp: Int64

        var bytes: [UInt8] {
            var out: [UInt8] = []
            for value in [x, y, z] {
                for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: value >> Int32(shift))) }
            }
            out += [0xA5, 0xA5, 0xA5, 0xA5]
            for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: timestamp >> Int64(shift))) }
            return out
        }
    }

    /// The daemon under the testbed with the tablet's devices, an app recording the accelerometer.
    static func start(_ run: IIODaemonRun) throws -> (app: ReaderConnection, anchor: Int64) {
        try run.startUnderTestbed()
        try run.command("add", tablet)
        let app = try run.connect()
        try run.startRecording(app, .accelerometer)
        return (app, try run.timeline(app).anchor)
    }

    static func source(_ sources: [WireSource], _ id: String) -> WireSource? {
        sources.first { $0.sensor == accelerometer && $0.source == id }
    }

    /// Items: a buffer that cannot be enabled is polled instead (one line, shown in the listing,
    /// samples recorded); two devices of one name under one parent are two sources.
    @Test(.timeLimit(.minutes(3))) func aBufferThatCannotBeEnabledIsPolledAndTwinsKeepTheirOwnIdentity() throws {
        let run = try IIODaemonRun()
        defer { run.stop() }
        let (app, anchor) = try Self.start(run)
        let first = "iio:mxc4005@\(Self.mxcParent)", second = "iio:mxc4005#1@\(Self.mxcParent)"
        var sources: [WireSource] = []
        #expect(
            try IIODaemonRun.eventually {
                sources = try run.devices()
                return [first, second].allSatisfy {
                    Self.source(sources, $0)?.details["capture"] == "polled" && Self.source(sources, $0)?.recording == true
                }
            }, "\(sources)\n\(run.log)")
        for id in [first, second] {
            let listed = Self.source(sources, id)
            #expect(
                listed?.details["buffer"]?.hasPrefix("could not be enabled: iio:device") == true, "\(String(describing: listed))")
            #expect(listed?.details["timestamps"] == "read time (sysfs polled)")
            #expect(
                listed?.state?.hasPrefix("recording, degraded: polling sysfs: the buffer could not be enabled") == true,
                "\(String(describing: listed?.state))")
        }
        #expect(
            Set(sources.filter { $0.sensor == Self.accelerometer }.map(\.details["iioDevice"])) == [
                "iio:device0", "iio:device1", "iio:device2",
            ])
        let lines = run.log.split(separator: "\n")
        for device in ["iio:device0", "iio:device1"] {
            #expect(
                lines.filter {
                    $0.contains("\(device) (mxc4005): cannot start buffered capture")
                        && $0.contains("polling its sysfs values instead")
                }.count == 1,
                "\(run.log)")
        }
        #expect(!run.log.contains("not recording it"), "\(run.log)")
        // The second chip's hwdb quirk repeats a row: applied as given, one line naming it.
        #expect(
            lines.filter {
                $0.contains("iio:device1: udev ACCEL_MOUNT_MATRIX '1, 0, 0; 1, 0, 0; 0, 0, 1' is singular (determinant 0)")
            }.count == 1,
            "\(run.log)")
        #expect(Self.source(sources, second)?.details["mountMatrix"] == "1, 0, 0; 1, 0, 0; 0, 0, 1")

        // Both chips' `_raw` values are recorded (identity mount matrix, m/s² → g).
        let g = 0.009582 / 9.80665
        var fetched = Fetched()
        #expect(
            try IIODaemonRun.eventually {
                fetched = run.fetch(app, Self.accelerometer, from: anchor, to: try run.timeline(app).now).batch
                let xs = fetched.columns.first ?? []
                return xs.filter { abs($0 - 10 * g) < 1e-9 }.count >= 3 && xs.filter { abs($0 + 10 * g) < 1e-9 }.count >= 3
            }, "\(fetched.columns.first ?? [])\n\(run.log)")
    }

    /// Items: a HID sensor at 0 Hz with no list of rates gets 10 Hz written and records; a missing
    /// `buffer/length` is a default kept with one line; the listing says "waiting for hardware"
    /// until the first scan and only then recording.
    @Test(.timeLimit(.minutes(3))) func aHIDSensorAtZeroHertzWithoutBufferLengthIsWaitingThenRecords() throws {
        let run = try IIODaemonRun()
        defer { run.stop() }
        let (app, anchor) = try Self.start(run)
        let id = "iio:accel_3d@\(Self.hub)"
        var sources: [WireSource] = []
        #expect(
            try IIODaemonRun.eventually {
                sources = try run.devices()
                return Self.source(sources, id)?.state == "waiting for hardware: buffer enabled, no scan yet"
            }, "\(sources)\n\(run.log)")
        #expect(Self.source(sources, id)?.recording == false)
        #expect(Self.source(sources, id)?.details["samplingFrequency"] == "10 Hz (raised from 0 Hz)")
        #expect(try run.command("get", Self.hub + "/iio:device2", "in_accel_sampling_frequency") == "10")
        #expect(try run.command("get", Self.hub + "/iio:device2", "buffer/enable") == "1")
        #expect(
            run.log.contains("iio:device2: buffer/length: missing; the buffer keeps the kernel's default length"), "\(run.log)")
        #expect(
            run.log.contains("in_accel_sampling_frequency is 0 Hz; raising it to 10 Hz (the device lists no choices)"),
            "\(run.log)")

        let t0 = boottimeNow()
        let scans = (0..<12).map { i in
            HIDAccelScan(x: 100 + Int32(i), y: -200, z: 9_807 - Int32(i), timestamp: t0 + Int64(i) * 100 * Self.ms)
        }
        let lines = stride(from: 0, to: scans.count, by: 2).map { (delay: 200, bytes: scans[$0..<($0 + 2)].flatMap(\.bytes)) }
        try run.command("script", "/dev/iio:device2", try run.write("hid.script", BMI160Scan.script(lines: lines)))
        let wanted = Set(scans.map { anchor + $0.timestamp })
        var fetched = Fetched()
        #expect(
            try IIODaemonRun.eventually {
                fetched = run.fetch(app, Self.accelerometer, from: anchor + t0 - 1, to: try run.timeline(app).now).batch
                return fetched.sensorTimes.filter(wanted.contains).count == scans.count
            }, "\(fetched.sensorTimes.filter(wanted.contains).count) of \(scans.count)\n\(run.log)")
        for scan in scans {
            guard let index = fetched.sensorTimes.firstIndex(of: anchor + scan.timestamp), fetched.columns.count >= 3 else {
                continue
            }
            let values = (0..<3).map { fetched.columns[$0][index] }
            let expected = [Double(scan.x), Double(scan.y), Double(scan.z)].map { $0 * 0.009806650 / 9.80665 }
            #expect(zip(values, expected).allSatisfy { abs($0 - $1) < 1e-9 }, "\(values) ≠ \(expected)")
        }
        #expect(try IIODaemonRun.eventually { Self.source(try run.devices(), id)?.state == "recording" }, "\(run.log)")
    }

    /// `[sensor accelerometer] rate = 25` is written to the HID sensor (no choices: as is) and
    /// sets the polling interval of the chips that are polled.
    @Test(.timeLimit(.minutes(3))) func aConfiguredRateIsWrittenAndPolled() throws {
        let run = try IIODaemonRun(extraConfig: "[sensor accelerometer]\nrate = 25")
        defer { run.stop() }
        _ = try Self.start(run)
        var sources: [WireSource] = []
        #expect(
            try IIODaemonRun.eventually {
                sources = try run.devices()
                return Self.source(sources, "iio:mxc4005@\(Self.mxcParent)")?.details["capture"] == "polled"
                    && Self.source(sources, "iio:accel_3d@\(Self.hub)")?.state?.hasPrefix("waiting") == true
            }, "\(sources)\n\(run.log)")
        // Written by the capture's enable sequence, which may still be running when the status
        // already says "waiting" (CI saw the read come first on a loaded machine).
        var written = ""
        #expect(
            try IIODaemonRun.eventually {
                written = try run.command("get", Self.hub + "/iio:device2", "in_accel_sampling_frequency")
                return written == "25"
            }, "in_accel_sampling_frequency is \(written)\n\(run.log)")
        #expect(Self.source(sources, "iio:accel_3d@\(Self.hub)")?.details["samplingFrequency"] == "25 Hz (configured; was 0 Hz)")
        #expect(Self.source(sources, "iio:mxc4005@\(Self.mxcParent)")?.details["samplingFrequency"] == "polled every 40.0 ms")
    }

    /// An older HID sensor hub light sensor (`als` with only `in_intensity_both`, 0 Hz, no
    /// choices) is recorded: lux = raw × `in_intensity_scale`, and the stream says where lux came from.
    @Test(.timeLimit(.minutes(3))) func anOlderHIDLightSensorRecordsLuxFromIntensityBoth() throws {
        let run = try IIODaemonRun()
        defer { run.stop() }
        let (app, anchor) = try Self.start(run)
        try run.startRecording(app, .ambientLightSensor)
        let light = SRSensor.ambientLightSensor.rawValue
        var sources: [WireSource] = []
        #expect(
            try IIODaemonRun.eventually {
                sources = try run.devices()
                return sources.contains { $0.sensor == light && $0.bufferArmed }
            }, "\(sources)\n\(run.log)")
        let listed = sources.first { $0.sensor == light }
        #expect(listed?.source == "iio:als@\(Self.hub.replacingOccurrences(of: "200073.3", with: "200041.4"))")
        #expect(
            listed?.details["lux"]?.hasPrefix("in_intensity_both: a HID sensor hub reports its illuminance usage (lux)") == true,
            "\(String(describing: listed))")
        #expect(listed?.details["channels"] == "in_intensity_both")

        let t0 = boottimeNow()
        let raw = (0..<6).map { Int32(2_000 + 37 * $0) }
        let stamps = (0..<6).map { t0 + Int64($0) * 100 * Self.ms }
        func scan(_ i: Int) -> [UInt8] { Self.le(raw[i]) + [0, 0, 0, 0] + Self.le(stamps[i]) }
        let lines = stride(from: 0, to: 6, by: 2).map { (delay: 200, bytes: scan($0) + scan($0 + 1)) }
        try run.command("script", "/dev/iio:device3", try run.write("als.script", BMI160Scan.script(lines: lines)))
        var fetched = Fetched()
        #expect(
            try IIODaemonRun.eventually {
                fetched = run.fetch(app, light, from: anchor + t0 - 1, to: try run.timeline(app).now).batch
                return fetched.count >= raw.count
            }, "\(fetched.count) of \(raw.count)\n\(run.log)")
        #expect(fetched.sensorTimes == stamps.map { anchor + $0 })
        if fetched.count == raw.count, let lux = fetched.columns.first {
            #expect(zip(lux, raw).allSatisfy { abs($0 - Double($1) * 0.1) < 1e-9 }, "\(lux)")
        }
    }

    // MARK: Buffered light and pressure

    /// Little-endian bytes of `value`'s low `count` bytes.
    static func le<T: FixedWidthInteger>(_ value: T, _ count: Int = MemoryLayout<T>.size) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }

    /// An ACPI light sensor (acpi-als: `le:s32/32` lux + timestamp, 16 bytes, its own trigger) and
    /// an LPS22HB barometer (`le:u24/32` pressure, `le:s16/16` temperature, timestamp: 16 bytes)
    /// recorded through their buffers end to end: kernel timestamps, lux, kPa and °C exact.
    @Test(.timeLimit(.minutes(3))) func bufferedLightAndPressureAreRecordedWithKernelTimestamps() throws {
        let run = try IIODaemonRun()
        defer { run.stop() }
        try run.startUnderTestbed()
        try run.command("add", IIODaemonRun.fixtures + "/light-pressure.umockdev")
        let app = try run.connect()
        try run.startRecording(app, .ambientLightSensor)
        try run.startRecording(app, .ambientPressure)
        let anchor = try run.timeline(app).anchor
        var sources: [WireSource] = []
        #expect(
            try IIODaemonRun.eventually {
                sources = try run.devices()
                return [SRSensor.ambientLightSensor, .ambientPressure].allSatisfy { sensor in
                    sources.contains { $0.sensor == sensor.rawValue && $0.bufferArmed && $0.details["capture"] == "buffered" }
                }
            }, "\(sources)\n\(run.log)")

        let t0 = boottimeNow()
        let count = 10
        let lux = (0..<count).map { Int32(300 + 7 * $0) }
        let pressure = (0..<count).map { UInt32(4_145_152 + 100 * $0) }, temperature = (0..<count).map { Int16(2150 + $0) }
        let stamps = (0..<count).map { t0 + Int64($0) * 100 * Self.ms }
        func lines(_ scan: (Int) -> [UInt8]) -> [(delay: Int, bytes: [UInt8])] {
            stride(from: 0, to: count, by: 2).map { (delay: 200, bytes: scan($0) + scan($0 + 1)) }
        }
        let light = lines { Self.le(lux[$0]) + [0, 0, 0, 0] + Self.le(stamps[$0]) }
        let baro = lines { Self.le(pressure[$0], 4) + Self.le(temperature[$0]) + [0, 0] + Self.le(stamps[$0]) }
        try run.command("script", "/dev/iio:device0", try run.write("light.script", BMI160Scan.script(lines: light)))
        try run.command("script", "/dev/iio:device1", try run.write("baro.script", BMI160Scan.script(lines: baro)))

        var fetchedLight = Fetched(), fetchedPressure = Fetched()
        #expect(
            try IIODaemonRun.eventually {
                let now = try run.timeline(app).now
                fetchedLight = run.fetch(app, SRSensor.ambientLightSensor.rawValue, from: anchor + t0 - 1, to: now).batch
                fetchedPressure = run.fetch(app, SRSensor.ambientPressure.rawValue, from: anchor + t0 - 1, to: now).batch
                return fetchedLight.count >= count && fetchedPressure.count >= count
            }, "light \(fetchedLight.count), pressure \(fetchedPressure.count) of \(count)\n\(run.log)")
        let times = stamps.map { anchor + $0 }
        #expect(fetchedLight.sensorTimes == times && fetchedPressure.sensorTimes == times, "\(run.log)")
        guard fetchedLight.count == count, fetchedPressure.count == count,
            fetchedLight.columns.count >= 1, fetchedPressure.columns.count >= 2
        else { return }
        #expect(fetchedLight.columns[0] == lux.map(Double.init))
        for i in 0..<count {
            let kPa = Double(pressure[i]) * 0.000024414, celsius = Double(temperature[i]) * 10 / 1000
            #expect(abs(fetchedPressure.columns[0][i] - kPa) < 1e-9 * kPa, "\(fetchedPressure.columns[0][i]) ≠ \(kPa) kPa")
            #expect(abs(fetchedPressure.columns[1][i] - celsius) < 1e-9, "\(fetchedPressure.columns[1][i]) ≠ \(celsius) °C")
        }
        let listed = try run.devices()
        #expect(listed.first { $0.sensor == SRSensor.ambientLightSensor.rawValue }?.details["scanBytes"] == "16")
        #expect(listed.first { $0.sensor == SRSensor.ambientPressure.rawValue }?.details["scanBytes"] == "16")
        #expect(listed.allSatisfy { $0.state == "recording" }, "\(listed.map { "\($0.sensor): \($0.state ?? "-")" })")
    }
}
