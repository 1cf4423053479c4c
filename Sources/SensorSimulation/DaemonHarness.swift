import Foundation
import Glibc
import SensorDaemon
import SensorKit
import SensorKitModel
import SensorSystem
import Synchronization

/// A real sensorkitd running in this process on temporary paths, fed by test sources through the
/// daemon's own pipeline and store: the reader socket, consent, stakes and fetches are the real
/// ones. Apps: `com.example.study` (accelerometer, ambient light; bound to root) and
/// `com.example.other` (accelerometer; bound to root and to `nobody`).
public final class DaemonHarness: @unchecked Sendable {
    public let folder: String
    public let socket: String
    public let daemon: Daemon
    public let logLines: @Sendable () -> [String]
    /// The daemon's clock and the scheduler its timers run on: the system's by default, a
    /// `ManualTime` (passed as both) when the test moves time by hand.
    public let clock: any SystemClock
    public let scheduler: any Scheduler

    public static let studyApp = "com.example.study"
    public static let otherApp = "com.example.other"
    public static let nobody: UInt32 = 65534

    /// Starts a daemon; `config` is sensorkitd.conf text, `sources` are added at start. `prepare`
    /// runs on the folder (apps in its `apps.d`) just before the daemon starts (the folder is removed if it cannot).
    /// `clock` is the daemon's boot and wall clock and `scheduler` runs its timers (a `ManualTime`
    /// as both lets a test move time by hand; give the sources the same), `environment` stands for
    /// the process's (systemd's variables), `stopDeadline` bounds `stop`.
    public init(
        config: String = "profile = lab\n", sources: [any SensorSource] = [],
        clock: any SystemClock = LinuxSystemClock(), scheduler: any Scheduler = TickingScheduler(),
        environment: [String: String] = [:],
        stopDeadline: Double = 10, prepare: (_ folder: String) throws -> Void = { _ in }
    ) throws {
        // A short, world-traversable folder: the socket path must fit sun_path, and the
        // cross-user tests connect as nobody.
        var template = Array("/tmp/skd-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemError("mkdtemp", errno: errno) }
        folder = String(cString: made)
        chmod(folder, 0o755)
        socket = folder + "/s.sock"
        try FileManager.default.createDirectory(atPath: folder + "/apps.d", withIntermediateDirectories: true)
        try Self.writeApp(
            Self.studyApp, in: folder + "/apps.d", entitlements: ["motion-accelerometer", "ambient-light-sensor"],
            users: ["root"])
        try Self.writeApp(
            Self.otherApp, in: folder + "/apps.d", entitlements: ["motion-accelerometer"],
            users: ["root", "nobody"])
        try config.write(toFile: folder + "/sensorkitd.conf", atomically: true, encoding: .utf8)
        let paths = DaemonPaths(
            socket: socket, config: folder + "/sensorkitd.conf", appsDirectory: folder + "/apps.d",
            stateDirectory: folder + "/state")
        let configuration = try DaemonCommand.loadConfiguration(paths.config)
        let (journal, lines) = Journal.memory()
        logLines = lines
        self.clock = clock
        self.scheduler = scheduler
        let host = HostIdentity.read().device
        let created = folder
        do {
            try prepare(folder)
            var parts = Daemon.Parts(
                paths: paths, configuration: configuration, clock: clock, journal: journal,
                openStore: { directory, timeline in
                    try StoreBackend.open(
                        stateDirectory: directory, configuration: configuration, clock: clock,
                        timeline: timeline.current, hostDevice: host, journal: journal)
                },
                startSources: { registry in
                    for source in sources { registry.add(source) }
                    return []
                })
            parts.scheduler = scheduler
            parts.environment = environment
            parts.stopDeadline = stopDeadline
            daemon = try Daemon(parts)
        } catch {
            try? FileManager.default.removeItem(atPath: created)
            throw error
        }
    }

    /// Stops the daemon and removes its files.
    public func stop() {
        daemon.stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Connects as an app (or as administrator with nil), on this daemon's socket.
    public func connect(app: String?) throws -> ReaderConnection {
        try ReaderConnection(socketPath: socket, app: app)
    }

    /// Decides consent as root (administrator) and waits for the reply.
    public func grant(_ sensors: [SRSensor], to app: String, granted: Bool = true) throws {
        let admin = try connect(app: nil)
        defer { admin.close() }
        let reply = admin.call(.consentDecide) {
            $0.app = app
            $0.decisions = Dictionary(uniqueKeysWithValues: sensors.map { ($0.rawValue, granted) })
        }
        if let error = reply.error { throw error }
    }

    /// Every sample of a fetch, as batches, and the final reply (acknowledging each batch). A
    /// fetch that has not ended after `timeout` seconds gives a failure reply, so a stalled fetch
    /// fails its test instead of hanging the run.
    public static func fetchAll(
        _ connection: ReaderConnection, sensor: SRSensor, from: Int64, to: Int64,
        device: String = SRDevice.hostIdentifier, window: Int = 8,
        chunkFormats: [Int]? = ReaderConnection.chunkFormats,
        timeout: Double = 60
    ) -> (batches: [SampleBatchFrame], reply: WireReply) {
        let collected = Mutex<[SampleBatchFrame]>([])
        let reply = Mutex<WireReply?>(nil)
        let done = DispatchSemaphore(value: 0)
        connection.send(
            {
                $0.sensor = sensor.rawValue
                $0.device = device
                $0.from = from
                $0.to = to
                $0.window = window
                $0.chunkFormats = chunkFormats
            }, op: .fetch
        ) { incoming in
            switch incoming {
            case .batch(let batch):
                collected.withLock { $0.append(batch) }
                connection.notify(.ack, target: batch.requestID, batches: 1)
            case .reply(let final):
                reply.withLock { $0 = final }
                done.signal()
            }
        }
        let ended = done.wait(timeout: .now() + timeout) == .success
        let final =
            reply.withLock { $0 }
            ?? .failure(nil, WireError(.internalError, ended ? "no final reply" : "fetch did not end within \(timeout) s"))
        return (collected.withLock { $0 }, final)
    }

    /// SR nanoseconds now on the daemon's timeline.
    public var now: Int64 { daemon.timeline.srNanoseconds(of: clock.now())! }

    /// Runs `arguments` as nobody (setpriv); its exit status and output.
    public static func asNobody(_ arguments: [String]) throws -> (status: Int32, output: String) {
        try CommandOutput.run(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] + arguments)
    }

    /// Waits until `condition` holds or `seconds` pass, trying it every `every` seconds; returns
    /// whether it held.
    public static func eventually(_ seconds: Double = 10, every: Double = 0.02, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(UInt32(every * 1e6))
        }
        return condition()
    }

