/// The check an `app_id` from the compositor passes before it is kept: it comes from whichever
/// client drew the window, so it is hostile input.
public enum AppIdentifier {
    /// Longer ids are refused, not cut: a cut id could name another app. Desktop file ids, which
    /// app ids are meant to match, are far shorter.
    public static let maximumBytes = 255

    /// The id as a `String` when `bytes` (without the terminating NUL) is at most `maximumBytes`
    /// long, valid UTF-8 and free of control characters; `nil` otherwise.
    public static func validated(_ bytes: some Collection<UInt8>) -> String? {
        guard bytes.count <= maximumBytes else { return nil }
        guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
        for scalar in text.unicodeScalars where scalar.properties.generalCategory == .control {
            return nil
        }
        return text
    }
}
