import SensorKitModel

/// The keyed hash unique contacts are counted with: a phone number goes in, 8 bytes come out,
/// and the key that made them lives in memory for one interval only (the recorder draws a new
/// one at each boundary), so digests of different intervals cannot be compared and none can be
/// turned back into a number without the key, which is never stored, logged or sent.
///
/// The hash is SipHash-2-4 (`SipHash24`), a keyed pseudorandom function: the role HMAC plays,
/// made for short inputs.
public struct ContactKey: Sendable {
    private let k0: UInt64
    private let k1: UInt64

    public init(k0: UInt64, k1: UInt64) {
        self.k0 = k0
        self.k1 = k1
    }

    /// A fresh key from `generator` (the system's `getrandom` in the daemon).
    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> ContactKey {
        ContactKey(k0: generator.next(), k1: generator.next())
    }

    /// A fresh key from the system's generator.
    public static func random() -> ContactKey {
        var system = SystemRandomNumberGenerator()
        return random(using: &system)
    }

    /// The digest of a remote party's number, after `ContactNumber.canonical`; nil when the
    /// number is empty (withheld: no contact to count).
    public func digest(number: String) -> ContactDigest? {
        let canonical = ContactNumber.canonical(number)
        guard !canonical.isEmpty else { return nil }
        return ContactDigest(value: siphash(canonical))
    }

    /// SipHash-2-4 of `bytes` (package-visible for its reference vectors).
    package func siphash(_ bytes: [UInt8]) -> UInt64 { SipHash24(k0: k0, k1: k1).hash(bytes) }
}

/// A contact as the interval accounting sees it: an opaque digest under one interval's key.
public struct ContactDigest: Hashable, Sendable {
    public let value: UInt64
    public init(value: UInt64) { self.value = value }
}

/// How a remote party's number is compared: two spellings of one number ("+44 7700 900123",
/// "+447700900123") are one contact.
public enum ContactNumber {
    /// Longest number kept (E.164 allows 15 digits; alphanumeric senders up to 11 characters).
    public static let maximumLength = 64

    /// The number's digits, a leading `+` kept; an alphanumeric sender ("BANK") as its letters
    /// upper-cased and its digits; everything else (spaces, dashes, brackets) dropped. Pure.
    public static func canonical(_ number: String) -> [UInt8] {
        var out: [UInt8] = []
        for byte in number.utf8.prefix(maximumLength * 4) {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"): out.append(byte)
            case UInt8(ascii: "a")...UInt8(ascii: "z"): out.append(byte - 32)
            case UInt8(ascii: "+") where out.isEmpty: out.append(byte)
            default: continue
            }
            if out.count == maximumLength { break }
        }
        return out == [UInt8(ascii: "+")] ? [] : out
    }
}
