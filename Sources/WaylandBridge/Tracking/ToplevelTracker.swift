/// The foreign-toplevel protocol's state as a value: windows, their app ids and which is
/// activated, and the `foreground` events it implies. It is fed the protocol's events in order and
/// reports a change only when the watcher says a batch of them has been read (`settled`): focus
/// moving from A to B arrives as "A not activated, done" then "B activated, done", and judging
/// after each `done` would report a moment with nothing in front that never happened.
public struct ToplevelTracker: Sendable {
    /// A hostile compositor could announce windows without end; beyond this many the tracker
    /// (and the connection, which destroys their handles) ignores new ones.
    public static let maximumToplevels = 1024

    public enum Event: Sendable, Equatable {
        case created(handle: UInt32)
        /// The validated id, or `""` when the compositor's was refused (`AppIdentifier`).
        case appID(handle: UInt32, String)
        case activated(handle: UInt32, Bool)
        /// The events since the handle's last `done` take effect together.
        case done(handle: UInt32)
        case closed(handle: UInt32)
        /// The compositor's events read so far have all been fed in; `at` is `CLOCK_BOOTTIME` ns.
        case settled(at: UInt64)
    }

    private struct Window: Sendable, Equatable {
        var appID = ""
        var activated = false
    }

    private struct Toplevel: Sendable {
        var pending = Window()
        var current = Window()
        /// When it last became activated, in `done` order: the latest wins when a compositor
        /// (several seats) shows more than one activated window.
        var activatedOrder: UInt64 = 0
        /// Not shown until its first `done`, as the protocol batches a new window's first state.
        var committed = false
    }

    private var toplevels: [UInt32: Toplevel] = [:]
    private var doneCount: UInt64 = 0
    /// The last reported app; `.none` until the first `settled`.
    private var reported: String?? = .none

    public init() {}

    /// Feeds one event; returns what the watcher reports (only ever for `settled`).
    public mutating func on(_ event: Event) -> [CompositorEvent] {
        switch event {
        case .created(let handle):
            if toplevels[handle] == nil && toplevels.count < Self.maximumToplevels {
                toplevels[handle] = Toplevel()
            }
        case .appID(let handle, let id):
            toplevels[handle]?.pending.appID = id
        case .activated(let handle, let activated):
            toplevels[handle]?.pending.activated = activated
        case .done(let handle):
            guard var toplevel = toplevels[handle] else { return [] }
            doneCount &+= 1
            if toplevel.pending.activated && !(toplevel.committed && toplevel.current.activated) {
                toplevel.activatedOrder = doneCount
            }
            toplevel.current = toplevel.pending
            toplevel.committed = true
            toplevels[handle] = toplevel
        case .closed(let handle):
            toplevels[handle] = nil
        case .settled(let at):
            let front = foreground
            if reported != .some(front) {
                reported = .some(front)
                return [.foreground(appID: front, at: at)]
            }
        }
        return []
    }

    /// The app id of the committed activated window (the latest activated if several), or `nil`.
    public var foreground: String? {
        var best: (order: UInt64, appID: String)?
        for toplevel in toplevels.values where toplevel.committed && toplevel.current.activated {
            if best == nil || toplevel.activatedOrder > best!.order {
                best = (toplevel.activatedOrder, toplevel.current.appID)
            }
        }
        return best?.appID
    }

    /// How many windows it follows.
    public var count: Int { toplevels.count }
}
