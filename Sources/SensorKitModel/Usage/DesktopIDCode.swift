/// A desktop id (`org.gnome.Maps`) coded into integers a stored column and a wire column (a
/// Float64) keep exactly: seven 7-bit ASCII characters per word (49 bits, inside a double's 53),
/// `words` words, so at most 63 characters. Only the characters a desktop id or a Wayland
/// `app_id` uses in practice (`A–Z a–z 0–9 . - _`) are coded; anything else — a longer name, a
/// space, a control or non-ASCII byte — is refused, and the app is then reported unnamed.
/// Why rows of coded words rather than a text column: docs/device-usage.md, "How a report is stored".
public enum DesktopIDCode {
    public static let words = 9
    public static let charactersPerWord = 7
    public static let maximumLength = words * charactersPerWord

    /// The words of `id`, or nil when it is empty, too long, or holds a character outside the set.
    public static func encode(_ id: String) -> [Int64]? {
        let bytes = Array(id.utf8)
        guard !bytes.isEmpty, bytes.count <= maximumLength, bytes.allSatisfy(isAllowed) else { return nil }
        var words = [Int64](repeating: 0, count: Self.words)
        for (index, byte) in bytes.enumerated() {
            words[index / charactersPerWord] |= Int64(byte) << (7 * (index % charactersPerWord))
        }
        return words
    }

    /// The id the words code, or nil for all-zero words (an unnamed app) and for anything a
    /// damaged store or a hostile peer could put there: a fraction, a word out of range, a
    /// character outside the set, or a gap before the last character.
    public static func decode(_ words: [Double]) -> String? {
        var bytes: [UInt8] = []
        var ended = false
        for word in words.prefix(Self.words) {
            guard word.isFinite, word >= 0, word < Double(1 << 49), word == word.rounded(.towardZero) else { return nil }
            var value = Int64(word)
            for _ in 0..<charactersPerWord {
                let byte = UInt8(value & 0x7F)
                value >>= 7
                if byte == 0 {
                    ended = true
                } else {
                    guard !ended, isAllowed(byte) else { return nil }
                    bytes.append(byte)
                }
            }
        }
        return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }

    static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"): true
        default: false
        }
    }
}