    /// How many samples of `sensor` `app` can fetch now (its stake, the hold and the window
    /// applied); −1 when it cannot connect.
    public func samplesVisible(to app: String, sensor: SRSensor = .accelerometer) -> Int {
        guard let connection = try? connect(app: app) else { return -1 }
        defer { connection.close() }
        return Self.fetchAll(connection, sensor: sensor, from: 0, to: now).batches.reduce(0) { $0 + $1.count }
    }

    /// Lets `duration` of recording pass on `time` (this daemon's and its sources' clock and
    /// scheduler) and waits until `app` can fetch more than `samples` of `sensor`: the store
    /// commits on real time, within half a second, so this polls for at most `seconds`. Whether
    /// it could.
    package func record(
        on time: ManualTime, for duration: Duration, beyond samples: Int, app: String = studyApp,
        sensor: SRSensor = .accelerometer, seconds: Double = 10
    ) throws -> Bool {
        try time.advance(by: duration)
        return Self.eventually(seconds) { samplesVisible(to: app, sensor: sensor) > samples }
    }

    /// The folder of the built products (sensorkitd, sensorkitctl next to the test bundle).
    public static var productsFolder: String {
        let path = CommandLine.arguments[0]
        var folder = (path as NSString).deletingLastPathComponent
        if folder.hasSuffix(".xctest/Contents/MacOS") {
            folder = ((folder as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent
        }
        return folder
    }

    public static func writeApp(
        _ app: String, in folder: String, entitlements: [String], users: [String],
        purpose: String = "Movement and light during the day"
    ) throws {
        let directory = folder + "/" + app
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        func write(_ name: String, _ plist: [String: Any]) throws {
            let data = try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0)
            guard FileManager.default.createFile(atPath: directory + "/" + name, contents: data) else {
                throw SystemError("create \(name)", errno: errno)
            }
        }
        try write(
            "Info.plist",
            [
                "NSSensorKitUsageDescription": purpose,
                "NSSensorKitPrivacyPolicyURL": "https://example.org/privacy",
                "NSSensorKitUsageDetail": ["SRSensorUsageMotion": ["Description": "How you move", "Required": true]],
            ])
        try write("Study.entitlements", ["com.apple.developer.sensorkit.reader.allow": entitlements])
        try write("Binding.plist", ["Users": users])
    }
}
