import Foundation

/// A request from a client (docs/protocol.md §3). One flat JSON object: `id` and `op` always,
/// the other fields as the operation needs them. Times are SR nanoseconds (integers), so nothing
/// is rounded on the way.
public struct WireRequest: Codable, Hashable, Sendable {
    public enum Operation: String, Codable, Sendable, CaseIterable {
        // Study apps (the SensorKit client).
        case hello, status, requestAuthorization, startRecording, stopRecording, fetchDevices, fetch
        /// A live subscription (docs/protocol.md §3.9): an app's, or an administrator's in an admin session.
        case subscribe
        case cancel, ack
        // People and scripts (sensorkitctl).
        case daemonStatus, sensors, devices, apps, consentList, consentDecide, stakes, health
        // The session agent (`sensorkit-session`, docs/device-usage.md).
        case agent, usage
        // The participant (a study's Consenters, root).
        case deleteData
        /// Push events when an app's consent requests become pending or are answered (docs/protocol.md §3.10).
        case watchConsent

        /// The operations of docs/protocol.md §3.5.
        public var isAdministrative: Bool {
            switch self {
            case .daemonStatus, .sensors, .devices, .apps, .consentList, .consentDecide, .stakes, .health, .deleteData,
                .watchConsent:
                return true
            default: return false
            }
        }

        /// The administrative operations an app session may call (docs/protocol.md §1.3): the one
        /// that shows no app's consent or stakes, nor what records or which devices are attached
        /// (`daemonStatus` without those fields). Every other one is refused with 104.
        public static let allowedInAppSessions: Set<Operation> = [.daemonStatus]
    }

    public var id: UInt32
    /// The operation's name; unknown names are answered with `unknownOperation`, not dropped.
    public var op: String
    /// Protocol version, on `hello`.
    public var v: Int?
    /// The bundle id the client acts as, on `hello`; absent for sensorkitctl's admin session.
    public var app: String?
    public var sensor: String?
    public var sensors: [String]?
    /// Device identifier (`SRDevice.identifier`), on `fetch`.
    public var device: String?
    /// Range `(from, to]` in SR nanoseconds, on `fetch`, `health` and `deleteData`.
    public var from: Int64?
    public var to: Int64?
    /// Batch frames the client accepts before acknowledging, on `fetch`.
    public var window: Int?
    /// Stored-chunk format versions the client decodes, on `fetch`: the daemon may then send
    /// `chunk` frames (docs/protocol.md §5.3). Absent: plain batches only.
    public var chunkFormats: [Int]?
    /// The request a `cancel` or `ack` refers to.
    public var target: UInt32?
    /// Batch frames acknowledged, on `ack`.
    public var batches: Int?
    /// Per-sensor decisions (sensor raw value → granted), on `consentDecide`.
    public var decisions: [String: Bool]?
    /// What the session agent observed, on `usage`.
    public var events: [WireUsageEvent]?

    public init(id: UInt32, op: Operation) {
        self.id = id
        self.op = op.rawValue
    }

    public var operation: Operation? { Operation(rawValue: op) }
}

/// Every error that crosses the socket, one stable table (docs/protocol.md §7). Codes 0–4 are SensorKit's
/// `SRError.Code`; 100 and up are the protocol's own.
public enum WireErrorCode: Int, Codable, Hashable, Sendable, CaseIterable {
    case invalidEntitlement = 0
    case noAuthorization = 1
    case dataInaccessible = 2
    case fetchRequestInvalid = 3
    case promptDeclined = 4
    case malformedRequest = 100
    case unsupportedVersion = 101
    case unknownOperation = 102
    case tooManyRequests = 103
    case notPermitted = 104
    case unknownApp = 105
    case unsupportedSensor = 106
    case internalError = 107
    case cancelled = 108
    /// The reply would exceed the daemon's frame limit (docs/protocol.md §4.1).
    case replyTooLarge = 109
    /// A fetch made no progress (no ack, nothing read) for the idle timeout (docs/protocol.md §6).
    case timedOut = 110
    /// A live subscriber fell so far behind that its buffer filled (docs/protocol.md §3.9): the
    /// subscription ended, and the final reply's `missed` says what it did not get.
    case overrun = 111

    /// The SensorKit code a client library reports for this wire code.
    public var srErrorCode: SRError.Code {
        switch self {
        case .invalidEntitlement: return .invalidEntitlement
        case .noAuthorization, .notPermitted, .unknownApp: return .noAuthorization
        case .fetchRequestInvalid: return .fetchRequestInvalid
        case .promptDeclined: return .promptDeclined
        case .dataInaccessible, .malformedRequest, .unsupportedVersion, .unknownOperation, .tooManyRequests,
            .unsupportedSensor, .internalError, .cancelled, .replyTooLarge, .timedOut, .overrun:
            return .dataInaccessible
        }
    }

