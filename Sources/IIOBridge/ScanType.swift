import SensorKitModel

/// How one scan element is stored in a buffered scan: the parsed `scan_elements/<channel>_type`
/// attribute, `[be|le]:[s|u]<realbits>/<storagebits>[X<repeat>][>><shift>]` (kernel
/// `iio_show_fixed_type`; docs/iio.md §12.5). Examples: `le:s12/16>>4` (two bytes,
/// little-endian, shift right 4, keep 12 bits, sign-extend), `le:u32/32X2>>0` (two 32-bit values).
///
/// Pure value; parsing never touches sysfs.
public struct ScanType: Hashable, Sendable, CustomStringConvertible {
    public enum Endianness: String, Hashable, Sendable {
        case big = "be", little = "le"
    }

    public let endianness: Endianness
    public let isSigned: Bool
    /// Bits that carry the value, after the shift.
    public let realBits: Int
    /// Bits the value occupies in the scan: 8, 16, 32 or 64.
    public let storageBits: Int
    /// Values of this element stored back to back (`X<repeat>`); 1 when absent.
    public let repeatCount: Int
    /// Right shift applied to the stored word before masking to `realBits`.
    public let shift: Int

    /// Makes a type, checking the invariants the kernel guarantees; a violation is a bug of ours
    /// (or of a test), so it traps. Text from sysfs goes through `init(parsing:)` instead.
    public init(
        endianness: Endianness, isSigned: Bool, realBits: Int, storageBits: Int,
        repeatCount: Int = 1, shift: Int = 0
    ) {
        precondition(
            Self.problem(
                realBits: realBits, storageBits: storageBits, repeatCount: repeatCount,
                shift: shift) == nil, "invalid scan type")
        self.endianness = endianness
        self.isSigned = isSigned
        self.realBits = realBits
        self.storageBits = storageBits
        self.repeatCount = repeatCount
        self.shift = shift
    }

    /// Bytes of one stored value.
    public var storageBytes: Int { storageBits / 8 }

    /// Bytes of the whole element (all repeats); the kernel also aligns the element to this size
    /// (`iio_storage_bytes_for_si`).
    public var elementBytes: Int { storageBytes * repeatCount }

    /// The canonical text, as the kernel prints it (`>>shift` always present, `X` only when
    /// repeating).
    public var description: String {
        let repeatText = repeatCount > 1 ? "X\(repeatCount)" : ""
        return "\(endianness.rawValue):\(isSigned ? "s" : "u")\(realBits)/\(storageBits)\(repeatText)>>\(shift)"
    }

    /// Parses the `_type` attribute's text; surrounding white space (the kernel's trailing `\n`)
    /// is ignored. Throws `ScanTypeError` naming what is wrong.
    public init(parsing text: some StringProtocol) throws(ScanTypeError) {
        let trimmed = Array(text.utf8.drop { Self.isSpace($0) }.reversed().drop { Self.isSpace($0) }.reversed())
        var cursor = ByteReader(trimmed[...])
        let original = String(decoding: trimmed, as: UTF8.self)

        let endianText = String(decoding: cursor.take(upTo: 2), as: UTF8.self)
        guard let endianness = Endianness(rawValue: endianText), cursor.skip(":".utf8) else {
            throw ScanTypeError(text: original, reason: "expected 'be:' or 'le:' at the start")
        }
        guard let signByte = cursor.next() else {
            throw ScanTypeError(text: original, reason: "missing sign after the endianness")
        }
        let isSigned: Bool
        switch signByte {
        case UInt8(ascii: "s"): isSigned = true
        case UInt8(ascii: "u"): isSigned = false
        case UInt8(ascii: "f"): throw ScanTypeError(text: original, reason: "floating-point scan elements are not supported")
        default: throw ScanTypeError(text: original, reason: "sign must be 's' or 'u'")
        }
        guard let realBits = cursor.decimal() else {
            throw ScanTypeError(text: original, reason: "missing the number of real bits")
        }
        guard cursor.skip("/".utf8), let storageBits = cursor.decimal() else {
            throw ScanTypeError(text: original, reason: "missing '/<storagebits>'")
        }
        var repeatCount = 1
        if cursor.skip("X".utf8) {
            guard let value = cursor.decimal() else {
                throw ScanTypeError(text: original, reason: "missing the repeat count after 'X'")
            }
            repeatCount = value
        }
        var shift = 0
        if cursor.skip(">>".utf8) {
            guard let value = cursor.decimal() else {
                throw ScanTypeError(text: original, reason: "missing the shift after '>>'")
            }
            shift = value
        }
        guard cursor.isAtEnd else {
            throw ScanTypeError(text: original, reason: "unexpected text after the type")
        }
        if let problem = Self.problem(
            realBits: realBits, storageBits: storageBits, repeatCount: repeatCount,
            shift: shift)
        {
            throw ScanTypeError(text: original, reason: problem)
        }
        self.init(
            endianness: endianness, isSigned: isSigned, realBits: realBits, storageBits: storageBits,
            repeatCount: repeatCount, shift: shift)
    }

    /// What makes these numbers impossible for a kernel scan element, or nil if they are fine.
    static func problem(realBits: Int, storageBits: Int, repeatCount: Int, shift: Int) -> String? {
        guard [8, 16, 32, 64].contains(storageBits) else { return "storage bits must be 8, 16, 32 or 64" }
        guard realBits >= 1, realBits <= storageBits else { return "real bits must be between 1 and the storage bits" }
        guard shift >= 0, shift + realBits <= storageBits else { return "shift + real bits exceed the storage bits" }
        guard repeatCount >= 1, repeatCount <= 1024 else { return "repeat count must be between 1 and 1024" }
        return nil
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D
    }
}

/// A `_type` attribute that is not a scan type this bridge can decode.
public struct ScanTypeError: Error, Hashable, Sendable, CustomStringConvertible {
    public let text: String
    public let reason: String
    public var description: String { "scan type '\(text)': \(reason)" }
}

extension ByteReader {
    /// A run of ASCII decimal digits (at most 9, so it cannot overflow) as a number; nil when
    /// there is none or a tenth digit follows.
    fileprivate mutating func decimal() -> Int? {
        var value = 0
        var digits = 0
        while let byte = peek(), byte >= 0x30, byte <= 0x39, digits < 9 {
            value = value * 10 + Int(byte - 0x30)
            _ = next()
            digits += 1
        }
        if digits == 9, let byte = peek(), byte >= 0x30, byte <= 0x39 { return nil }
        return digits > 0 ? value : nil
    }
}
