import Foundation

/// Device usage from logind, the compositor and the session's notifications (docs/device-usage.md):
/// one report per 15-minute interval aligned to wall-clock quarter hours, stored as rows that
/// share the interval's end as their time — one `report` row with the interval's totals, then one
/// `application` row per app in front and one `notification` row per app and event. The stored
/// and the wire columns are the same, mapped as they are; a client groups a batch's rows of one
/// time into one `SRDeviceUsageReport`.
public enum DeviceUsageFamily: SensorFamily {
    /// What a row holds.
    public enum Entry: Int, Sendable {
        case report = 0, application = 1, notification = 2
    }

    /// The stored and the wire columns alike.
    public enum Column: String, FamilyColumn {
        /// `Entry` raw value.
        case entry
        /// report: the interval's length, s.
        case duration
        /// report: counts, and the time unlocked (s).
        case screenWakes, unlocks, unlockDuration
        /// report: `UsageObservation` raw values.
        case wakeSource, unlockSource
        /// application, notification: the index of the category in `CategoryKey.allKnown`.
        case category
        /// application, notification: the desktop id (`DesktopIDCode`), all zero when unnamed.
        case app0, app1, app2, app3, app4, app5, app6, app7, app8
        /// application: time in front (s), text-input sessions, first use after the interval's start (s).
        case usageTime, textInputSessions, relativeStartTime
        /// notification: `SRDeviceUsageReport.NotificationUsage.Event` raw value, and how many.
        case event, events

        public static let appWords: [Column] = [.app0, .app1, .app2, .app3, .app4, .app5, .app6, .app7, .app8]
    }
    public typealias Stored = Column
    public typealias Wire = Column

    public static let layout = BatchLayout.deviceUsage
    public static let sensors: [SRSensor] = [.deviceUsageReport]
    public static let isLinear = true
    /// What every report's `version` starts with; the sources follow (`version(wakes:unlocks:)`).
    public static let versionPrefix = "linux-1"
    /// Notification events one row expands to at most (a damaged count never allocates without bound).
    public static let maximumEventsPerRow = 10_000

    /// How each stored column reads.
    public static func kind(_ column: Column) -> ColumnKind {
        switch column {
        case .duration, .unlockDuration, .usageTime, .relativeStartTime: .count(scale: 1e-9, offset: 0, unit: "s")
        default: .count("count")
        }
    }

    public static func mapping(_ stream: StoredStream<Stored>) throws(MissingStoredColumn) -> StoredMapping<Stored, Wire> {
        .linear(stream.copies())
    }

    /// `version` of a report counted from these sources.
    public static func version(wakes: UsageObservation, unlocks: UsageObservation) -> String {
        "\(versionPrefix) wakes=\(wakes.name) unlocks=\(unlocks.name)"
    }

    public static func results<Results: FetchResultBuilder>(_ batch: FamilyBatch<Wire>, into results: inout Results) {
        let t = batch.times
        var groups: [Range<Int>] = []
        var start = 0
        for i in batch.indices where i + 1 == batch.count || t[i + 1] != t[i] {
            groups.append(start..<(i + 1))
            start = i + 1
        }
        results.groups(groups) { rows in report(batch, rows: rows) }
    }

    static func report(_ batch: FamilyBatch<Wire>, rows: Range<Int>) -> SRDeviceUsageReport {
        let entry = batch[.entry]
        let category = batch[.category]
        let words = Column.appWords.map { batch[$0] }
        guard let totals = rows.first(where: { kind(entry[$0]) == .report }) else {
            return SRDeviceUsageReport(duration: 0, version: versionPrefix)
        }
        let duration = seconds(batch[.duration][totals])
        let start = batch.times[totals].subtractingSaturating(Int64(exactly: (duration * 1e9).rounded()) ?? 0)
        var applications: [SRDeviceUsageReport.CategoryKey: [SRDeviceUsageReport.ApplicationUsage]] = [:]
        var notifications: [SRDeviceUsageReport.CategoryKey: [SRDeviceUsageReport.NotificationUsage]] = [:]
        var ordinal = 0
        for row in rows {
            let key = categoryKey(category[row])
            let app = DesktopIDCode.decode(words.map { $0[row] })
            switch kind(entry[row]) {
            case .application:
                let sessions = KeyboardMetricsFamily.count(batch[.textInputSessions][row], atMost: 1_000)
                let usage = SRDeviceUsageReport.ApplicationUsage(
                    bundleIdentifier: app, usageTime: seconds(batch[.usageTime][row]),
                    reportApplicationIdentifier: "\(start).\(ordinal)",
                    textInputSessions: (0..<sessions).map {
                        SRTextInputSession(duration: 0, sessionType: .keyboard, sessionIdentifier: "\(start).\(ordinal).\($0)")
                    },
                    relativeStartTime: seconds(batch[.relativeStartTime][row]))
                ordinal += 1
                applications[key, default: []].append(usage)
            case .notification:
                let event =
                    SRDeviceUsageReport.NotificationUsage.Event(rawValue: KeyboardMetricsFamily.count(batch[.event][row]))
                    ?? .unknown
                let count = KeyboardMetricsFamily.count(batch[.events][row], atMost: maximumEventsPerRow)
                notifications[key, default: []].append(
                    contentsOf: (0..<count).map { _ in .init(bundleIdentifier: app, event: event) })
            case .report, nil: continue
            }
        }
        return SRDeviceUsageReport(
            duration: duration, applicationUsageByCategory: applications, notificationUsageByCategory: notifications,
            webUsageByCategory: [:], totalScreenWakes: KeyboardMetricsFamily.count(batch[.screenWakes][totals]),
            totalUnlocks: KeyboardMetricsFamily.count(batch[.unlocks][totals]),
            totalUnlockDuration: seconds(batch[.unlockDuration][totals]),
            version: version(
                wakes: observation(batch[.wakeSource][totals]), unlocks: observation(batch[.unlockSource][totals])))
    }

    /// The category of a stored index; `miscellaneous` for anything else a damaged store holds.
    public static func categoryKey(_ index: Double) -> SRDeviceUsageReport.CategoryKey {
        let known = SRDeviceUsageReport.CategoryKey.allKnown
        guard index.isFinite, index >= 0, index < Double(known.count) else { return .miscellaneous }
        return known[Int(index)]
    }

    /// The stored index of a category (its place in Apple's header order).
    public static func categoryIndex(_ key: SRDeviceUsageReport.CategoryKey) -> Int64 {
        Int64(SRDeviceUsageReport.CategoryKey.allKnown.firstIndex(of: key) ?? 23)
    }

    static func kind(_ value: Double) -> Entry? {
        value.isFinite && value == value.rounded() && abs(value) < 16 ? Entry(rawValue: Int(value)) : nil
    }

    static func observation(_ value: Double) -> UsageObservation {
        UsageObservation(rawValue: KeyboardMetricsFamily.count(value)) ?? .none
    }

    /// Seconds as stored (whole ns): the linear mapping's `ns × 1e-9` rounded back to the
    /// nanosecond, so 500 s reads 500, not 500.00000000000006.
    static func seconds(_ value: Double) -> TimeInterval {
        guard value.isFinite, value > 0 else { return 0 }
        return (value * 1e9).rounded() / 1e9
    }
}