    public init(_ code: SRError.Code) { self = WireErrorCode(rawValue: code.rawValue)! }
}

public struct WireError: Codable, Hashable, Sendable, Error, CustomStringConvertible {
    /// The code as this build knows it; a code from a newer daemon reads as `internalError`
    /// (its number stays in `rawCode`), so an unknown code never makes a reply unreadable.
    public var code: WireErrorCode
    public var rawCode: Int
    public var domain: String
    public var message: String

    public init(_ code: WireErrorCode, _ message: String) {
        self.code = code
        self.rawCode = code.rawValue
        self.domain = code.rawValue < 100 ? SRErrorDomain : "sensorkitd"
        self.message = message
    }

    private enum CodingKeys: String, CodingKey { case code, domain, message }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        rawCode = try container.decode(Int.self, forKey: .code)
        code = WireErrorCode(rawValue: rawCode) ?? .internalError
        domain = try container.decodeIfPresent(String.self, forKey: .domain) ?? "sensorkitd"
        message = try container.decodeIfPresent(String.self, forKey: .message) ?? ""
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(rawCode, forKey: .code)
        try container.encode(domain, forKey: .domain)
        try container.encode(message, forKey: .message)
    }

    public init(_ error: SRError) { self.init(WireErrorCode(error.code), error.message) }

    /// As the SensorKit error a study app sees.
    public var srError: SRError { SRError(code.srErrorCode, message: message) }
    public var description: String { "\(domain) \(code.rawValue) (\(code)): \(message)" }
}

/// The daemon's timeline as `hello` reports it, so clients compute the same SR times.
public struct WireTimeline: Codable, Hashable, Sendable {
    public var origin: Int64
    public var boot: String
    public var anchor: Int64
    public init(origin: Int64, boot: String, anchor: Int64) {
        self.origin = origin
        self.boot = boot
        self.anchor = anchor
    }
}

/// A device as the wire carries it (`SRDevice`'s fields).
public struct WireDevice: Codable, Hashable, Sendable {
    public var identifier, name, model, systemName, systemVersion, productType: String

    public init(_ device: SRDevice) {
        identifier = device.identifier
        name = device.name
        model = device.model
        systemName = device.systemName
        systemVersion = device.systemVersion
        productType = device.productType
    }

    public var device: SRDevice {
        SRDevice(
            identifier: identifier, name: name, model: model, systemName: systemName,
            systemVersion: systemVersion, productType: productType)
    }
}

/// One sensor's state for one app (`status`, `sensorkitctl status`).
public struct WireSensorState: Codable, Hashable, Sendable {
    public var sensor: String
    public var authorizationStatus: Int
    /// Whether this app holds a recording stake.
    public var recording: Bool
    /// SR ns of this app's first `startRecording` (it sees data from then on).
    public var firstRecording: Int64?
    /// `sensors` replies only: whether a driver in this daemon can produce the sensor, and if not,
    /// why (docs/protocol.md §7). Absent from a daemon before these fields.
    public var recordable: Bool?
    public var unrecordableReason: String?
    public init(sensor: String, authorizationStatus: Int, recording: Bool, firstRecording: Int64?) {
        self.sensor = sensor
        self.authorizationStatus = authorizationStatus
        self.recording = recording
        self.firstRecording = firstRecording
    }
}

/// A pending or decided consent request, as the authorization sheet shows it.
public struct WireConsentRequest: Codable, Hashable, Sendable {
    public struct Item: Codable, Hashable, Sendable {
        public var sensor: String
        public var name: String
        public var description: String?
        public var required: Bool
        public var status: Int
        /// The app asked for this sensor (`requestAuthorization`) and nobody has decided yet.
        /// Optional on decoding: a daemon before this field sends none.
        public var pending: Bool?
        public init(sensor: String, name: String, description: String?, required: Bool, status: Int, pending: Bool? = nil) {
            self.sensor = sensor
            self.name = name
            self.description = description
            self.required = required
            self.status = status
            self.pending = pending
        }
    }
    public var app: String
    public var purpose: String?
    public var privacyPolicyURL: String?
    public var items: [Item]
    public init(app: String, purpose: String?, privacyPolicyURL: String?, items: [Item]) {
        self.app = app
        self.purpose = purpose
        self.privacyPolicyURL = privacyPolicyURL
        self.items = items
    }
}

/// A row of `sensorkitctl stakes`.
public struct WireStake: Codable, Hashable, Sendable {
    public var app: String
    public var sensor: String
    public var active: Bool
    public var firstRecording: Int64
    public init(app: String, sensor: String, active: Bool, firstRecording: Int64) {
        self.app = app
        self.sensor = sensor
        self.active = active
        self.firstRecording = firstRecording
    }
}

