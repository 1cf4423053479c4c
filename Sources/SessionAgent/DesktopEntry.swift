/// The one fact the agent reads from a desktop entry (`.desktop` file, Desktop Entry
/// Specification 1.5): the `Categories=` list of its `[Desktop Entry]` group. The file is hostile
/// input: at most `maximumBytes` are looked at, a list of at most `maximumCategories` entries
/// each of `A–Z a–z 0–9 - _` (what the menu specification's names use, `X-` extensions
/// included), anything else dropped; `Hidden=true` (a deleted entry) gives none.
public enum DesktopEntry {
    public static let maximumBytes = 65_536
    public static let maximumCategories = 32
    static let maximumCategoryLength = 64

    /// The categories in file order, or nil when the entry is hidden or has no such group.
    public static func categories(_ bytes: some Collection<UInt8>) -> [String]? {
        var inMainGroup = false
        var sawMainGroup = false
        var categories: [String] = []
        var hidden = false
        for line in bytes.prefix(maximumBytes).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            let text = String(decoding: line, as: UTF8.self).trimmingWhitespace()
            if text.hasPrefix("[") {
                inMainGroup = text == "[Desktop Entry]"
                sawMainGroup = sawMainGroup || inMainGroup
                continue
            }
            guard inMainGroup, let equals = text.firstIndex(of: "=") else { continue }
            let key = text[..<equals].trimmingWhitespace()
            let value = text[text.index(after: equals)...].trimmingWhitespace()
            switch key {
            case "Categories":
                categories = value.split(separator: ";").map(String.init).filter(isCategoryName).prefix(maximumCategories)
                    .map { $0 }
            case "Hidden":
                hidden = value == "true"
            default:
                continue
            }
        }
        return sawMainGroup && !hidden ? categories : nil
    }

    static func isCategoryName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= maximumCategoryLength
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                    true
                default: false
                }
            }
    }
}

extension StringProtocol {
    func trimmingWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        return String(String(drop(while: isSpace).reversed().drop(while: isSpace).reversed()))
    }
}
