import SensorKitModel

/// Consent decisions, pending consent requests and recording stakes: the small, rarely changing
/// control state of the reader API (docs/protocol.md §3.3), kept in memory by `ReaderService` and
/// persisted through `ControlStorage` (the store's catalog tables) on every change, so stakes and
/// decisions survive daemon restarts. A value type; `ReaderService` owns the one instance.
public struct ControlLedger: Codable, Hashable, Sendable {
    public struct Key: Codable, Hashable, Sendable, Comparable {
        public var app: String
        public var sensor: SRSensor
        public init(app: String, sensor: SRSensor) {
            self.app = app
            self.sensor = sensor
        }
        public static func < (a: Key, b: Key) -> Bool { (a.app, a.sensor.rawValue) < (b.app, b.sensor.rawValue) }
    }

    public struct Decision: Codable, Hashable, Sendable {
        public var status: SRAuthorizationStatus
        /// SR ns of the decision.
        public var decidedAt: Int64
        /// Who decided: a uid, or "config" for an administrator's pre-grant.
        public var decidedBy: String
    }

    public struct Stake: Codable, Hashable, Sendable {
        /// SR ns of the app's first `startRecording` for the sensor: it sees data from then on.
        public var firstStart: Int64
        public var active: Bool
    }

    public private(set) var decisions: [Key: Decision] = [:]
    /// Sensors an app asked for and nobody has answered yet.
    public private(set) var pending: Set<Key> = []
    public private(set) var stakes: [Key: Stake] = [:]

    public init() {}

    public func status(_ key: Key) -> SRAuthorizationStatus { decisions[key]?.status ?? .notDetermined }

    public mutating func request(_ key: Key) { if decisions[key] == nil { pending.insert(key) } }

    public mutating func decide(_ key: Key, granted: Bool, at time: Int64, by who: String) {
        decisions[key] = Decision(status: granted ? .authorized : .denied, decidedAt: time, decidedBy: who)
        pending.remove(key)
        if !granted, var stake = stakes[key] {
            stake.active = false  // consent withdrawn: the app's stake goes with it
            stakes[key] = stake
        }
    }

    /// Adds or renews a stake; the first start time is kept forever.
    public mutating func startRecording(_ key: Key, at time: Int64) {
        let first = stakes[key]?.firstStart ?? time
        stakes[key] = Stake(firstStart: first, active: true)
    }

    public mutating func stopRecording(_ key: Key) {
        if var stake = stakes[key] {
            stake.active = false
            stakes[key] = stake
        }
    }

    /// Sensors with at least one active stake: the ones that must be recording.
    public var sensorsToRecord: Set<SRSensor> {
        Set(stakes.filter { $0.value.active }.map(\.key.sensor))
    }

    /// Puts back a stake read from storage.
    public mutating func restoreStake(_ key: Key, firstStart: Int64, active: Bool) {
        stakes[key] = Stake(firstStart: firstStart, active: active)
    }
}

/// One change of the ledger to keep.
public enum ControlWrite: Sendable {
    /// `notDetermined` records a pending request.
    case consent(ControlLedger.Key, SRAuthorizationStatus, at: Int64)
    case stake(ControlLedger.Key, active: Bool, at: Int64)
}

/// Where the ledger is kept (the store's apps/consent/stakes tables). The synchronous calls may
/// block on disk and wait for the store's writer: they are for start-up. `ReaderService`'s control
/// queue only uses `persist`, which never waits.
public protocol ControlStorage: Sendable {
    func loadLedger() throws -> ControlLedger
    /// `notDetermined` records a pending request.
    func saveConsent(_ key: ControlLedger.Key, status: SRAuthorizationStatus, at time: Int64) throws
    func saveStake(_ key: ControlLedger.Key, active: Bool, at time: Int64) throws
    /// Saves `writes` in order, after every write asked for before, and returns at once; stops at
    /// the first failure. `done` (on no particular queue) gets how many were saved and that failure.
    func persist(_ writes: [ControlWrite], done: @escaping @Sendable (_ saved: Int, _ failure: (any Error)?) -> Void)
}
