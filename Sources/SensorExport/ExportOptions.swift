import SensorKitModel

/// The command line of sensorkit-export (docs/export.md). Parsing is pure: the words and the
/// environment come in, options or a usage error come out.
public struct ExportOptions: Sendable, Equatable {
    /// libpq connection string or URI; empty: the `PG*` variables.
    public var database = ""
    public var once = false
    /// Between passes in follow mode.
    public var interval: Int64 = 60_000_000_000
    /// Sensor names or raw values; empty: every sensor the app is entitled to.
    public var sensors: [String] = []
    /// The daemon's hold, and how much later than the hold to fetch up to (docs/export.md, "Lag").
    public var hold: Int64 = 86_400_000_000_000
    public var lag: Int64 = 300_000_000_000
    /// Rows per transaction (at most; a transaction also ends where a fetch does).
    public var commitRows = 100_000
    /// Attempts of a failing pass before `--once` gives up (follow mode retries for ever).
    public var retries = 8
    /// First and longest wait between attempts (doubling in between).
    public var retryDelay: Int64 = 1_000_000_000
    public var maxRetryDelay: Int64 = 60_000_000_000
    /// This recording host's stable id; nil: `/etc/machine-id`.
    public var hostID: String?
    public var socket: String?
    public var app: String?
    public var verbose = false
    public var help = false

    public static let defaultApp = "org.sensorkitd.export"

    public static let usage = """
        Usage: sensorkit-export [--once] [--database CONNINFO] [OPTIONS]

        Copies the sensor data sensorkitd has released (after its hold) into PostgreSQL, exactly
        once: a study app of its own (apps.d/org.sensorkitd.export) that fetches through the
        reader socket like any other, and writes one table per sensor family (docs/export.md).
        Without --once it keeps following: a pass every --interval, picking up newly released data.

        Database:
          --database CONNINFO   libpq connection string or URI ("host=db.lab dbname=study user=rig7"
                                or "postgresql://rig7@db.lab/study"); default: the PG* variables
                                (PGHOST, PGDATABASE, PGUSER, PGSSLMODE, PGSERVICE, ...). The password
                                never goes here (a CONNINFO with a password is refused): use
                                ~/.pgpass, PGPASSFILE, or PGPASSWORD in the environment.
                                $SENSORKIT_EXPORT_DATABASE is read when --database is absent.
        What and when:
          --once                one pass, then exit (cron, systemd timer); exit 1 if it failed
          --interval DURATION   between passes when following (default 60s)
          --sensors S1,S2       sensors by name (accelerometer, ambientLightSensor, heartRate, ...);
                                default: every sensor the app is entitled to
          --hold DURATION       the daemon's hold (default 24h, as sensorkitd.conf's [store] hold)
          --lag DURATION        fetch only up to now - hold - lag (default 5m), so samples that reach
                                the daemon late are still released when fetched
          --commit-rows N       rows per transaction at most (default 100000)
        Retries:
          --retries N           attempts of a failing pass with --once (default 8); following
                                retries for ever
          --retry-delay DURATION, --max-retry-delay DURATION
                                first and longest wait between attempts (default 1s, 60s; doubling)
        Identity:
          --host-id ID          this host's id in the devices table (default: /etc/machine-id)
          --app BUNDLE-ID       the app identity (default org.sensorkitd.export, or $SENSORKIT_APP)
          --socket PATH         sensorkitd's socket (default $SENSORKIT_SOCKET or
                                /run/sensorkit/sensorkitd.sock)
          --verbose             a line per commit and per failed attempt
          -h, --help            this text

        DURATION: 250ms, 90s, 5m, 24h, 7d. Exit status: 0 success, 1 a pass failed after its
        retries, 2 bad usage.
        """

    public struct UsageError: Error, CustomStringConvertible, Equatable {
        public var description: String
        public init(description: String) { self.description = description }
    }

    public init() {}

    public static func parse(_ words: [String], environment: [String: String]) throws(UsageError) -> ExportOptions {
        var options = ExportOptions()
        options.database = environment["SENSORKIT_EXPORT_DATABASE"] ?? ""
        var iterator = words.makeIterator()
        func value(_ flag: String) throws(UsageError) -> String {
            guard let next = iterator.next() else { throw UsageError(description: "\(flag) needs a value") }
            return next
        }
        func duration(_ flag: String) throws(UsageError) -> Int64 {
            let text = try value(flag)
            guard let nanoseconds = DurationText.nanoseconds(text) else {
                throw UsageError(description: "\(flag): \(text) is not a duration (250ms, 90s, 5m, 24h, 7d)")
            }
            return nanoseconds
        }
        func count(_ flag: String, _ range: ClosedRange<Int>) throws(UsageError) -> Int {
            let text = try value(flag)
            guard let number = Int(text), range.contains(number) else {
                throw UsageError(description: "\(flag): \(text) is not a whole number in \(range.lowerBound)…\(range.upperBound)")
            }
            return number
        }
        while let word = iterator.next() {
            switch word {
            case "-h", "--help": options.help = true
            case "--once": options.once = true
            case "--verbose": options.verbose = true
            case "--database": options.database = try value(word)
            case "--interval": options.interval = try duration(word)
            case "--sensors": options.sensors = try value(word).split(separator: ",").map { $0.trimmingSpaces }
            case "--hold": options.hold = try duration(word)
            case "--lag": options.lag = try duration(word)
            case "--commit-rows": options.commitRows = try count(word, 1...10_000_000)
            case "--retries": options.retries = try count(word, 1...1_000_000)
            case "--retry-delay": options.retryDelay = try duration(word)
            case "--max-retry-delay": options.maxRetryDelay = try duration(word)
            case "--host-id": options.hostID = try value(word)
            case "--app": options.app = try value(word)
            case "--socket": options.socket = try value(word)
            default: throw UsageError(description: "unknown option \(word) (see --help)")
            }
        }
        if options.hostID?.isEmpty == true { throw UsageError(description: "--host-id must not be empty") }
        if options.interval <= 0 { throw UsageError(description: "--interval must be longer than 0") }
        return options
    }
}

extension Substring {
    var trimmingSpaces: String { String(self).trimmingSpaces }
}
