/// Text from outside — a client's app name, a wearable's Device Information strings, a file — made
/// safe to show in a log line or on a terminal: control characters become visible escapes, so the
/// text can neither start a forged journal line (a newline and `<0>`) nor drive a terminal (ESC
/// sequences that set the title, write the clipboard or clear the screen; BEL, NUL, CR), and it is
/// cut to a bound, so a 60 KB name cannot grow a log by 60 KB a line. The one escaping function of
/// the daemon's `Journal` and of `sensorkitctl`'s output.
public enum PrintableText {
    /// The most unicode scalars of one value a log line or a table cell shows.
    public static let valueLimit = 512

    /// `text` with every C0 control, DEL, C1 control and the invisible characters that reorder or
    /// break lines (U+2028/2029, the bidi embeddings, overrides and isolates) written as an escape
    /// (`\n`, `\r`, `\t`, `\x1B`, `\u{9B}`, `\u{202E}`), cut after `limit` unicode scalars with a
    /// note of the whole length. Invalid UTF-8 never reaches a `String`: decoding made it U+FFFD.
    /// Counted in scalars, not characters: one character may carry any number of combining marks.
    public static func escaped(_ text: some StringProtocol, limit: Int = valueLimit) -> String {
        var out = String.UnicodeScalarView()
        var shown = 0
        for scalar in text.unicodeScalars {
            guard shown < limit else {
                return String(out) + "…(\(text.utf8.count) bytes in all)"
            }
            shown += 1
            if let escape = escape(scalar) { out.append(contentsOf: escape.unicodeScalars) } else { out.append(scalar) }
        }
        return String(out)
    }

    /// Whether `text` holds nothing `escaped` would change (except for its length).
    public static func isPrintable(_ text: some StringProtocol) -> Bool {
        text.unicodeScalars.allSatisfy { escape($0) == nil }
    }

    private static func escape(_ scalar: Unicode.Scalar) -> String? {
        switch scalar.value {
        case 0x0A: return "\\n"
        case 0x0D: return "\\r"
        case 0x09: return "\\t"
        case 0x00..<0x20, 0x7F: return "\\x" + hex(scalar.value, digits: 2)
        case 0x80...0x9F, 0x2028, 0x2029, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069:
            return "\\u{" + hex(scalar.value, digits: 2) + "}"
        default: return nil
        }
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
