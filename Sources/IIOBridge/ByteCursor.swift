/// A forward-only reader over ASCII bytes, for the small grammars of sysfs values.
struct ByteCursor {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { position == bytes.count }

    mutating func next() -> UInt8? {
        guard position < bytes.count else { return nil }
        defer { position += 1 }
        return bytes[position]
    }

    /// The next `count` bytes as text (fewer at the end), consumed.
    mutating func take(_ count: Int) -> String {
        let end = min(bytes.count, position + count)
        defer { position = end }
        return String(decoding: bytes[position..<end], as: UTF8.self)
    }

    /// Consumes `literal` if it comes next.
    mutating func skip(_ literal: String) -> Bool {
        let wanted = Array(literal.utf8)
        guard bytes.count - position >= wanted.count, Array(bytes[position..<position + wanted.count]) == wanted else {
            return false
        }
        position += wanted.count
        return true
    }

    /// A run of decimal digits (at most 9, so it cannot overflow) as a number.
    mutating func number() -> Int? {
        var value = 0
        var digits = 0
        while position < bytes.count, bytes[position] >= 0x30, bytes[position] <= 0x39, digits < 9 {
            value = value * 10 + Int(bytes[position] - 0x30)
            position += 1
            digits += 1
        }
        if digits == 9, position < bytes.count, bytes[position] >= 0x30, bytes[position] <= 0x39 { return nil }
        return digits > 0 ? value : nil
    }
}
