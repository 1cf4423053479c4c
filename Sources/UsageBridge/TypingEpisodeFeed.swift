/// Where `deviceUsageReport` learns that typing began, for `textInputSessions`: the daemon's
/// keyboards (docs/device-usage.md, "Text input"). Nothing but the time an episode began
/// crosses; the recorder counts it into the app in front at that moment.
public protocol TypingEpisodeFeed: Sendable {
    /// Starts reading the keyboards with `onEpisode` called at each episode's start (boot ns,
    /// any thread), or stops reading them (nil).
    func watchEpisodes(_ onEpisode: (@Sendable (Int64) -> Void)?)
    /// What is read now, for `sensorkitctl devices`.
    var typingStatus: String { get }
}
