/// The command line of `sensorkit-wearable`, parsed without side effects.
public struct WearableEmulatorOptions: Equatable, Sendable {
    public struct Wearable: Equatable, Sendable {
        public enum Kind: String, Equatable, Sendable, CaseIterable {
            case strap, h10, verity
        }

        public var kind: Kind
        public var address: String?
        public var name: String?
    }

    public var directory: String?
    public var wearables: [Wearable] = []
    public var duration: Double?
    public var disconnectEvery: Double?
    public var clockResetAfter: Double?
    public var serverMTU: UInt16?
    /// Hostile: alternating good and undecodable PMD frames, this many pairs a second.
    public var floodUndecodable: Int?
    /// Also serve an emulated HCI controller in front of the wearables at this socket path.
    public var controller: String?
    public var help = false

    public static let usage = """
        usage: sensorkit-wearable --dir DIR [--profile strap|h10|verity [--address AA:BB:CC:DD:EE:FF] [--name NAME]]...
                                  [--duration SECONDS] [--disconnect-every SECONDS] [--clock-reset-after SECONDS]
                                  [--server-mtu BYTES] [--flood-undecodable PAIRS_PER_SECOND] [--controller PATH]

        Serves emulated BLE wearables in an emulated transport directory, the one sensorkitd reads
        with `[ble] transport = emulated:DIR` (docs/ble.md, "The emulated transport"): each wearable
        is DIR/ADDRESS.adv (its advertising data and scan response) beside the SEQPACKET socket
        DIR/ADDRESS.att, on which it answers ATT exactly as over the air.

          --dir DIR                 the directory (created if missing)
          --profile KIND            adds a wearable; repeat for several. Default: one h10.
                                      strap   Heart Rate Service: ~60-80 bpm with RR intervals, once a second
                                      h10     as strap, plus Polar PMD ECG: 130 Hz in µV, 73 samples a frame,
                                              and ACC: 50 Hz in mG, delta-compressed frames of 25 samples
                                      verity  Heart Rate Service (no RR) plus Polar PMD PPG: 55 Hz, 3 optical
                                              channels and ambient, delta-compressed frames; and PPI: a frame
                                              a second with that second's PP intervals
          --address ADDRESS         the address of the last --profile (default C0:FF:EE:00:00:01 strap,
                                    C0:FF:EE:00:00:10 h10, C0:FF:EE:00:00:20 verity; repeats count up)
          --name NAME               the advertised Complete Local Name of the last --profile
          --duration SECONDS        stop after this long (default: until SIGTERM or SIGINT)
          --disconnect-every SECONDS  drop the link from the wearable's side this often
          --clock-reset-after SECONDS the device clock restarts at 2019-01-01 after this long (an H10
                                    taken off its strap); PMD frames carry the reset time
          --server-mtu BYTES        the largest ATT MTU accepted (below 232 an H10 refuses ECG)
          --flood-undecodable N     hostile: while a PMD stream runs, N pairs a second of a good
                                    frame and one that does not decode (a partial sample)
          --controller PATH         also serve an emulated HCI controller at the SEQPACKET socket PATH
                                    (H4 packets, as an HCI user channel carries them) in front of the
                                    wearables: sensorkitd reaches them with `[ble] transport = hci-socket:PATH`
          --help                    this text

        On stop each wearable's .adv and .att disappear (out of range). Example:
          sensorkit-wearable --dir /run/sensorkit/emulated-ble --profile h10 --profile strap --name "HR Strap 7"
        """

