/// Why a `CompositorWatcher` could not start; each says, in a sentence, what the agent falls back to.
public enum CompositorError: Error, Equatable, CustomStringConvertible {
    /// Neither a display name nor `WAYLAND_DISPLAY` names a compositor.
    case noDisplay
    /// `wl_display_connect` failed for this display (no compositor listening there).
    case cannotConnect(display: String, errno: Int32)
    /// The compositor offers no `zwlr_foreign_toplevel_manager_v1` or no
    /// `zwlr_output_power_manager_v1` (GNOME's Mutter and KDE's KWin offer neither).
    case protocolNotOffered(interface: String)
    /// The compositor did not answer the initial round trips in time, or broke the connection.
    case noAnswer(display: String)

    public var description: String {
        switch self {
        case .noDisplay:
            return "no Wayland compositor to watch: WAYLAND_DISPLAY is not set; device usage falls back to logind"
        case .cannotConnect(let display, let errno):
            return "cannot connect to the Wayland compositor at \(display) (errno \(errno)); device usage falls back to logind"
        case .protocolNotOffered(let interface):
            return
                "the Wayland compositor does not offer \(interface) (wlroots compositors such as sway, phoc or labwc do; "
                + "GNOME's Mutter and KDE's KWin do not); device usage falls back to logind"
        case .noAnswer(let display):
            return
                "the Wayland compositor at \(display) did not answer in time or closed the connection; device usage falls back to logind"
        }
    }
}
