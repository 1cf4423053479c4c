import Foundation
import SensorKit
import SensorSystem

/// `sensorkitctl report --day DATE --svg FILE`: one picture of one local day (`DayChart`), from
/// the daemon's `health` reply for that day. Wall-clock times map to SR time with the current
/// offset (docs/protocol.md §9.3), as the Swift client's dates do.
enum ReportCommand {
    static func run(_ options: CommandLineOptions) throws -> Int32 {
        guard let dayText = options.values["day"], let path = options.values["svg"] else {
            throw CommandLineOptions.UsageError(description: "report needs --day DATE (2026-12-01) and --svg FILE")
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone.current
        guard let day = parseDay(dayText, calendar: calendar),
            let next = calendar.date(byAdding: .day, value: 1, to: day)
        else {
            throw CommandLineOptions.UsageError(description: "--day must be a date like 2026-12-01")
        }
        let srNow = SRAbsoluteTime.current()
        let offset = (srNow.nanoseconds ?? 0).subtractingSaturating(Int64((srNow.toCFAbsoluteTime() * 1e9).rounded()))
        func sr(_ date: Date) -> Int64 { Int64((date.timeIntervalSinceReferenceDate * 1e9).rounded()).addingSaturating(offset) }
        let start = sr(day), end = sr(next)
        let reply = try Commands.call(Commands.connect(options), .health) {
            $0.from = start
            $0.to = end
        }
        guard let health = reply.health else {
            throw CommandLineOptions.UsageError(description: "the daemon sent no health figures")
        }
        let chart = chart(health, day: day, next: next, calendar: calendar, sr: sr)
        try chart.svg().write(toFile: path, atomically: true, encoding: .utf8)
        let lost = health.streams.map { $0.records.count }.reduce(0, +)
        Terminal.show("wrote \(path): \(health.streams.count) streams, \(lost) deletion records on \(dayText)")
        return 0
    }

    static func parseDay(_ text: String, calendar: Calendar) -> Date? {
        let parts = text.split(separator: "-").compactMap { Int($0) }
        guard parts.count == 3, text.count == 10, (1...12).contains(parts[1]), (1...31).contains(parts[2]) else { return nil }
        let components = DateComponents(year: parts[0], month: parts[1], day: parts[2])
        guard let date = calendar.date(from: components), calendar.component(.day, from: date) == parts[2] else { return nil }
        return date
    }

    static func chart(_ health: WireHealth, day: Date, next: Date, calendar: Calendar, sr: (Date) -> Int64) -> DayChart {
        // An hour tick at each local hour of the day (23 or 25 on a daylight-saving change).
        var ticks: [(at: Int64, label: String)] = []
        var hour = day
        while hour <= next {
            let local = calendar.component(.hour, from: hour)
            ticks.append((sr(hour), hour == next ? "24" : String(format: "%02d", local)))
            guard let following = calendar.date(byAdding: .hour, value: 1, to: hour) else { break }
            hour = following
        }
        let formatter = DateFormatter()
        formatter.calendar = calendar
        formatter.timeZone = calendar.timeZone
        formatter.dateFormat = "EEEE d MMMM yyyy"
        formatter.locale = Locale(identifier: "en_US_POSIX")
        let zone = calendar.timeZone.abbreviation(for: day) ?? calendar.timeZone.identifier
        let rows = health.streams.map { stream in
            DayChart.Row(
                name: StatusCommand.streamName(stream.sensor, stream.device),
                recorded: stream.spans.compactMap { $0.count == 2 && $0[0] <= $0[1] ? $0[0]...$0[1] : nil },
                gaps: stream.records.compactMap { record in
                    guard record.start <= record.end else { return nil }
                    return (record.start...record.end, SRDeletionReason(rawValue: record.reason) ?? .systemInitiated)
                })
        }
        var subtitle = "sensorkitd recording, local time (\(zone)), hours on the axis"
        if let omitted = health.omittedStreams { subtitle += "; \(omitted) more streams not shown" }
        return DayChart(
            title: "Recording on \(formatter.string(from: day))", subtitle: subtitle,
            start: sr(day), end: sr(next), now: health.now, ticks: ticks, rows: rows)
    }
}
