/// SipHash-2-4 (Aumasson and Bernstein, 2012): a pseudorandom function keyed with 128 bits, made
/// for short inputs — the keyed hash that turns identifying values (a phone number, a place's
/// grid cell) into digests no one without the key can relate to the value. Pure.
public struct SipHash24: Sendable {
    private let k0: UInt64
    private let k1: UInt64

    public init(k0: UInt64, k1: UInt64) {
        self.k0 = k0
        self.k1 = k1
    }

    /// The 64-bit digest of `bytes`.
    public func hash(_ bytes: [UInt8]) -> UInt64 {
        var v0: UInt64 = 0x736f_6d65_7073_6575 ^ k0
        var v1: UInt64 = 0x646f_7261_6e64_6f6d ^ k1
        var v2: UInt64 = 0x6c79_6765_6e65_7261 ^ k0
        var v3: UInt64 = 0x7465_6462_7974_6573 ^ k1
        func round() {
            v0 &+= v1
            v1 = rotated(v1, 13) ^ v0
            v0 = rotated(v0, 32)
            v2 &+= v3
            v3 = rotated(v3, 16) ^ v2
            v0 &+= v3
            v3 = rotated(v3, 21) ^ v0
            v2 &+= v1
            v1 = rotated(v1, 17) ^ v2
            v2 = rotated(v2, 32)
        }
        let whole = bytes.count / 8 * 8
        var index = 0
        while index < whole {
            var m: UInt64 = 0
            for byte in 0..<8 { m |= UInt64(bytes[index + byte]) << UInt64(8 * byte) }
            v3 ^= m
            round()
            round()
            v0 ^= m
            index += 8
        }
        var last = UInt64(truncatingIfNeeded: bytes.count) << 56
        for byte in 0..<(bytes.count - whole) { last |= UInt64(bytes[whole + byte]) << UInt64(8 * byte) }
        v3 ^= last
        round()
        round()
        v0 ^= last
        v2 ^= 0xff
        for _ in 0..<4 { round() }
        return v0 ^ v1 ^ v2 ^ v3
    }
}

@inline(__always) private func rotated(_ value: UInt64, _ count: UInt64) -> UInt64 {
    (value << count) | (value >> (64 - count))
}
