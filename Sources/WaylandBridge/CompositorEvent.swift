/// What the compositor watcher reports: the app in front, an output's power, or the end of the
/// connection. Only an application id and an output's name cross this line — never a window
/// title (docs/wayland.md, "Privacy").
public enum CompositorEvent: Sendable, Equatable {
    /// The activated toplevel's `app_id` (`""` for a window whose id is unset or was refused as
    /// hostile), `nil` when no window is in front; `at` is `CLOCK_BOOTTIME` in nanoseconds.
    case foreground(appID: String?, at: UInt64)
    /// An output's power mode, on first sight and at each change.
    case outputPower(output: String, on: Bool, at: UInt64)
    /// The compositor connection was lost (or the compositor stopped the toplevel list); the
    /// watcher is done and a new one may be created.
    case gone(at: UInt64)
}
