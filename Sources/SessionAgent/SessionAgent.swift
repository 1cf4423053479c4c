import Dispatch
import SensorKitModel
import SystemBus

/// What the compositor tells the agent, in the shape the Wayland client (`WaylandBridge`'s
/// `CompositorWatcher`) reports it: the activated toplevel's app id (nil: none in front), an
/// output's power, the compositor gone. The agent takes these from any feeder — the Wayland
/// client, or a test.
public enum AgentCompositorEvent: Sendable, Equatable {
    case foreground(appID: String?)
    case outputPower(output: String, on: Bool)
    case gone
}

/// The session agent's core: turns what it watches — the session bus's notifications and screen
/// saver (`NotificationFlow`), the compositor (`AgentCompositorEvent`) — into the daemon's usage
/// events, with each app named by its desktop id and category (`DesktopCatalog`), and hands them
/// to `send` in order. Confined to `queue`.
public final class SessionAgent: @unchecked Sendable {
    // @unchecked: every var is touched only on `queue`.
    public let queue: DispatchQueue
    private let catalog: DesktopCatalog
    private let send: @Sendable ([WireUsageEvent]) -> Void
    private var notifications = NotificationFlow()
    private var outputs: [String: Bool] = [:]
    private var compositorWatched = false
    /// Outputs remembered at most (a compositor naming endless outputs cannot grow it).
    static let maximumOutputs = 64

    public init(catalog: DesktopCatalog, queue: DispatchQueue, send: @escaping @Sendable ([WireUsageEvent]) -> Void) {
        self.catalog = catalog
        self.queue = queue
        self.send = send
    }

    /// The agent watches the session bus now (or no longer).
    public func watchingSessionBus(_ on: Bool) {
        queue.async { [self] in send([WireUsageEvent(kind: .watching, on: on, source: UsageObservation.screenSaver.name)]) }
    }

    /// A message the session-bus monitor saw.
    public func sessionBus(_ message: DBusMonitoredMessage) {
        queue.async { [self] in
            var events: [WireUsageEvent] = []
            for output in notifications.on(message) {
                switch output {
                case .notification(let app, let event):
                    let named = catalog.app(app)
                    events.append(
                        WireUsageEvent(
                            kind: .notification, app: named.id, category: Int(DeviceUsageFamily.categoryIndex(named.category)),
                            event: event.rawValue))
                case .screenSaver(let active):
                    events.append(WireUsageEvent(kind: .locked, on: active, source: UsageObservation.screenSaver.name))
                }
            }
            if !events.isEmpty { send(events) }
        }
    }

    /// What the compositor reported.
    public func compositor(_ event: AgentCompositorEvent) {
        queue.async { [self] in
            var events: [WireUsageEvent] = []
            if !compositorWatched, event != .gone {
                compositorWatched = true
                events.append(WireUsageEvent(kind: .watching, on: true, source: UsageObservation.compositor.name))
            }
            switch event {
            case .foreground(let appID):
                let named = catalog.app(appID)
                events.append(
                    appID == nil
                        ? WireUsageEvent(kind: .foreground)
                        : WireUsageEvent(
                            kind: .foreground, app: named.id, category: Int(DeviceUsageFamily.categoryIndex(named.category))))
            case .outputPower(let output, let on):
                let wasOn = outputs.values.contains(true)
                if outputs[output] == nil, outputs.count >= Self.maximumOutputs { outputs.removeAll() }
                outputs[output] = on
                let isOn = outputs.values.contains(true)
                if isOn != wasOn || outputs.count == 1 {
                    events.append(WireUsageEvent(kind: .screen, on: isOn, source: UsageObservation.compositor.name))
                }
            case .gone:
                outputs = [:]
                if compositorWatched {
                    compositorWatched = false
                    events.append(WireUsageEvent(kind: .foreground))
                    events.append(WireUsageEvent(kind: .watching, on: false, source: UsageObservation.compositor.name))
                }
            }
            if !events.isEmpty { send(events) }
        }
    }
}
