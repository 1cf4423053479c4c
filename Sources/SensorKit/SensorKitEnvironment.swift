import Foundation
import SensorKitModel
import SensorSystem
import Synchronization

/// Where the client finds the daemon and how it reads time: the socket path (`SENSORKIT_SOCKET`,
/// default `/run/sensorkit/sensorkitd.sock`), the daemon's published timeline beside it, and the
/// clock. Tests replace the clock and timeline with `SensorKitEnvironment.install(_:)`.
public struct SensorKitEnvironment: Sendable {
    public static let defaultSocketPath = "/run/sensorkit/sensorkitd.sock"

    public var socketPath: String
    public var clock: any SystemClock
    public var timeline: Timeline

    public init(socketPath: String, clock: any SystemClock, timeline: Timeline) {
        self.socketPath = socketPath
        self.clock = clock
        self.timeline = timeline
    }

    /// The environment of this process: socket from `SENSORKIT_SOCKET`, the daemon's timeline from
    /// `timeline.json` beside the socket. With no daemon timeline yet, a process-local one is
    /// founded (SR time then counts from midnight UTC today), so `current()` still increases.
    public static func fromProcess() -> SensorKitEnvironment {
        let socket = ProcessInfo.processInfo.environment["SENSORKIT_SOCKET"] ?? defaultSocketPath
        let clock = LinuxSystemClock()
        let published = (socket as NSString).deletingLastPathComponent + "/" + TimelineFile.fileName
        var timeline = (try? TimelineFile.load(published)) ?? nil ?? Timeline.founded(by: clock)
        timeline.adoptCurrentBoot(of: clock)
        return SensorKitEnvironment(socketPath: socket, clock: clock, timeline: timeline)
    }

    private static let shared = Mutex<SensorKitEnvironment?>(nil)

    /// The environment in force (read from the process on first use).
    public static var current: SensorKitEnvironment {
        shared.withLock { value in
            if let value { return value }
            installDefaults()
            let made = fromProcess()
            value = made
            return made
        }
    }

    /// Takes the daemon's timeline from its hello, so SR times here and there agree exactly.
    static func adopt(_ wire: WireTimeline) {
        shared.withLock { value in
            guard var environment = value else { return }
            let boot = BootID(wire.boot)
            guard boot == environment.clock.bootID else { return }
            environment.timeline = Timeline(
                origin: wire.origin, anchors: [boot: wire.anchor],
                highWater: Int64.min, currentBoot: boot)
            value = environment
        }
    }

    /// Replaces the environment (tests, or an app that talks to a daemon on another socket).
    public static func install(_ environment: SensorKitEnvironment) {
        installDefaults()
        shared.withLock { $0 = environment }
    }

    /// New fetch requests target this host, as Apple's `-[SRFetchRequest init]` does.
    static func installDefaults() {
        SRFetchRequest.setDefaultDevice { SRDevice.current }
    }
}
