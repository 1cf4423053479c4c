/// How wide a line of text may be drawn, in px, before any renderer has seen it: an upper bound
/// for DejaVu Sans (the charts' first font) and the sans-serif fonts that stand in for it, so a
/// label column sized from it never cuts a name. Deliberately generous: a column a little too wide
/// costs some white space, one too narrow hides the part of a name that tells two devices apart.
public enum TextWidth {
    /// An upper bound of the advance of `text` at `size` px; bold glyphs are wider.
    public static func bound(_ text: String, size: Double, bold: Bool = false) -> Double {
        var ems = 0.0
        for scalar in text.unicodeScalars { ems += advance(scalar) }
        return ems * size * (bold ? 1.12 : 1.0)
    }

    /// Advance in ems, at or above DejaVu Sans Book's for each class of character.
    static func advance(_ scalar: Unicode.Scalar) -> Double {
        switch scalar {
        case "i", "j", "l", "I", ".", ",", ":", ";", "'", "!", "|", "(", ")", "[", "]", " ": return 0.42
        case "f", "t", "r", "1", "-", "/", "\\": return 0.52
        case "m", "w", "M", "W", "@", "%": return 1.05
        case "a"..."z", "0"..."9": return 0.66
        case "A"..."Z", "&", "#", "_", "<", ">", "=", "+", "~": return 0.86
        default: return scalar.value < 0x80 ? 0.86 : 1.1
        }
    }
}
