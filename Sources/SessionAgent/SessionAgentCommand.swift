import Dispatch
import Foundation
import Glibc
import LocationBridge
import SensorKitModel
import SensorSystem
import Synchronization
import SystemBus

/// `sensorkit-session [--socket PATH]`: the session agent's run — connect to the daemon as this
/// session's agent, watch the session bus as a monitor, and hand over what it sees until the
/// bus, the daemon or a stop signal ends it. The exit status says which (systemd restarts it
/// on failure, `packaging/systemd/user/sensorkit-session.service`).
public enum SessionAgentCommand {
    public static func run(_ arguments: [String], environment: [String: String]) -> Int32 {
        let journal = Journal.standardError
        var socket = environment["SENSORKIT_SOCKET"] ?? "/run/sensorkit/sensorkitd.sock"
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--help", "-h":
                print(help)
                return 0
            case "--socket":
                guard let path = rest.popFirst() else { return usage() }
                socket = path
            default: return usage()
            }
        }
        let link: AgentLink
        do {
            link = try AgentLink(socketPath: socket) { error in
                journal.warning("the daemon refused usage events: \(error.message)")
            }
        } catch {
            journal.error("cannot act as this session's agent at \(socket): \(error)")
            return 1
        }
        let agentQueue = DispatchQueue(label: "sensorkit-session.agent")
        let agent = SessionAgent(
            catalog: DesktopCatalog(folders: DesktopCatalog.folders(environment: environment)), queue: agentQueue,
            send: { link.send($0) })
        let watch = SessionBusWatch()
        let ended = DispatchSemaphore(value: 0)
        // Set when the session bus went away (not a stop signal): exit 1, for systemd to restart.
        let busEnded = EndFlag()
        let monitor = DBusMonitor(
            rules: SessionBusWatch.rules, queue: agentQueue, select: { watch.select($0) },
            handler: { event in
                switch event {
                case .message(let message): agent.sessionBus(message)
                case .lost(let count): journal.warning("\(count) session-bus messages were not looked at (queue full)")
                case .ended:
                    busEnded.ended.withLock { $0 = true }
                    ended.signal()
                }
            })
        let bus: DBusConnection
        do {
            bus = try DBusConnection(monitoring: .session, monitor, description: "sensorkit-session")
        } catch {
            journal.error("cannot monitor the session bus: \(error)")
            link.close()
            return 1
        }
        agent.watchingSessionBus(true)
        journal.info("watching the session bus for \(socket)")
        // The compositor (docs/wayland.md): the app in front and the outputs' power, reconnected
        // when it restarts; without one, logind's idle hint and the screen saver stand in.
        let compositor = CompositorFeed(
            display: environment["WAYLAND_DISPLAY"], agent: agent, queue: agentQueue,
            log: { journal.info($0) })
        compositor.start()
        let location = startLocation(environment: environment, send: { link.send($0) }, journal: journal)
        var stopSignals: [any DispatchSourceSignal] = []
        for signal in [SIGTERM, SIGINT] {
            Glibc.signal(signal, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
            source.setEventHandler { ended.signal() }
            source.resume()
            stopSignals.append(source)
        }
        ended.wait()
        for source in stopSignals { source.cancel() }
        compositor.stop()
        location?.stop()
        bus.close()
        agentQueue.sync {}
        link.close()
        if busEnded.ended.withLock({ $0 }) {
            journal.error("the session bus connection ended")
            return 1
        }
        return 0
    }

    /// Location on the system bus (GeoClue is a system service), keyed by the agent's place key;
    /// nil, with the reason logged, where the key cannot be kept.
    static func startLocation(
        environment: [String: String], send: @escaping @Sendable ([WireUsageEvent]) -> Void, journal: Journal
    ) -> LocationFeed? {
        guard let path = PlaceKeyFile.path(environment: environment) else {
            journal.warning("location: no XDG_STATE_HOME or HOME to keep the place key in; no visits are recorded")
            return nil
        }
        let key: PlaceKey
        do throws(SystemError) {
            var random = SystemRandomNumberGenerator()
            key = try PlaceKeyFile.load(path, using: &random)
        } catch {
            journal.warning("location: the place key cannot be kept (\(error)); no visits are recorded")
            return nil
        }
        let labels = PlaceLabelsFile.path(environment: environment).map { PlaceLabelsFile.load($0) { journal.warning($0) } }
        let bookPath = PlaceBookFile.path(besideKey: path)
        let places = PlaceBookFile.load(bookPath) { journal.warning($0) }
        let feed = LocationFeed(
            bus: .system, key: key, labels: labels ?? [], places: places,
            utcOffsetSeconds: TimeZone.current.secondsFromGMT(), send: send, log: { journal.info($0) },
            keep: { places in
                do throws(SystemError) {
                    try PlaceBookFile.save(places, to: bookPath)
                } catch {
                    journal.warning("location: the place book cannot be kept (\(error)); a restart starts a new one")
                }
            })
        feed.start()
        return feed
    }

    static let help = """
        usage: sensorkit-session [--socket PATH]

        The session agent of sensorkitd's deviceUsageReport (docs/device-usage.md): watches this
        user's session bus (notifications, org.gnome.ScreenSaver) and compositor and hands the
        daemon usage events — app ids, categories, counts — never a title or a text. Runs as the
        systemd user unit sensorkit-session.service with the graphical session.

          --socket PATH   the daemon's socket (default $SENSORKIT_SOCKET, else /run/sensorkit/sensorkitd.sock)
        """

    private static func usage() -> Int32 {
        FileHandle.standardError.write(Data("usage: sensorkit-session [--socket PATH]\n".utf8))
        return 2
    }
}

/// Whether the session bus ended the run, set on the monitor's queue and read after it.
final class EndFlag: Sendable {
    let ended = Mutex(false)
}