    public struct Refusal: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    public static func parse(_ arguments: [String]) throws(Refusal) -> WearableEmulatorOptions {
        var options = WearableEmulatorOptions()
        var rest = arguments[...]
        func value(_ flag: String) throws(Refusal) -> String {
            guard let next = rest.popFirst() else { throw Refusal(description: "\(flag) needs a value") }
            return next
        }
        func seconds(_ flag: String) throws(Refusal) -> Double {
            let text = try value(flag)
            guard let number = Double(text), number.isFinite, number > 0, number <= 31_536_000 else {
                throw Refusal(description: "\(flag) wants seconds > 0, not \"\(text)\"")
            }
            return number
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--help", "-h": options.help = true
            case "--dir": options.directory = try value(flag)
            case "--profile":
                let text = try value(flag)
                guard let kind = Wearable.Kind(rawValue: text) else {
                    throw Refusal(description: "--profile wants strap, h10 or verity, not \"\(text)\"")
                }
                options.wearables.append(Wearable(kind: kind))
            case "--address", "--name":
                let text = try value(flag)
                guard !options.wearables.isEmpty else { throw Refusal(description: "\(flag) belongs after a --profile") }
                if flag == "--name" {
                    guard !text.isEmpty, text.utf8.count <= 29 else {
                        throw Refusal(description: "--name wants 1 to 29 bytes (it must fit the scan response)")
                    }
                    options.wearables[options.wearables.count - 1].name = text
                } else {
                    guard isAddress(text) else {
                        throw Refusal(description: "--address wants AA:BB:CC:DD:EE:FF, not \"\(text)\"")
                    }
                    options.wearables[options.wearables.count - 1].address = text.uppercased()
                }
            case "--duration": options.duration = try seconds(flag)
            case "--disconnect-every": options.disconnectEvery = try seconds(flag)
            case "--clock-reset-after": options.clockResetAfter = try seconds(flag)
            case "--server-mtu":
                let text = try value(flag)
                guard let mtu = UInt16(text), mtu >= 23, mtu <= 517 else {
                    throw Refusal(description: "--server-mtu wants 23…517, not \"\(text)\"")
                }
                options.serverMTU = mtu
            case "--flood-undecodable":
                let text = try value(flag)
                guard let pairs = Int(text), pairs >= 1, pairs <= 1_000_000 else {
                    throw Refusal(description: "--flood-undecodable wants 1…1000000 pairs a second, not \"\(text)\"")
                }
                options.floodUndecodable = pairs
            case "--controller":
                let text = try value(flag)
                guard text.hasPrefix("/"), text.utf8.count < 108 else {
                    throw Refusal(description: "--controller wants an absolute socket path under 108 bytes, not \"\(text)\"")
                }
                options.controller = text
            default:
                throw Refusal(description: "unknown argument \"\(flag)\"")
            }
        }
        if options.help { return options }
        guard options.directory?.isEmpty == false else { throw Refusal(description: "--dir DIR is required") }
        if options.wearables.isEmpty { options.wearables = [Wearable(kind: .h10)] }
        let addresses = options.profiles().map(\.address)
        guard Set(addresses).count == addresses.count else { throw Refusal(description: "two wearables share an address") }
        return options
    }

    /// The peripherals to serve: each kind's defaults, repeated kinds counting their address up.
    public func profiles() -> [EmulatedPeripheral.Profile] {
        var used: [Wearable.Kind: Int] = [:]
        return wearables.map { wearable in
            let repeatIndex = used[wearable.kind, default: 0]
            used[wearable.kind] = repeatIndex + 1
            var profile: EmulatedPeripheral.Profile
            switch wearable.kind {
            case .strap: profile = .strap()
            case .h10: profile = .h10()
            case .verity: profile = .veritySense()
            }
            if let address = wearable.address {
                profile.address = address
            } else if repeatIndex > 0 {
                profile.address =
                    String(profile.address.dropLast(2))
                    + hex(UInt8(truncatingIfNeeded: Int(UInt8(profile.address.suffix(2), radix: 16) ?? 0) + repeatIndex))
            }
            if let name = wearable.name { profile.name = name }
            return profile
        }
    }

    static func isAddress(_ text: String) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        return parts.count == 6 && parts.allSatisfy { $0.count == 2 && $0.allSatisfy { $0.isASCII && $0.isHexDigit } }
    }

    private func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return byte < 0x10 ? "0" + digits : digits
    }
}
