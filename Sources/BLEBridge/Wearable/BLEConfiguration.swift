import SensorKitModel

/// `[ble]`: how the BLE driver reaches wearables (docs/configuration.md, docs/ble.md).
public struct BLESettings: Hashable, Sendable {
    public enum Transport: Hashable, Sendable, CustomStringConvertible {
        /// Our own host on this adapter's HCI user channel (exclusive: the kernel's stack lets go).
        case hci(adapter: String)
        /// The same host on a controller reached through a Unix SEQPACKET socket of H4 packets
        /// (a controller proxy, or `sensorkit-wearable controller`).
        case hciSocket(path: String)
        /// Peripherals as `ADDR.adv` files and `ADDR.att` SEQPACKET sockets in this folder.
        case emulated(directory: String)
        /// Through bluetoothd on the system bus (D-Bus `org.bluez`), adapter `hci0`.
        case bluez(adapter: String)
        /// No `transport =`: `bluez` wherever bluetoothd is (on the system bus, or running), `hci`
        /// only where it is not at all (`BLETransportChoice` in the daemon).
        case automatic(adapter: String)

        public var description: String {
            switch self {
            case .hci(let adapter): "hci (\(adapter))"
            case .hciSocket(let path): "hci-socket:\(path)"
            case .emulated(let directory): "emulated:\(directory)"
            case .bluez(let adapter): "bluez (\(adapter))"
            case .automatic(let adapter): "bluez or hci (\(adapter), bluez wherever bluetoothd is)"
            }
        }
    }

    public var transport: Transport = .automatic(adapter: "hci0")

    public init(transport: Transport = .automatic(adapter: "hci0")) { self.transport = transport }

    /// `bluez`, `hci`, `hci-socket:/absolute/path` or `emulated:/absolute/folder`.
    public static func transport(parsing value: String) -> Transport? {
        if value == "hci" { return .hci(adapter: "hci0") }
        if value == "bluez" { return .bluez(adapter: "hci0") }
        if value.hasPrefix("hci-socket:") {
            let path = String(value.dropFirst("hci-socket:".count))
            guard path.hasPrefix("/"), path.count > 1 else { return nil }
            return .hciSocket(path: path)
        }
        guard value.hasPrefix("emulated:") else { return nil }
        let directory = String(value.dropFirst("emulated:".count))
        guard directory.hasPrefix("/"), directory.count > 1 else { return nil }
        return .emulated(directory: directory)
    }
}

/// `[wearable NAME]`: one wearable to record, found by address or by advertised name.
public struct WearableConfiguration: Hashable, Sendable {
    public enum Match: Hashable, Sendable {
        /// Upper-case `AA:BB:CC:DD:EE:FF`.
        case address(String)
        /// A shell pattern on the Complete Local Name, else the Shortened Local Name.
        case name(String)
    }

    /// The section's name (free text), used in logs and `sensorkitctl devices`.
    public var name: String
    public var match: Match?
    public var streams: [SRSensor] = []
    /// The line of the section header, for errors found once the section is complete.
    public var line: Int
    /// How long PMD frames wait for their clock fit: not read from the section but set by the
    /// daemon's profile (the lab profile hands each frame over on receipt, docs/live.md).
    public var frameHold = PMDStreamTimeline.Hold.fit

    public init(name: String, match: Match? = nil, streams: [SRSensor] = [], line: Int = 0) {
        self.name = name
        self.match = match
        self.streams = streams
        self.line = line
    }

    /// The sensors a wearable can record: the Heart Rate Service's two and every PMD stream.
    public static let streamSensors: [SRSensor] = [.heartRate, .onWristState] + PMDStreamKind.sensors

    /// Whether a scan report with this address and advertised name is this wearable.
    public func matches(address: String, advertisedName: String?) -> Bool {
        switch match {
        case .address(let wanted)?: return wanted == address.uppercased()
        case .name(let pattern)?: return advertisedName.map { ShellPattern.matches(pattern, $0) } ?? false
        case nil: return false
        }
    }

    /// `AA:BB:CC:DD:EE:FF` (either case) → upper case; nil when not six hex octets.
    public static func address(parsing value: String) -> String? {
        let octets = value.split(separator: ":", omittingEmptySubsequences: false)
        guard octets.count == 6, octets.allSatisfy({ $0.count == 2 && UInt8($0, radix: 16) != nil }) else { return nil }
        return value.uppercased()
    }
}

/// Shell-style patterns (`fnmatch` without flags): `*` any run, `?` one character, `[abc]`,
/// `[a-z]`, `[!abc]` one of (or none of) a set, `\x` the character x.
public enum ShellPattern {
    /// Whether `pattern` is well formed (every `[` closed, no trailing `\`).
    public static func isValid(_ pattern: String) -> Bool {
        let p = Array(pattern)
        var i = 0
        while i < p.count {
            switch p[i] {
            case "\\": guard i + 1 < p.count else { return false }; i += 2
            case "[": guard let end = setEnd(p, from: i) else { return false }; i = end + 1
            default: i += 1
            }
        }
        return true
    }

    public static func matches(_ pattern: String, _ text: String) -> Bool {
        let p = Array(pattern), t = Array(text)
        // Iterative with one backtrack point for the last `*` (linear-ish, no recursion).
        var pi = 0, ti = 0
        var star: (p: Int, t: Int)?
        while ti < t.count {
            if pi < p.count {
                switch p[pi] {
                case "*":
                    star = (pi, ti)
                    pi += 1
                    continue
                case "?":
                    pi += 1; ti += 1
                    continue
                case "[":
                    if let end = setEnd(p, from: pi), setContains(p, pi, end, t[ti]) {
                        pi = end + 1; ti += 1
                        continue
                    }
                case "\\" where pi + 1 < p.count:
                    if p[pi + 1] == t[ti] {
                        pi += 2; ti += 1
                        continue
                    }
                default:
                    if p[pi] == t[ti] {
                        pi += 1; ti += 1
                        continue
                    }
                }
            }
            guard let last = star else { return false }
            star = (last.p, last.t + 1)
            pi = last.p + 1
            ti = last.t + 1
        }
        while pi < p.count, p[pi] == "*" { pi += 1 }
        return pi == p.count
    }

    /// The index of the `]` closing the set that opens at `start`.
    private static func setEnd(_ p: [Character], from start: Int) -> Int? {
        var i = start + 1
        if i < p.count, p[i] == "!" { i += 1 }
        if i < p.count, p[i] == "]" { i += 1 }  // a leading ] is a member
        while i < p.count {
            if p[i] == "]" { return i }
            i += 1
        }
        return nil
    }

    private static func setContains(_ p: [Character], _ start: Int, _ end: Int, _ c: Character) -> Bool {
        var i = start + 1
        var negated = false
        if p[i] == "!" { negated = true; i += 1 }
        var found = false
        var first = true
        while i < end {
            if !first || p[i] != "]", i + 2 < end, p[i + 1] == "-" {
                if p[i] <= c && c <= p[i + 2] { found = true }
                i += 3
            } else {
                if p[i] == c { found = true }
                i += 1
            }
            first = false
        }
        return found != negated
    }
}
