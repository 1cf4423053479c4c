import SensorKitModel

/// What the device-usage stream stores: its identity, and one run of rows per report, all timed
/// at the interval's end (docs/device-usage.md, "How a report is stored").
public enum UsageSamples {
    public static let schema = SourceSchema<DeviceUsageFamily.Stored>(every: DeviceUsageFamily.kind)
    /// The one stream of the host's device usage.
    public static let source = "session:device-usage"
    /// Wall-clock quarter hours, SensorKit's interval (`[device-usage] interval` sets another).
    public static let intervalNanoseconds: Int64 = 900_000_000_000

    public static func descriptor(intervalNanoseconds: Int64 = intervalNanoseconds) -> SourceDescriptor {
        SourceDescriptor(
            sensor: .deviceUsageReport, device: SRDevice.hostIdentifier, source: source, schema: schema,
            details: ["driver": "device-usage", "interval": "\(intervalNanoseconds / 1_000_000_000)"])
    }

    public static func batch(_ reports: [UsageReport], boot: BootID, receivedAt: Int64, for descriptor: SourceDescriptor)
        -> SourceBatch
    {
        typealias C = DeviceUsageFamily.Column
        var rows: [(time: Int64, values: [C: Int64])] = []
        for report in reports {
            rows.append(
                (
                    report.end,
                    [
                        .entry: Int64(DeviceUsageFamily.Entry.report.rawValue),
                        .duration: report.end.subtractingSaturating(report.start), .screenWakes: Int64(report.screenWakes),
                        .unlocks: Int64(report.unlocks), .unlockDuration: report.unlockedNanoseconds,
                        .wakeSource: Int64(report.wakeSource.rawValue), .unlockSource: Int64(report.unlockSource.rawValue),
                    ]
                ))
            for application in report.applications {
                var values = app(application.app)
                values[.entry] = Int64(DeviceUsageFamily.Entry.application.rawValue)
                values[.usageTime] = application.nanoseconds
                values[.textInputSessions] = Int64(application.textInputSessions)
                values[.relativeStartTime] = application.relativeStart
                rows.append((report.end, values))
            }
            for notification in report.notifications {
                var values = app(notification.app)
                values[.entry] = Int64(DeviceUsageFamily.Entry.notification.rawValue)
                values[.event] = Int64(notification.event.rawValue)
                values[.events] = Int64(notification.count)
                rows.append((report.end, values))
            }
        }
        var values = BatchValues<C>()
        for column in C.allCases { values[column] = rows.map { $0.values[column] ?? 0 } }
        return SourceBatch(
            boot: boot, sensorTimes: rows.map(\.time), receiveTimes: Array(repeating: receivedAt, count: rows.count),
            values: values, for: descriptor)
    }

    private static func app(_ app: UsageApp) -> [DeviceUsageFamily.Column: Int64] {
        var values: [DeviceUsageFamily.Column: Int64] = [.category: DeviceUsageFamily.categoryIndex(app.category)]
        if let words = app.id.flatMap(DesktopIDCode.encode) {
            for (column, word) in zip(DeviceUsageFamily.Column.appWords, words) { values[column] = word }
        }
        return values
    }

    /// The boot instant of the next wall-clock multiple of `length` (a quarter hour unless set)
    /// after `boot` (whose wall-clock time is `realtime`, ns since the Unix epoch): quarter hours
    /// are the same in every time zone whose offset is a whole quarter hour, which all are today.
    public static func nextBoundary(boot: Int64, realtime: Int64, length: Int64 = intervalNanoseconds) -> Int64 {
        let length = max(1, length)
        let into = realtime.remainderReportingOverflow(dividingBy: length).partialValue
        let positive = into < 0 ? into + length : into
        return boot.addingSaturating(length - positive)
    }
}
