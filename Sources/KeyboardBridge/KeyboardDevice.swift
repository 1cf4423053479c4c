/// A typing keyboard as discovery found it.
public struct KeyboardDevice: Hashable, Sendable {
    /// `/dev/input/eventN`.
    public var devnode: String
    /// What names the keyboard across reboots and renumbering: udev's `ID_PATH` (the port it is
    /// plugged into) where it has one, else its sysfs path.
    public var identity: String
    /// The driver's name for it ("AT Translated Set 2 keyboard"); shown, never part of identity.
    public var name: String

    public init(devnode: String, identity: String, name: String) {
        self.devnode = devnode
        self.identity = identity
        self.name = name
    }
}

/// How keyboards are counted (`[keyboard]` in the configuration).
public struct KeyboardSettings: Hashable, Sendable {
    /// The length of one `SRKeyboardMetrics` interval (ns); 15 minutes by default, as Apple's
    /// device-usage reports.
    public var intervalNanoseconds: Int64
    public var thresholds: TypingTally.Thresholds

    public init(intervalNanoseconds: Int64 = 15 * 60 * 1_000_000_000, thresholds: TypingTally.Thresholds = .init()) {
        self.intervalNanoseconds = intervalNanoseconds
        self.thresholds = thresholds
    }
}