/// A row of `sensorkitctl apps`.
public struct WireApp: Codable, Hashable, Sendable {
    public var app: String
    public var purpose: String?
    public var entitledSensors: [String]
    public var users: [String]
    public var executable: String?
    public init(app: String, purpose: String?, entitledSensors: [String], users: [String], executable: String?) {
        self.app = app
        self.purpose = purpose
        self.entitledSensors = entitledSensors
        self.users = users
        self.executable = executable
    }
}

/// A recording source as `sensorkitctl devices` shows it (an IIO chip, a wearable).
public struct WireSource: Codable, Hashable, Sendable {
    public var sensor: String
    public var device: String
    public var source: String
    public var details: [String: String]
    /// True only while samples are being produced (not while waiting for hardware or failed).
    public var recording: Bool
    /// What capture is doing: `idle`, `recording`, `recording, degraded: …`, `failed: …`,
    /// `waiting for hardware: …` (`CaptureStatus`); absent from older daemons.
    public var state: String?
    public init(
        sensor: String, device: String, source: String, details: [String: String], recording: Bool,
        state: String? = nil
    ) {
        self.sensor = sensor
        self.device = device
        self.source = source
        self.details = details
        self.recording = recording
        self.state = state
    }
}

/// A reply or push event from the daemon (docs/protocol.md §4). Replies carry the request's `id`;
/// events carry `event` and no `id`. A request has exactly one final reply (`ok` or `error`);
/// a fetch's batches come before it.
public struct WireReply: Codable, Hashable, Sendable {
    public var id: UInt32?
    public var ok: Bool?
    public var error: WireError?
    public var event: String?

    public var version: Int?
    public var app: String?
    public var timeline: WireTimeline?
    public var sensor: String?
    public var states: [WireSensorState]?
    public var devices: [WireDevice]?
    /// Samples sent by a finished fetch.
    public var count: Int?
    /// Why a fetch returned nothing or less than asked (the hold, the window, the app's start).
    public var notice: String?
    public var consent: [WireConsentRequest]?
    public var stakes: [WireStake]?
    public var apps: [WireApp]?
    public var sources: [WireSource]?
    public var authorizationStatus: Int?
    public var info: [String: String]?
    /// `health` replies: per-stream rates, gaps and the store's budget.
    public var health: WireHealth?
    /// On a live subscription's `subscribed` and `gap` events: the subscription's request id.
    public var target: UInt32?
    /// On a `consentPending` event: the sensors of `app` waiting for a person's answer now
    /// (empty once every request is answered).
    public var sensors: [String]?
    /// On a `gap` event, and on the final reply of a subscription that fell behind (111): the
    /// samples the subscriber did not get, as a fetch range.
    public var missed: WireMissed?

    public init(id: UInt32? = nil, ok: Bool? = nil, error: WireError? = nil, event: String? = nil) {
        self.id = id
        self.ok = ok
        self.error = error
        self.event = event
    }

    public static func failure(_ id: UInt32?, _ error: WireError) -> WireReply {
        WireReply(id: id, error: error)
    }

    /// Push event names.
    public enum Event: String, Sendable {
        case authorizationChanged, recordingStarted, recordingStopped
        /// A live subscription is in place (`target`, `sensor`); `notice` says if nothing records it yet.
        case subscribed
        /// The source of a live subscription lost data (`target`, `missed` with its reason).
        case gap
        /// What `app` waits for a person to answer changed (`target`: the `watchConsent` request, `sensors`).
        case consentPending
    }
}

/// What a live subscriber did not get (docs/protocol.md §3.9): the samples of `sensor` on `device`
/// with sensor time in `(from, to]` (SR ns) — a fetch of that range returns those that were
/// recorded. `samples` counts the samples dropped for a subscriber that fell behind; `reason`
/// is the `SRDeletionReason` of a gap in the recording itself.
public struct WireMissed: Codable, Hashable, Sendable {
    public var sensor: String
    public var device: String
    public var from: Int64
    public var to: Int64
    public var samples: Int?
    public var reason: Int?
    public init(sensor: String, device: String, from: Int64, to: Int64, samples: Int? = nil, reason: Int? = nil) {
        self.sensor = sensor
        self.device = device
        self.from = from
        self.to = to
        self.samples = samples
        self.reason = reason
    }
}

/// JSON message frames, encoded and decoded one way everywhere.
public enum WireJSON {
    public static func frame(_ value: some Encodable) -> Frame {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding our own Codable types cannot fail (no floats that are NaN, no custom throws).
        let data = try! encoder.encode(value)
        return Frame(kind: .message, payload: Array(data))
    }

    public static func decode<T: Decodable>(_ type: T.Type, from payload: [UInt8]) throws -> T {
        try JSONDecoder().decode(type, from: Data(payload))
    }
}
