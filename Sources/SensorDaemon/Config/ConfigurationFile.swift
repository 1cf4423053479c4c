import SensorKitModel

/// The shape of `sensorkitd.conf` without its meaning: `[kind name]` sections of `key = value`
/// lines, `#` comments, every entry with its line. The reading checks what no section can judge
/// for itself — a header that is not closed, a line without `=`, a section header or a key
/// written twice — and which section kinds exist; what a key means is left to the
/// `ConfigurationReader` of its section (the daemon's own, or a driver's).
struct ConfigurationFile {
    struct Entry: Sendable {
        var key: String
        var value: String
        var line: Int
    }

    struct Section: Sendable {
        /// The header's first word ("" for the lines before any header).
        var kind: String
        /// The header's second part (`[grant com.example.rig]`), nil when there is none.
        var name: String?
        /// The header's line (0 for the lines before any header).
        var line: Int
        var entries: [Entry] = []

        /// As written between the brackets, spaces normalised: "sensor accelerometer".
        var title: String { name.map { "\(kind) \($0)" } ?? kind }
        /// " in [title]" for error messages; nothing for the top of the file.
        var whereabouts: String { kind.isEmpty ? "" : " in [\(title)]" }
    }

    /// In file order; the first one is the top of the file (kind "").
    var sections: [Section]

    /// Splits `text` into sections; `rules` are the section kinds that exist and what their
    /// headers may name. Errors name the offending line (and the first line of a repeat).
    static func read(_ text: String, rules: [ConfigurationSectionRule]) throws(DaemonConfiguration.ParseError)
        -> ConfigurationFile
    {
        typealias ParseError = DaemonConfiguration.ParseError
        var sections = [Section(kind: "", name: nil, line: 0)]
        // First line of each section header and of each key within its section: a repeat is an
        // error naming both lines, never a silent override.
        var sectionLines: [String: Int] = [:]
        var keyLines: [String: Int] = [:]
        for (offset, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = offset + 1
            let content =
                rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first
                .map { $0.trimmingCharacters(in: " \t\r") } ?? ""
            if content.isEmpty { continue }
            if content.hasPrefix("[") {
                guard content.hasSuffix("]") else { throw ParseError(line: line, message: "section header must end with ]") }
                let inside = String(content.dropFirst().dropLast()).trimmingCharacters(in: " \t")
                let parts = inside.split(separator: " ", maxSplits: 1).map { $0.trimmingCharacters(in: " \t") }
                let section = Section(kind: parts.first ?? "", name: parts.count == 2 ? parts[1] : nil, line: line)
                guard let rule = rules.first(where: { $0.kind == section.kind && !section.kind.isEmpty }) else {
                    throw ParseError(line: line, message: "unknown section [\(section.title)]")
                }
                if let problem = rule.problem(section.name, section.title) { throw ParseError(line: line, message: problem) }
                if let earlier = sectionLines[section.title] {
                    throw ParseError(
                        line: line,
                        message: "section [\(section.title)] appears twice (first on line \(earlier)); merge the two into one")
                }
                sectionLines[section.title] = line
                sections.append(section)
                continue
            }
            let pair = content.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: " \t") }
            guard pair.count == 2, !pair[0].isEmpty else { throw ParseError(line: line, message: "expected key = value") }
            let current = sections[sections.count - 1]
            let keyID = current.title + "\u{0}" + pair[0]
            if let earlier = keyLines[keyID] {
                throw ParseError(
                    line: line, message: "\(pair[0]) is set twice\(current.whereabouts) (first on line \(earlier)); keep one")
            }
            keyLines[keyID] = line
            sections[sections.count - 1].entries.append(Entry(key: pair[0], value: pair[1], line: line))
        }
        return ConfigurationFile(sections: sections)
    }
}

