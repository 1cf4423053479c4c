/// The `state` event's array: native-endian `uint32` values of the protocol's `state` enum.
public enum ToplevelStates {
    /// The enum's `activated` entry: the window has the keyboard focus.
    public static let activated: UInt32 = 2

    /// Whether `bytes` lists `activated`; `nil` when its length is not a whole number of `uint32`s
    /// (a broken compositor), which the tracker then ignores.
    public static func isActivated(_ bytes: UnsafeRawBufferPointer) -> Bool? {
        guard bytes.count % 4 == 0 else { return nil }
        var offset = 0
        while offset < bytes.count {
            if bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self) == activated { return true }
            offset += 4
        }
        return false
    }
}
