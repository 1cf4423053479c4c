/// Which source a device-usage report counted its screen wakes or its unlocks from
/// (docs/device-usage.md, "Sources"); stored as its raw value and named in the report's `version`.
public enum UsageObservation: Int, Sendable, CaseIterable {
    /// Nothing observed it in the interval: the count is 0 because it could not be seen.
    case none = 0
    /// The Wayland compositor: output power (wakes) or its lock state.
    case compositor = 1
    /// logind's `IdleHint` of the seat's active session going from idle to active.
    case logindIdleHint = 2
    /// logind's `LockedHint` of the seat's active session.
    case logindLockedHint = 3
    /// `org.gnome.ScreenSaver.ActiveChanged` on the session bus (shells that leave `LockedHint` unset).
    case screenSaver = 4
    /// logind's `Lock`/`Unlock` signals of the session: requests to its locker, counted as the
    /// lock state where the shell sets no `LockedHint` (the state keeps a request and the hint
    /// that follows it from counting twice).
    case logindLockSignal = 5

    /// The name a report's `version` carries.
    public var name: String {
        switch self {
        case .none: "none"
        case .compositor: "compositor"
        case .logindIdleHint: "logind-idle-hint"
        case .logindLockedHint: "logind-locked-hint"
        case .screenSaver: "screensaver"
        case .logindLockSignal: "logind-lock-signal"
        }
    }
}
