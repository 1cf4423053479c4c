import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import SensorTestKit
import Synchronization

/// The real `sensorkitd` binary under umockdev, for `IIOEndToEndTests` (docs/iio.md §9, §12.8):
/// a fresh folder per test (apps.d with one study app bound to this user, a lab config that
/// pre-grants it the motion sensors, a state directory), the daemon started either by
/// `umockdev-run -d DEVICE -s /dev/iio:device0=SCRIPT` (static scenarios) or by the testbed
/// controller `Tests/Fixtures/iio/testbed.py` under `umockdev-wrapper` (hotplug, attribute
/// changes), always inside `timeout`. Every process runs in `timeout`'s process group, which
/// `stop()` signals and then kills, so nothing survives a test.
final class IIODaemonRun: @unchecked Sendable {
    // @unchecked: the controller pipes are used by one test thread at a time.
    static let app = "org.sensorkit.iio-e2e"
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/iio").path

    /// `sensorkitd` next to the test bundle (`swift build --build-tests` builds both).
    static var daemonBinary: String {
        var folder = (CommandLine.arguments[0] as NSString).deletingLastPathComponent
        if folder.hasSuffix(".xctest/Contents/MacOS") {
            folder = ((folder as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent
        }
        return folder + "/sensorkitd"
    }

    let folder: String
    let socket: String
    let logPath: String
    private var process: ChildProcess?
    private var helpers: [ChildProcess] = []
    private var controllerInput: FileHandle?
    private var controllerOutput: FileHandle?
    private var pending = [UInt8]()

    /// A fresh folder: apps.d/<app> (entitlements, bound to this uid), sensorkitd.conf granting
    /// the app `grants` (the IIO sensors unless told).
    init(
        profile: String = "lab", extraConfig: String = "",
        entitlements: [String] = ["motion-accelerometer", "motion-rotation-rate", "ambient-light-sensor", "ambient-pressure"],
        grants: String = "accelerometer, rotationRate, ambientLightSensor, ambientPressure"
    ) throws {
        signal(SIGPIPE, SIG_IGN)  // a controller that died must fail the test, not kill the runner
        var template = Array("/tmp/skiio-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemError("mkdtemp", errno: errno) }
        folder = String(cString: made)
        socket = folder + "/s.sock"
        logPath = folder + "/daemon.log"
        let appFolder = folder + "/apps.d/" + Self.app
        try FileManager.default.createDirectory(atPath: appFolder, withIntermediateDirectories: true)
        func plist(_ name: String, _ value: [String: Any]) throws {
            let data = try PropertyListSerialization.data(fromPropertyList: value, format: .xml, options: 0)
            try data.write(to: URL(fileURLWithPath: appFolder + "/" + name))
        }
        try plist(
            "Info.plist",
            [
                "NSSensorKitUsageDescription": "IIO end-to-end test",
                "NSSensorKitPrivacyPolicyURL": "https://example.org/privacy",
                "NSSensorKitUsageDetail": [String: Any](),
            ])
        try plist(
            "Study.entitlements",
            ["com.apple.developer.sensorkit.reader.allow": entitlements])
        try plist("Binding.plist", ["Users": [String(getuid())]])
        try """
        profile = \(profile)
        [grant \(Self.app)]
        sensors = \(grants)
        \(extraConfig)
        """.write(toFile: folder + "/sensorkitd.conf", atomically: true, encoding: .utf8)
        guard FileManager.default.createFile(atPath: logPath, contents: nil) else {
            throw SystemError("create \(logPath)", errno: errno)
        }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    var daemonArguments: [String] {
        [
            Self.daemonBinary, "--socket", socket, "--config", folder + "/sensorkitd.conf",
            "--apps-dir", folder + "/apps.d", "--state-dir", folder + "/state",
        ]
    }

    /// Writes `contents` into the run's folder; returns the path.
    @discardableResult
    func write(_ name: String, _ contents: [UInt8]) throws -> String {
        let path = folder + "/" + name
        try Data(contents).write(to: URL(fileURLWithPath: path))
        return path
    }

    // MARK: Starting

    /// `timeout 60 umockdev-run -d DEVICE [-s NODE=SCRIPT]… [OPTIONS…] -- sensorkitd …`
    /// (`options`: e.g. `-i NODE=IOCTLS -e NODE=EVENTS` for an evdev device).
    /// `environment` e.g. a private bus as the daemon's system bus.
    func startUnderUmockdevRun(
        device: String, scripts: [String: String] = [:], options: [String] = [], environment: [String: String] = [:]
    ) throws {
        let env = environment.isEmpty ? [] : ["/usr/bin/env"] + environment.sorted(by: { $0.key < $1.key }).map { "\($0)=\($1)" }
        var arguments = ["--kill-after=3", "60"] + env + ["/usr/bin/umockdev-run", "-d", device]
        for (node, script) in scripts.sorted(by: { $0.key < $1.key }) { arguments += ["-s", "\(node)=\(script)"] }
        arguments += options
        try launch(arguments + ["--"] + daemonArguments, controlled: false)
    }

    /// `timeout 60 [env NAME=VALUE…] sensorkitd …` without umockdev (remote rigs only, or no IIO
    /// at all); `environment` e.g. a private bus as the daemon's system bus.
    func startPlain(environment: [String: String] = [:]) throws {
        let env = environment.isEmpty ? [] : ["/usr/bin/env"] + environment.sorted(by: { $0.key < $1.key }).map { "\($0)=\($1)" }
        try launch(["--kill-after=3", "60"] + env + daemonArguments, controlled: false)
    }

    /// Another process for the test's lifetime (e.g. `iiod` under umockdev-run), output to the
    /// log; its process group is killed by `stop()`. `arguments[0]` is an absolute path.
    func startHelper(_ arguments: [String]) throws {
        let log = open(logPath, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard log >= 0 else { throw SystemError("open(\(logPath))", errno: errno) }
        defer { Glibc.close(log) }
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { Glibc.close(null) }
        helpers.append(try ChildProcess(arguments, stdin: null, stdout: log, stderr: log))
    }

    /// `timeout 60 umockdev-wrapper /usr/bin/python3 testbed.py LOG -- sensorkitd …`, driven by `command`.
    func startUnderTestbed() throws {
        try launch(
            [
                "--kill-after=3", "60", "/usr/bin/umockdev-wrapper", TestEnvironment.python, Self.fixtures + "/testbed.py",
                logPath, "--",
            ] + daemonArguments, controlled: true)
    }

    private func launch(_ arguments: [String], controlled: Bool) throws {
        precondition(process == nil, "one daemon per run at a time")
        // O_APPEND: the controller appends to the same file; neither may overwrite the other.
        let log = open(logPath, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard log >= 0 else { throw SystemError("open(\(logPath))", errno: errno) }
        defer { Glibc.close(log) }
        if controlled {
            var toChild: [Int32] = [-1, -1], fromChild: [Int32] = [-1, -1]
            guard pipe(&toChild) == 0, pipe(&fromChild) == 0 else { throw SystemError("pipe", errno: errno) }
            for fd in toChild + fromChild { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            defer {
                Glibc.close(toChild[0])
                Glibc.close(fromChild[1])
            }
            process = try ChildProcess(["/usr/bin/timeout"] + arguments, stdin: toChild[0], stdout: fromChild[1], stderr: log)
            controllerInput = FileHandle(fileDescriptor: toChild[1], closeOnDealloc: true)
            controllerOutput = FileHandle(fileDescriptor: fromChild[0], closeOnDealloc: true)
        } else {
            let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
            defer { Glibc.close(null) }
            process = try ChildProcess(["/usr/bin/timeout"] + arguments, stdin: null, stdout: log, stderr: log)
        }
    }

    /// One controller command; returns its result field. Throws the controller's error.
    @discardableResult
    func command(_ fields: String...) throws -> String {
        guard let input = controllerInput, let output = controllerOutput else { preconditionFailure("not under the testbed") }
        try input.write(contentsOf: Data((fields.joined(separator: "\t") + "\n").utf8))
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                let parts = line.split(separator: "\t", maxSplits: 1).map(String.init)
                guard parts.first == "ok" else {
                    throw TestFailure("testbed \(fields.first ?? ""): \(line)\n--- daemon log ---\n\(log)")
                }
                return parts.count > 1 ? parts[1] : ""
            }
            let chunk = output.availableData
            guard !chunk.isEmpty else { throw TestFailure("testbed controller exited\n--- daemon log ---\n\(log)") }
            pending += chunk
        }
    }

    /// Ends the daemon and every helper: politely (SIGTERM through `timeout`, or `stop` to the
    /// controller), then SIGKILL to each whole process group. Idempotent.
    func stop() {
        stopDaemon()
        for helper in helpers {
            kill(-helper.pid, SIGKILL)  // iiod ignores SIGTERM; nothing of its group may outlive the test
            helper.wait()
        }
        helpers = []
    }

    /// Ends the daemon only (helpers keep running): politely, then SIGKILL to its process group.
    func stopDaemon() {
        guard let process else { return }
        self.process = nil
        if let input = controllerInput {
            _ = try? input.write(contentsOf: Data("stop\n".utf8))
            try? input.close()
            controllerInput = nil
        } else if process.isRunning {
            kill(process.pid, SIGTERM)  // timeout relays it to its group: umockdev-run and the daemon
        }
        let deadline = Date().addingTimeInterval(8)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        kill(-process.pid, SIGKILL)  // whatever is left of timeout's process group
        process.wait()
        try? controllerOutput?.close()
        controllerOutput = nil
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "(no log)" }

    // MARK: The reader API

    /// A first run under umockdev with `device` (no feed) in which the app stakes `sensors`, so
    /// that the next run records from its first scan.
    func stakeInAFirstRun(_ sensors: [SRSensor], device: String) throws {
        try startUnderUmockdevRun(device: device)
        let first = try connect()
        for sensor in sensors { try startRecording(first, sensor) }
        first.close()
        stop()
    }

    /// Connects as the study app (or administrator) once the socket answers.
    func connect(app: String? = IIODaemonRun.app) throws -> ReaderConnection {
        var lastError: (any Error)?
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            do { return try ReaderConnection(socketPath: socket, app: app) } catch { lastError = error }
            usleep(50_000)
        }
        throw TestFailure("cannot connect to the daemon: \(lastError.map { "\($0)" } ?? "?")\n--- daemon log ---\n\(log)")
    }

    func startRecording(_ connection: ReaderConnection, _ sensor: SRSensor) throws {
        let reply = connection.call(.startRecording) { $0.sensor = sensor.rawValue }
        if let error = reply.error { throw TestFailure("startRecording \(sensor.rawValue): \(error)\n\(log)") }
    }

    /// SR nanoseconds now and the boot's anchor (SR ns = anchor + CLOCK_BOOTTIME ns).
    func timeline(_ connection: ReaderConnection) throws -> (now: Int64, anchor: Int64) {
        let reply = connection.call(.daemonStatus)
        guard let now = reply.info?["now"].flatMap({ Int64($0) }), let anchor = connection.welcome.timeline?.anchor else {
            throw TestFailure("daemonStatus without now/anchor: \(reply)")
        }
        return (now, anchor)
    }

    /// Every sample of a fetch (acknowledging each batch) merged into one batch, and the reply.
    func fetch(_ connection: ReaderConnection, _ sensor: String, from: Int64, to: Int64) -> (batch: Fetched, reply: WireReply) {
        let (batches, reply) = DaemonHarness.fetchAll(connection, sensor: SRSensor(sensor), from: from, to: to, timeout: 20)
        var merged = Fetched()
        for batch in batches { merged.append(batch) }
        return (merged, reply)
    }

    /// Admin `devices`: the sources the pipeline knows.
    func devices() throws -> [WireSource] {
        let admin = try connect(app: nil)
        defer { admin.close() }
        return admin.call(.devices).sources ?? []
    }

    /// Polls `condition` every 50 ms until it holds or `seconds` pass.
    static func eventually(_ seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(50_000)
        }
        return try condition()
    }
}

extension WireSource {
    /// Recording, or its buffer is on and the first scan has yet to come (the scripts of these
    /// tests start after the buffer is enabled).
    var bufferArmed: Bool { recording || state == "waiting for hardware: buffer enabled, no scan yet" }
}

/// A fetch's batches merged.
struct Fetched: Sendable {
    var sensorTimes: [Int64] = []
    var writeTimes: [Int64] = []
    var columns: [[Double]] = []

    mutating func append(_ batch: SampleBatchFrame) {
        sensorTimes += batch.sensorTimes
        writeTimes += batch.writeTimes
        if columns.isEmpty {
            columns = batch.columns
        } else {
            for index in columns.indices { columns[index] += batch.columns[index] }
        }
    }

    var count: Int { sensorTimes.count }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// BMI160 scans as the fixture lays them out (gyro x/y/z at indices 4–6, accel x/y/z at 7–9,
/// timestamp at 10: 6 × s16, 4 bytes of padding, s64 = 24 bytes) and umockdev scripts feeding them.
struct BMI160Scan: Sendable {
    var gyro: (x: Int16, y: Int16, z: Int16)
    var accel: (x: Int16, y: Int16, z: Int16)
    var timestamp: Int64

    var bytes: [UInt8] {
        var out: [UInt8] = []
        for value in [gyro.x, gyro.y, gyro.z, accel.x, accel.y, accel.z] {
            out += [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]
        }
        out += [0xA5, 0xA5, 0xA5, 0xA5]
        for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: timestamp >> Int64(shift))) }
        return out
    }

    /// `count` scans from `start` every `period` ns with values that change every scan.
    static func stream(count: Int, start: Int64, period: Int64, seed: Int16 = 0) -> [BMI160Scan] {
        (0..<count).map { i in
            let n = Int16(i) &+ seed
            return BMI160Scan(
                gyro: (3 &+ n, -2 &- n, 1), accel: (12 &+ n, -16392 &+ n, 40 &- n),
                timestamp: start + Int64(i) * period)
        }
    }

    /// One stretch of a script: `perLine` scans per line, the first line `firstDelay` ms after the
    /// previous one, the others `delay` ms apart.
    struct ScriptPart {
        var scans: [BMI160Scan]
        var perLine: Int
        var firstDelay = 0
        var delay: Int
    }

    static func script(_ scans: [BMI160Scan], perLine: Int, firstDelay: Int = 0, delay: Int) -> [UInt8] {
        script([ScriptPart(scans: scans, perLine: perLine, firstDelay: firstDelay, delay: delay)])
    }

    /// A umockdev script (`r <ms> <data>` lines, docs/iio.md §12.8) for umockdev 0.17, which feeds one
    /// script per device node: bytes < 0x20 and `^` are escaped, and a line never starts with 0x20
    /// (0.17 would swallow it) — a leading space moves to the end of the line before.
    static func script(_ parts: [ScriptPart]) -> [UInt8] {
        var lines: [(delay: Int, bytes: [UInt8])] = []
        for part in parts {
            for start in stride(from: 0, to: part.scans.count, by: part.perLine) {
                let bytes = part.scans[start..<min(part.scans.count, start + part.perLine)].flatMap(\.bytes)
                lines.append((start == 0 ? part.firstDelay : part.delay, bytes))
            }
        }
        return script(lines: lines)
    }

    /// Script lines of any scans: each line's bytes written `delay` ms after the line before.
    static func script(lines: [(delay: Int, bytes: [UInt8])]) -> [UInt8] {
        var lines = lines
        for index in lines.indices.dropFirst() {
            while lines[index].bytes.first == 0x20 {
                lines[index - 1].bytes.append(0x20)
                lines[index].bytes.removeFirst()
            }
        }
        precondition(lines.first?.bytes.first != 0x20, "the first byte of a script may not be a space")
        var out: [UInt8] = []
        for line in lines where !line.bytes.isEmpty {
            out += Array("r \(line.delay) ".utf8)
            for byte in line.bytes {
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
}

/// A TCP port on 127.0.0.1 that nothing listens on right now (bind to port 0, read it, close).
func freeTCPPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw SystemError("socket", errno: errno) }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    guard bound == 0 else { throw SystemError("bind", errno: errno) }
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard named == 0 else { throw SystemError("getsockname", errno: errno) }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
func acceptsConnections(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
}

/// CLOCK_BOOTTIME now, in nanoseconds (the clock the daemon stamps with).
func boottimeNow() -> Int64 { LinuxSystemClock().boottimeNanoseconds() }
