import Foundation
import SensorKit
import SensorSystem

/// `sensorkitctl report --day DATE --svg FILE` (one local day) or `--week DATE` (the seven days
/// ending with DATE, the window apps may fetch): one picture (`DayChart`) from the daemon's
/// `health` reply for that range. Wall-clock times map to SR time with the current offset
/// (docs/protocol.md §9.3), as the Swift client's dates do.
enum ReportCommand {
    static func run(_ options: CommandLineOptions) throws -> Int32 {
        let week = options.values["week"]
        guard let dayText = week ?? options.values["day"], let path = options.values["svg"] else {
            throw CommandLineOptions.UsageError(
                description: "report needs --day DATE (2026-12-01) or --week DATE (its last day), and --svg FILE")
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone.current
        let days = week == nil ? 1 : 7
        guard let last = parseDay(dayText, calendar: calendar),
            let first = calendar.date(byAdding: .day, value: 1 - days, to: last),
            let next = calendar.date(byAdding: .day, value: 1, to: last)
        else {
            throw CommandLineOptions.UsageError(description: "--day and --week take a date like 2026-12-01")
        }
        let srNow = SRAbsoluteTime.current()
        let offset = (srNow.nanoseconds ?? 0).subtractingSaturating(Int64((srNow.toCFAbsoluteTime() * 1e9).rounded()))
        func sr(_ date: Date) -> Int64 { Int64((date.timeIntervalSinceReferenceDate * 1e9).rounded()).addingSaturating(offset) }
        let reply = try Commands.call(Commands.connect(options), .health) {
            $0.from = sr(first)
            $0.to = sr(next)
        }
        guard let health = reply.health else {
            throw CommandLineOptions.UsageError(description: "the daemon sent no health figures")
        }
        let axis = week == nil ? dayAxis(day: first, next: next, calendar: calendar, sr: sr) : weekAxis(first, next, calendar, sr)
        let chart = chart(health, axis: axis, start: sr(first), end: sr(next))
        try chart.svg().write(toFile: path, atomically: true, encoding: .utf8)
        let lost = health.streams.map { $0.records.count }.reduce(0, +)
        let range = week == nil ? "on \(dayText)" : "in the 7 days to \(dayText)"
        Terminal.show("wrote \(path): \(health.streams.count) streams, \(lost) deletion records \(range)")
        return 0
    }

    static func parseDay(_ text: String, calendar: Calendar) -> Date? {
        let parts = text.split(separator: "-").compactMap { Int($0) }
        guard parts.count == 3, text.count == 10, (1...12).contains(parts[1]), (1...31).contains(parts[2]) else { return nil }
        let components = DateComponents(year: parts[0], month: parts[1], day: parts[2])
        guard let date = calendar.date(from: components), calendar.component(.day, from: date) == parts[2] else { return nil }
        return date
    }

    /// What the picture's axis shows: its title and subtitle, grid lines and captions.
    struct Axis {
        var title: String
        var subtitle: String
        var ticks: [(at: Int64, label: String)]
        var captions: [(at: Int64, label: String)] = []
        var boundaries: [Int64] = []
    }

    static func formatter(_ format: String, _ calendar: Calendar) -> DateFormatter {
        let formatter = DateFormatter()
        formatter.calendar = calendar
        formatter.timeZone = calendar.timeZone
        formatter.dateFormat = format
        formatter.locale = Locale(identifier: "en_US_POSIX")
        return formatter
    }

    /// An hour tick at each local hour of the day (23 or 25 on a daylight-saving change).
    static func dayAxis(day: Date, next: Date, calendar: Calendar, sr: (Date) -> Int64) -> Axis {
        var ticks: [(at: Int64, label: String)] = []
        var hour = day
        while hour <= next {
            let local = calendar.component(.hour, from: hour)
            ticks.append((sr(hour), hour == next ? "24" : String(format: "%02d", local)))
            guard let following = calendar.date(byAdding: .hour, value: 1, to: hour) else { break }
            hour = following
        }
        let zone = calendar.timeZone.abbreviation(for: day) ?? calendar.timeZone.identifier
        return Axis(
            title: "Recording on \(formatter("EEEE d MMMM yyyy", calendar).string(from: day))",
            subtitle: "sensorkitd recording, local time (\(zone)), hours on the axis", ticks: ticks)
    }

    /// A darker line at each local midnight, light ones every 6 hours, each day named at its noon.
    static func weekAxis(_ first: Date, _ next: Date, _ calendar: Calendar, _ sr: (Date) -> Int64) -> Axis {
        var ticks: [(at: Int64, label: String)] = [], captions: [(at: Int64, label: String)] = [], boundaries: [Int64] = []
        let name = formatter("EEE d MMM", calendar)
        var day = first
        while day < next {
            boundaries.append(sr(day))
            for quarter in [6, 12, 18] {
                if let at = calendar.date(byAdding: .hour, value: quarter, to: day), at < next { ticks.append((sr(at), "")) }
            }
            if let noon = calendar.date(byAdding: .hour, value: 12, to: day) {
                captions.append((sr(noon), name.string(from: day)))
            }
            guard let following = calendar.date(byAdding: .day, value: 1, to: day) else { break }
            day = following
        }
        boundaries.append(sr(next))
        let zone = calendar.timeZone.abbreviation(for: first) ?? calendar.timeZone.identifier
        let long = formatter("d MMMM yyyy", calendar)
        let lastDay = calendar.date(byAdding: .day, value: -1, to: next) ?? first
        return Axis(
            title: "Recording from \(long.string(from: first)) to \(long.string(from: lastDay))",
            subtitle: "sensorkitd recording, the 7-day window, local time (\(zone)), lines every 6 hours",
            ticks: ticks, captions: captions, boundaries: boundaries)
    }

    static func chart(_ health: WireHealth, axis: Axis, start: Int64, end: Int64) -> DayChart {
        let rows = health.streams.map { stream in
            DayChart.Row(
                name: StatusCommand.streamName(stream.sensor, stream.device),
                recorded: stream.spans.compactMap { $0.count == 2 && $0[0] <= $0[1] ? $0[0]...$0[1] : nil },
                gaps: stream.records.compactMap { record in
                    guard record.start <= record.end else { return nil }
                    return (record.start...record.end, SRDeletionReason(rawValue: record.reason) ?? .systemInitiated)
                },
                notBefore: stream.recordingSince(now: health.now), unwantedSince: stream.unwantedSince)
        }
        var subtitle = axis.subtitle
        if let omitted = health.omittedStreams { subtitle += "; \(omitted) more streams not shown" }
        return DayChart(
            title: axis.title, subtitle: subtitle, start: start, end: end, now: health.now, ticks: axis.ticks,
            captions: axis.captions, boundaries: axis.boundaries, rows: rows)
    }
}
