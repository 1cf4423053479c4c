import Foundation
import LocationBridge
import SensorSystem

/// The agent's 128-bit place key, kept beside its own state (`$XDG_STATE_HOME/sensorkit/place-key`,
/// mode 0600, in a folder of mode 0700): with the same key a place keeps its identifier across
/// restarts, and without it an identifier says nothing about where the place is. The key never
/// leaves this file and the agent's memory.
enum PlaceKeyFile {
    /// Where the key lives for this environment; nil without `XDG_STATE_HOME` or `HOME` (absolute).
    static func path(environment: [String: String]) -> String? {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/sensorkit/place-key" }
        if let home = environment["HOME"], home.hasPrefix("/") { return home + "/.local/state/sensorkit/place-key" }
        return nil
    }

    /// The key at `path`, or a new one from `generator` written there first (a missing or
    /// damaged file is replaced: the places it named are new places from then on).
    static func load<G: RandomNumberGenerator>(_ path: String, using generator: inout G) throws(SystemError) -> PlaceKey {
        if let text = SystemFiles.readTrimmed(path), let (k0, k1) = parse(text) { return PlaceKey(k0: k0, k1: k1) }
        let (k0, k1) = (generator.next(), generator.next())
        let folder = (path as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(
            atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try SystemFiles.writeAtomically(path, contents: Array((hex(k0) + hex(k1) + "\n").utf8), mode: 0o600)
        return PlaceKey(k0: k0, k1: k1)
    }

    /// Two 64-bit halves from 32 hexadecimal digits.
    static func parse(_ text: String) -> (UInt64, UInt64)? {
        guard text.utf8.count == 32, text.utf8.allSatisfy({ $0 < 0x80 }) else { return nil }
        let digits = Array(text)
        guard let k0 = UInt64(String(digits[0..<16]), radix: 16), let k1 = UInt64(String(digits[16..<32]), radix: 16) else {
            return nil
        }
        return (k0, k1)
    }

    static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