/// A section kind of `sensorkitd.conf` and what its header may name.
struct ConfigurationSectionRule: Sendable {
    /// The header's first word: `[store]`, `[wearable NAME]`.
    let kind: String
    /// The error message for a header naming `name` (nil: none), given the header's title; nil
    /// when the header is fine.
    let problem: @Sendable (_ name: String?, _ title: String) -> String?

    /// A section that stands alone: `[store]`.
    static func single(_ kind: String) -> ConfigurationSectionRule {
        ConfigurationSectionRule(kind: kind) { name, _ in name == nil ? nil : "[\(kind)] takes no name" }
    }

    /// A section that needs a name: `[grant com.example.rig]`; `missing` is the error without one.
    static func named(_ kind: String, missing: String) -> ConfigurationSectionRule {
        ConfigurationSectionRule(kind: kind) { name, _ in name == nil ? missing : nil }
    }
}

/// Reads the sections of `sensorkitd.conf` it owns into a `DaemonConfiguration`: the daemon's
/// own settings (`DaemonConfiguration`) and each driver's (`ConfiguredDriver`, in its driver
/// file). Sections are read in file order; a key no reader of its section knows is an error.
protocol ConfigurationReader {
    /// The section kinds it reads ("" is the top of the file). A kind may be shared: `[iio]` is
    /// read by both IIO drivers, each knowing its own keys.
    static var sections: [ConfigurationSectionRule] { get }
    /// A section of one of its kinds starts (before its entries).
    static func begin(_ section: ConfigurationFile.Section, into config: inout DaemonConfiguration)
        throws(DaemonConfiguration.ParseError)
    /// Reads one entry of a section of one of its kinds; false when the key is not one of its.
    static func read(
        _ entry: ConfigurationFile.Entry, in section: ConfigurationFile.Section, into config: inout DaemonConfiguration
    ) throws(DaemonConfiguration.ParseError) -> Bool
    /// Checks what needs the whole file (a section that needs another), after every section.
    static func finish(_ file: ConfigurationFile, into config: inout DaemonConfiguration)
        throws(DaemonConfiguration.ParseError)
}

extension ConfigurationReader {
    static func begin(_ section: ConfigurationFile.Section, into config: inout DaemonConfiguration)
        throws(DaemonConfiguration.ParseError)
    {}

    static func finish(_ file: ConfigurationFile, into config: inout DaemonConfiguration)
        throws(DaemonConfiguration.ParseError)
    {}
}

extension ConfigurationFile.Entry {
    typealias ParseError = DaemonConfiguration.ParseError

    /// An error about this entry, on its line.
    func error(_ message: String) -> ParseError { ParseError(line: line, message: message) }

    /// The value as a duration (`DurationText`).
    func duration() throws(ParseError) -> Int64 {
        guard let nanoseconds = DurationText.nanoseconds(value) else {
            throw error("\(key): '\(value)' is not a duration (e.g. 24h, 7d, 0)")
        }
        return nanoseconds
    }

    /// The value as a duration longer than 0.
    func positiveDuration() throws(ParseError) -> Int64 {
        let nanoseconds = try duration()
        guard nanoseconds > 0 else { throw error("\(key) must be longer than 0") }
        return nanoseconds
    }

    /// A usage report's interval (`[keyboard]`, `[modem]`, `[device-usage]`): 1 s to 1 d, so a
    /// typo can neither spin the recorder nor make one report hide a week.
    func reportInterval() throws(ParseError) -> Int64 {
        let nanoseconds = try positiveDuration()
        guard (1_000_000_000...86_400_000_000_000).contains(nanoseconds) else {
            throw error("\(key) must be from 1s to 1d")
        }
        return nanoseconds
    }

    /// `yes`/`true` or `no`/`false`.
    func yesOrNo() throws(ParseError) -> Bool {
        switch value {
        case "yes", "true": return true
        case "no", "false": return false
        default: throw error("\(key) must be yes or no")
        }
    }

    /// A comma-separated list, each item trimmed.
    var list: [String] { value.split(separator: ",").map { $0.trimmingCharacters(in: " \t") } }
}
