import SensorKitModel

/// An app's decision about one sensor (docs/protocol.md §3.3).
public struct ConsentRecord: Hashable, Sendable {
    public let bundleID: String
    public let sensor: SRSensor
    public let status: SRAuthorizationStatus
    /// SR ns of the decision.
    public let decidedAt: Int64
}

/// An app's recording stake in one sensor (docs/protocol.md §3.3). Stakes persist across restarts;
/// `firstStart` is when the app first started recording and bounds what it may fetch.
public struct StakeRecord: Hashable, Sendable {
    public let bundleID: String
    public let sensor: SRSensor
    /// SR ns of the app's first `startRecording` for this sensor.
    public let firstStart: Int64
    public let active: Bool
}

/// Apps, consent and stakes: small tables the daemon reads and writes through the writer's
/// connection. Every call waits for the writer thread and may block on disk I/O.
extension SensorStore {
    /// Adds an app (no-op when known).
    public func registerApp(_ bundleID: String) throws {
        try onWriter { writer in
            try writer.withTransaction { db in try Self.ensureApp(bundleID, db) }
        }
    }

    /// Every known app's bundle id, sorted.
    public func apps() throws -> [String] {
        try onWriter { writer in
            try writer.withTransaction { db in
                let query = try db.prepare("SELECT bundle_id FROM apps ORDER BY bundle_id")
                var result: [String] = []
                while try query.step() { result.append(query.string(0)) }
                return result
            }
        }
    }

    /// Records a consent decision (replacing an earlier one for the same app and sensor).
    public func setConsent(bundleID: String, sensor: SRSensor, status: SRAuthorizationStatus, decidedAt: Int64) throws {
        try onWriter { writer in
            try writer.withTransaction { db in
                let app = try Self.ensureApp(bundleID, db)
                let upsert = try db.prepare(
                    "INSERT INTO consent (app, sensor, status, decided_at) VALUES (?, ?, ?, ?) ON CONFLICT (app, sensor) DO UPDATE SET status = excluded.status, decided_at = excluded.decided_at"
                )
                try upsert.bind(1, app)
                try upsert.bind(2, sensor.rawValue)
                try upsert.bind(3, Int64(status.rawValue))
                try upsert.bind(4, decidedAt)
                try upsert.run()
            }
        }
    }

    /// The consent decisions of one app (all sensors), or of every app when `bundleID` is nil.
    public func consents(bundleID: String? = nil) throws -> [ConsentRecord] {
        try onWriter { writer in
            try writer.withTransaction { db in
                let query = try db.prepare(
                    """
                    SELECT apps.bundle_id, consent.sensor, consent.status, consent.decided_at FROM consent
                    JOIN apps ON apps.id = consent.app WHERE ?1 IS NULL OR apps.bundle_id = ?1
                    ORDER BY apps.bundle_id, consent.sensor
                    """)
                if let bundleID { try query.bind(1, bundleID) } else { try query.bindNull(1) }
                var result: [ConsentRecord] = []
                while try query.step() {
                    result.append(
                        ConsentRecord(
                            bundleID: query.string(0), sensor: SRSensor(query.string(1)),
                            status: SRAuthorizationStatus(rawValue: query.int(2)) ?? .notDetermined, decidedAt: query.int64(3)))
                }
                return result
            }
        }
    }

    /// Starts (`active: true`) or stops an app's stake in a sensor. The first start's time is kept
    /// for good; later starts only reactivate.
    public func setStake(bundleID: String, sensor: SRSensor, active: Bool, at time: Int64) throws {
        try onWriter { writer in
            try writer.withTransaction { db in
                let app = try Self.ensureApp(bundleID, db)
                let upsert = try db.prepare(
                    "INSERT INTO stakes (app, sensor, first_start, active) VALUES (?, ?, ?, ?) ON CONFLICT (app, sensor) DO UPDATE SET active = excluded.active"
                )
                try upsert.bind(1, app)
                try upsert.bind(2, sensor.rawValue)
                try upsert.bind(3, time)
                try upsert.bind(4, active ? 1 : 0)
                try upsert.run()
            }
        }
    }

    /// Stakes, filtered by app and/or sensor (nil: any).
    public func stakes(bundleID: String? = nil, sensor: SRSensor? = nil) throws -> [StakeRecord] {
        try onWriter { writer in
            try writer.withTransaction { db in
                let query = try db.prepare(
                    """
                    SELECT apps.bundle_id, stakes.sensor, stakes.first_start, stakes.active FROM stakes
                    JOIN apps ON apps.id = stakes.app
                    WHERE (?1 IS NULL OR apps.bundle_id = ?1) AND (?2 IS NULL OR stakes.sensor = ?2)
                    ORDER BY apps.bundle_id, stakes.sensor
                    """)
                if let bundleID { try query.bind(1, bundleID) } else { try query.bindNull(1) }
                if let sensor { try query.bind(2, sensor.rawValue) } else { try query.bindNull(2) }
                var result: [StakeRecord] = []
                while try query.step() {
                    result.append(
                        StakeRecord(
                            bundleID: query.string(0), sensor: SRSensor(query.string(1)), firstStart: query.int64(2),
                            active: query.int64(3) != 0))
                }
                return result
            }
        }
    }

    /// The sensors some app holds an active stake in: the ones that should be recording.
    public func sensorsWithActiveStakes() throws -> Set<SRSensor> {
        Set(try stakes().filter(\.active).map(\.sensor))
    }

    private static func ensureApp(_ bundleID: String, _ db: SQLiteDatabase) throws -> Int64 {
        let insert = try db.prepare("INSERT OR IGNORE INTO apps (bundle_id) VALUES (?)")
        try insert.bind(1, bundleID)
        try insert.run()
        let select = try db.prepare("SELECT id FROM apps WHERE bundle_id = ?")
        try select.bind(1, bundleID)
        guard try select.step() else { throw StoreError.unreadableCatalog("app \(bundleID)") }
        return select.int64(0)
    }
}
