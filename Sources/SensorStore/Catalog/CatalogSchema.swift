// The catalog's tables and how a database moves from one schema version to the next. The
// version lives in the one-row table `schema_version`; each migration runs in the transaction
// that bumps it, so a crash mid-migration leaves the old version intact.

enum CatalogSchema {
    /// Migration N takes a database from version N to N + 1. Append, never edit a shipped step.
    static let migrations: [String] = [
        // 0 → 1: the first catalog.
        """
        CREATE TABLE devices (
            id INTEGER PRIMARY KEY,
            identifier TEXT NOT NULL UNIQUE
        );
        CREATE TABLE streams (
            id INTEGER PRIMARY KEY,
            descriptor TEXT NOT NULL UNIQUE,         -- canonical JSON of StreamDescriptor
            sensor TEXT NOT NULL,
            device INTEGER NOT NULL REFERENCES devices(id),
            max_chunk_span INTEGER NOT NULL DEFAULT 0 -- widest (max_time - min_time) of its chunks
        );
        CREATE INDEX streams_by_sensor ON streams(sensor, device);
        CREATE TABLE boots (
            id INTEGER PRIMARY KEY,
            boot_id TEXT NOT NULL UNIQUE,
            anchor INTEGER NOT NULL                  -- SR ns at which this boot's CLOCK_BOOTTIME was 0
        );
        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY,
            stream INTEGER NOT NULL REFERENCES streams(id),
            boot INTEGER NOT NULL REFERENCES boots(id),
            tier INTEGER NOT NULL,                   -- 0: piece of an open chunk, 1: sealed
            min_time INTEGER NOT NULL,               -- SR ns
            max_time INTEGER NOT NULL,
            sample_count INTEGER NOT NULL,
            byte_count INTEGER NOT NULL,
            bytes BLOB NOT NULL                      -- ChunkCodec format, last so scans skip it
        );
        CREATE INDEX chunks_by_time ON chunks(stream, min_time);
        CREATE TABLE deletion_records (
            id INTEGER PRIMARY KEY,
            sensor TEXT NOT NULL,
            device TEXT NOT NULL,
            start_time INTEGER NOT NULL,             -- SR ns
            end_time INTEGER NOT NULL,
            reason INTEGER NOT NULL                  -- SRDeletionReason raw value
        );
        CREATE INDEX deletion_records_by_time ON deletion_records(sensor, device, end_time);
        CREATE TABLE apps (
            id INTEGER PRIMARY KEY,
            bundle_id TEXT NOT NULL UNIQUE
        );
        CREATE TABLE consent (
            app INTEGER NOT NULL REFERENCES apps(id),
            sensor TEXT NOT NULL,
            status INTEGER NOT NULL,                 -- SRAuthorizationStatus raw value
            decided_at INTEGER NOT NULL,             -- SR ns
            PRIMARY KEY (app, sensor)
        );
        CREATE TABLE stakes (
            app INTEGER NOT NULL REFERENCES apps(id),
            sensor TEXT NOT NULL,
            first_start INTEGER NOT NULL,            -- SR ns of the app's first startRecording
            active INTEGER NOT NULL,
            PRIMARY KEY (app, sensor)
        );
        """,
        // 1 → 2: chunks may be in ChunkCodec format 2 (`Predictor.receiveRuns`). Nothing to
        // convert — format 2 reads format 1 — but a build that knows only format 1 must refuse
        // this database (`newerSchema`) instead of dropping format-2 chunks as corrupt.
        "-- chunk format 2",
        // 2 → 3: the streams that are recording (docs/store.md, crash contract). A row is written
        // with a run's first samples and removed when the run stops or the store closes, so a row
        // found at open is a run that a crash or power cut ended. (IF NOT EXISTS: a test rewinds
        // the version of a current database.)
        """
        CREATE TABLE IF NOT EXISTS live_streams (
            stream INTEGER PRIMARY KEY REFERENCES streams(id),
            since INTEGER NOT NULL                   -- SR ns of the run's first sample
        );
        """,
        // 3 → 4: each chunk's earliest and latest receive time (SR ns), so a query knows without
        // decoding whether any of its samples was received inside the hold or before an app's
        // first start. NULL for chunks written before: such a chunk is decoded and checked
        // sample by sample.
        """
        ALTER TABLE chunks ADD COLUMN min_receive INTEGER;
        ALTER TABLE chunks ADD COLUMN max_receive INTEGER;
        """,
        // 4 → 5: an ECG stream's `sessionStart` is SR ns, as an `.instant` column; the values
        // are converted by `conversions[4]`.
        "-- ECG sessionStart as SR ns",
        // 5 → 6: when each stream was registered (SR ns), so the day picture can tell time before
        // a stream existed from time it lost. NULL for streams registered before: their earliest
        // chunk stands in. The column is added by `conversions[5]`, which skips it when present (a
        // test rewinds the version of a current database; SQLite has no ADD COLUMN IF NOT EXISTS).
        "-- streams.created",
        // 6 → 7: the last generation of the hand-over journal folded into the catalog (docs/store.md,
        // "The hand-over journal"): written in the transaction of each fold, so after a crash the
        // journal's records of later generations are exactly the samples the catalog lacks.
        """
        CREATE TABLE IF NOT EXISTS journal_folds (
            generation INTEGER NOT NULL
        );
        """,
    ]

    /// Migrations that rewrite stored values, which SQL cannot: step N's runs right after the
    /// SQL of migration N, in the same transaction.
    static let conversions: [Int64: @Sendable (SQLiteDatabase) throws -> Void] = [
        4: SessionStartMigration.run,
        5: { db in
            if try db.scalar("SELECT count(*) FROM pragma_table_info('streams') WHERE name = 'created'") == 0 {
                try db.execute("ALTER TABLE streams ADD COLUMN created INTEGER")
            }
        },
    ]

    static var currentVersion: Int64 { Int64(migrations.count) }

    /// Brings the database to `currentVersion`. A database from a newer build is refused rather
    /// than guessed at.
    static func migrate(_ db: SQLiteDatabase) throws {
        try db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        var version = try db.scalar("SELECT version FROM schema_version") ?? 0
        guard version <= currentVersion else { throw StoreError.newerSchema(found: version, supported: currentVersion) }
        while version < currentVersion {
            let step = migrations[Int(version)]
            let next = version + 1
            try db.transaction {
                try db.execute(step)
                try conversions[version]?(db)
                try db.execute("DELETE FROM schema_version")
                try db.execute("INSERT INTO schema_version (version) VALUES (\(next))")
            }
            version = next
        }
    }
}
