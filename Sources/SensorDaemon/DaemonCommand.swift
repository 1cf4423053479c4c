import Foundation
import SensorKitModel
import SensorSystem

/// `sensorkitd`'s command line.
public enum DaemonCommand {
    public static let help = """
        Usage: sensorkitd [OPTIONS]

        Records Linux sensors (IIO accelerometers, gyroscopes, light, pressure and step sensors;
        Bluetooth LE heart-rate, ECG and PPG wearables) with SensorKit's semantics — a 24-hour
        hold, a 7-day window, per-app per-sensor consent — and serves them to study apps over a
        Unix socket.

        Options:
          --socket PATH      reader socket (default /run/sensorkit/sensorkitd.sock, env SENSORKIT_SOCKET)
          --config PATH      configuration file (default /etc/sensorkit/sensorkitd.conf)
          --apps-dir PATH    app manifests (default /etc/sensorkit/apps.d)
          --state-dir PATH   store and timeline (default /var/lib/sensorkit)
          --version          print the version and exit
          -h, --help         print this help and exit

        Signals: SIGTERM and SIGINT stop it cleanly (socket closed, sources stopped, store flushed);
        SIGHUP reads apps.d and the configuration's [grant] sections again without stopping recording.

        Under systemd (systemd/sensorkitd.service): a socket handed over by sensorkitd.socket
        (LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES) is served instead of --socket; READY=1, STATUS=
        and, with WatchdogSec=, WATCHDOG=1 go to $NOTIFY_SOCKET.
        Logs go to stderr with journald priority prefixes.
        """

    public static let version = "sensorkitd 0.1.0"

    /// Runs the command; returns the process exit status.
    public static func main(arguments: [String]) -> Int32 {
        var paths = DaemonPaths.system
        if let socket = ProcessInfo.processInfo.environment["SENSORKIT_SOCKET"] { paths.socket = socket }
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            func value() -> String? {
                guard let v = iterator.next() else {
                    FileHandle.standardError.write(Data("sensorkitd: \(argument) needs a value\n".utf8))
                    return nil
                }
                return v
            }
            switch argument {
            case "-h", "--help":
                print(help)
                return 0
            case "--version":
                print(version)
                return 0
            case "--socket": guard let v = value() else { return 2 }; paths.socket = v
            case "--config": guard let v = value() else { return 2 }; paths.config = v
            case "--apps-dir": guard let v = value() else { return 2 }; paths.appsDirectory = v
            case "--state-dir": guard let v = value() else { return 2 }; paths.stateDirectory = v
            default:
                FileHandle.standardError.write(Data("sensorkitd: unknown option '\(argument)' (see --help)\n".utf8))
                return 2
            }
        }
        let journal = Journal.standardError
        // Before anything can say READY=1: a stop asked for from then on must not be lost.
        let signals = StopSignals(journal: journal)
        var listener: Int32?
        do {
            if case .listener(let fd) = try SocketActivation.parse(
                environment: ProcessInfo.processInfo.environment, pid: getpid())
            {
                paths.socket = try InheritedSocket.adoptListener(fd)
                listener = fd
                journal.info("socket activation: serving fd \(fd), listening on \(paths.socket)")
            }
        } catch {
            journal.error("socket activation: \(error)")
            return 1
        }
        let configuration: DaemonConfiguration
        do {
            configuration = try loadConfiguration(paths.config)
        } catch {
            journal.error("configuration \(paths.config): \(error)")
            return 1
        }
        switch AllocatorTuning.forBulkData() {
        case .tuned:
            journal.debug("allocator: chunk-sized blocks kept in the heap (mmap threshold 32 MiB, trim threshold 64 MiB)")
        case .leftToEnvironment(let why): journal.debug("allocator: glibc malloc left as configured (\(why))")
        case .refused: journal.warning("allocator: mallopt refused the thresholds; glibc defaults stay")
        }
        let clock = LinuxSystemClock()
        let host = HostIdentity.read().device
        let parts = Daemon.Parts(
            paths: paths, configuration: configuration, clock: clock, journal: journal,
            openStore: { directory, timeline in
                try StoreBackend.open(
                    stateDirectory: directory, configuration: configuration, clock: clock,
                    timeline: timeline.current, hostDevice: host, journal: journal)
            },
            startSources: { registry in
                try DaemonSources.start(configuration: configuration, registry: registry, journal: journal)
            },
            listener: listener)
        let daemon: Daemon
        do {
            daemon = try Daemon(parts)
        } catch {
            journal.error("cannot start: \(error)")
            return 1
        }
        return daemon.run(until: signals) ? 0 : 1
    }

    /// The most the daemon reads of its configuration file; a larger one is refused.
    public static let maximumConfigurationBytes = 1 << 20

    /// The configuration file; a missing file means the defaults (SensorKit's 24 h hold, 7 d window).
    /// Refused when another user could change it (its `[grant]` sections skip consent) or when it
    /// is larger than `maximumConfigurationBytes`.
    public static func loadConfiguration(_ path: String) throws -> DaemonConfiguration {
        let bytes: [UInt8]
        do {
            bytes = try AdministeredFile.read(path, limit: maximumConfigurationBytes)
        } catch .unreadable(let failure) where failure.errno == ENOENT {
            return DaemonConfiguration()
        }
        return try DaemonConfiguration.parse(String(decoding: bytes, as: UTF8.self))
    }
}
