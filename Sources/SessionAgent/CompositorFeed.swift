import Dispatch
import SensorKitModel
import SensorSystem
import WaylandBridge

/// Feeds the agent from the user's compositor: keeps a `CompositorWatcher` connected and hands
/// what it reports to `SessionAgent.compositor(_:)`. When the compositor is not there yet, or goes
/// away (a crash, a restart), it tries again — after `firstRetry`, doubling up to `lastRetry` —
/// so a restarted compositor is watched again within a minute. A session without
/// `WAYLAND_DISPLAY`, or a compositor that lacks the wlr protocols (GNOME, KDE), is not retried:
/// an idle agent makes no wake-ups. Confined to `queue`.
public final class CompositorFeed: @unchecked Sendable {
    // @unchecked: every var is touched only on `queue`.
    private let display: String?
    private let agent: SessionAgent
    private let queue: DispatchQueue
    private let log: @Sendable (LogMessage) -> Void
    /// The waits between connects, and the last failure said (once, not at every retry).
    private var backoff: RetryBackoff
    private var watcher: CompositorWatcher?
    private var stopped = false

    /// `display`: a Wayland socket name or absolute path (`nil`: `WAYLAND_DISPLAY`). `log` gets a
    /// line when watching starts, stops, or fails for a new reason.
    public init(
        display: String?, agent: SessionAgent, queue: DispatchQueue, firstRetry: Duration = .seconds(1),
        lastRetry: Duration = .seconds(60), log: @escaping @Sendable (LogMessage) -> Void
    ) {
        self.display = display
        self.agent = agent
        self.queue = queue
        self.log = log
        backoff = RetryBackoff(first: firstRetry.saturatingNanoseconds, last: lastRetry.saturatingNanoseconds)
    }

    public func start() { queue.async { [self] in connect() } }

    /// Stops watching; nothing reaches the agent once it returns. Call off `queue`.
    public func stop() {
        queue.sync {
            stopped = true
            watcher?.stop()
            watcher = nil
        }
    }

    private func connect() {
        guard !stopped, watcher == nil else { return }
        do {
            // The watcher delivers on `queue`, so `deliver` runs confined like the rest.
            watcher = try CompositorWatcher(displayName: display, queue: queue) { [weak self] event in
                self?.deliver(event)
            }
            backoff.succeeded()
            log("watching the compositor")
        } catch let error as CompositorError where !Self.worthRetrying(error) {
            // No Wayland session, or a compositor that will never speak the wlr protocols
            // (GNOME, KDE): retrying would only cost wake-ups; logind stands in.
            log("not watching the compositor: \(error.description)")
        } catch {
            scheduleRetry(because: "\(error)")
        }
    }

    /// A compositor not up yet, or gone, may come (back); a session without a display, or a
    /// compositor without the protocols, will not change while the agent runs.
    static func worthRetrying(_ error: CompositorError) -> Bool {
        switch error {
        case .cannotConnect, .noAnswer: return true
        case .noDisplay, .protocolNotOffered: return false
        }
    }

    private func deliver(_ event: CompositorEvent) {
        guard !stopped else { return }
        switch event {
        case .foreground(let appID, _): agent.compositor(.foreground(appID: appID))
        case .outputPower(let output, let on, _): agent.compositor(.outputPower(output: output, on: on))
        case .gone:
            agent.compositor(.gone)
            watcher?.stop()
            watcher = nil
            log("the compositor went away")
            scheduleRetry(because: "gone")
        }
    }

    /// Connects again after the backoff's wait; a reason not said since watching last worked is logged.
    private func scheduleRetry(because reason: String) {
        let (wait, worthSaying) = backoff.failed(because: reason)
        if worthSaying && reason != "gone" { log("not watching the compositor (trying again): \(reason)") }
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: wait))) { [weak self] in self?.connect() }
    }
}
