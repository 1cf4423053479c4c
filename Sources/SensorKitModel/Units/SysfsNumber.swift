/// Numbers as the kernel prints them in sysfs, parsed without regard to the process locale.
///
/// The kernel always writes a C-locale decimal (`0.009576806`, `-12`, `1.5e-3` never appears but
/// is harmless), so the grammar here is strict: `[+-]?digits(.digits)?([eE][+-]?digits)?`,
/// surrounded by optional white space (the trailing `\n`). Anything else — `0,5` from a French
/// mind, `nan`, `0x10`, an empty file — is rejected rather than misread. After the grammar check
/// the digits are converted by the Swift standard library's `Double(_:)`, which is correctly
/// rounded and locale-independent (it uses the C locale, never `LC_NUMERIC`). iio-sensor-proxy
/// had `LC_NUMERIC=fr_FR` bugs (docs/iio.md §12.2); this is why nothing here calls `strtod`/`atof`.
public enum SysfsNumber {
    /// A decimal number, e.g. a `_scale`, `_offset`, `_input` or `sampling_frequency` value.
    public static func decimal(_ text: some StringProtocol) throws(SysfsNumberError) -> Double {
        let trimmed = trim(text)
        guard isDecimal(trimmed), let value = Double(trimmed), value.isFinite else {
            throw SysfsNumberError(text: String(text), expected: "a decimal number")
        }
        return value
    }

    /// An integer, e.g. a `_raw` value, `_index` or `_en`.
    public static func integer(_ text: some StringProtocol) throws(SysfsNumberError) -> Int64 {
        let trimmed = trim(text)
        var digits = trimmed.utf8[...]
        if let first = digits.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.allSatisfy(isDigit), let value = Int64(trimmed) else {
            throw SysfsNumberError(text: String(text), expected: "an integer")
        }
        return value
    }

    /// White-space-separated decimals, e.g. `sampling_frequency_available` = `12.5 26 52`.
    public static func decimals(_ text: some StringProtocol) throws(SysfsNumberError) -> [Double] {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" })
        guard !words.isEmpty else { throw SysfsNumberError(text: String(text), expected: "a list of decimal numbers") }
        var values: [Double] = []
        for word in words {
            do throws(SysfsNumberError) {
                values.append(try decimal(word))
            } catch {
                throw SysfsNumberError(text: String(text), expected: "a list of decimal numbers")
            }
        }
        return values
    }

    public static func trim(_ text: some StringProtocol) -> String {
        let bytes = text.utf8.drop(while: isSpace).reversed().drop(while: isSpace).reversed()
        return String(decoding: Array(bytes), as: UTF8.self)
    }

    /// `[+-]?digits(.digits)?([eE][+-]?digits)?`
    static func isDecimal(_ text: String) -> Bool {
        var bytes = text.utf8[...]
        func skipSign() {
            if let first = bytes.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") { bytes = bytes.dropFirst() }
        }
        func digitRun() -> Bool {
            let run = bytes.prefix(while: isDigit).count
            bytes = bytes.dropFirst(run)
            return run > 0
        }
        skipSign()
        guard digitRun() else { return false }
        if bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            guard digitRun() else { return false }
        }
        if let first = bytes.first, first == UInt8(ascii: "e") || first == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            skipSign()
            guard digitRun() else { return false }
        }
        return bytes.isEmpty
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D }
}

/// Text that is not the number a sysfs attribute should hold.
public struct SysfsNumberError: Error, Hashable, Sendable, CustomStringConvertible {
    public let text: String
    public let expected: String
    public init(text: String, expected: String) {
        self.text = text
        self.expected = expected
    }
    public var description: String { "'\(text.debugDescriptionTrimmed)' is not \(expected)" }
}

extension String {
    /// The text with control characters escaped and cut to 60 characters, for one log line.
    public var debugDescriptionTrimmed: String {
        let escaped = unicodeScalars.map { $0.value < 0x20 ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined()
        return escaped.count > 60 ? String(escaped.prefix(60)) + "…" : escaped
    }
}
