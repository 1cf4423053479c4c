import Foundation
import SensorKit
import SensorSystem

/// `sensorkitctl status`: the daemon (version, boot, what records) and each stream's health —
/// rate received against the rate its source promises over the last minute and day, the age of
/// its newest stored sample, its gaps by reason, and the store against its budget.
enum StatusCommand {
    static func run(_ options: CommandLineOptions) throws -> Int32 {
        let connection = try Commands.connect(options)
        let info = try Commands.call(connection, .daemonStatus).info ?? [:]
        // A daemon before `health` answers 102; the rest of the status still stands.
        let healthReply = connection.call(.health)
        if options.json {
            Commands.printJSON(StatusDocument(daemon: info, health: healthReply.health, healthError: healthReply.error?.message))
            return 0
        }
        Terminal.show(
            "\(info["version"] ?? "sensorkitd ?") — boot \(info["boot"] ?? "?"), SR time now \(Commands.seconds(Int64(info["now"] ?? "0") ?? 0)) s"
        )
        if let raw = info["recording"] {
            let recording = raw.split(separator: ",").map { Commands.name(String($0)) }
            Terminal.show(
                "recording: \(recording.isEmpty ? "nothing (no app holds a stake)" : recording.joined(separator: ", "))")
        } else {
            Terminal.show("recording: shown to administrators only (root, the daemon's group, a study's Consenters)")
        }
        if let connections = info["connections"] { Terminal.show("connections: \(connections)") }
        if let drivers = info["drivers"] { Terminal.show("drivers: \(drivers.isEmpty ? "none" : drivers)") }
        for line in (info["unrecordable"] ?? "").split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1).map(String.init)
            Terminal.show("cannot record \(parts.count == 2 ? Commands.name(parts[0]) + ":" + parts[1] : String(line))")
        }
        guard let health = healthReply.health else {
            Terminal.show("stream health: \(healthReply.error?.message ?? "not reported by this daemon")")
            return 0
        }
        Terminal.show("")
        for line in lines(health) { Terminal.show("\(line, limit: Journal.lineLimit)") }
        return 0
    }

    /// What `status --json` prints: the daemon's `daemonStatus` info and its `health` reply.
    struct StatusDocument: Encodable {
        var daemon: [String: String]
        var health: WireHealth?
        var healthError: String?
    }

    /// The health table and the store line, as printed.
    static func lines(_ health: WireHealth) -> [String] {
        var out: [String] = []
        if health.streams.isEmpty {
            out.append("streams: none stored that you may see")
        } else {
            var rows = [["STREAM", "STATE", "LAST MINUTE", "LAST DAY", "NEWEST SAMPLE", "GAPS IN THE LAST DAY"]]
            for stream in health.streams {
                rows.append([
                    streamName(stream.sensor, stream.device), state(stream, now: health.now),
                    rate(stream.lastMinute / minuteSeconds(stream, now: health.now), expected: stream.expectedRate),
                    rate(stream.lastDay / daySeconds(stream, now: health.now), expected: stream.expectedRate),
                    stream.lastSample.map { "\(duration(Double(health.now.subtractingSaturating($0)) / 1e9)) ago" } ?? "never",
                    gaps(stream.gaps),
                ])
            }
            out += table(rows)
            if let omitted = health.omittedStreams { out.append("(\(omitted) more streams not shown)") }
        }
        if let store = health.store {
            var line = "store: \(bytes(store.occupiedBytes)) used"
            line +=
                store.maxBytes.map { " of a \(bytes($0)) budget (\(percent(Double(store.occupiedBytes) / Double(max(1, $0)))))" }
                ?? " (no size budget)"
            line += "; \(bytes(store.availableBytes)) free on its file system"
            if let minFree = store.minFreeBytes { line += ", \(bytes(minFree)) kept free" }
            out.append(line)
        }
        return out
    }

    /// "accelerometer", or "heartRate on ble:AA:…" for a device other than this machine.
    static func streamName(_ sensor: String, _ device: String) -> String {
        device == SRDevice.hostIdentifier ? Commands.name(sensor) : "\(Commands.name(sensor)) on \(device)"
    }

    /// ok · LOW (under 90 % of the promised rate in the last minute) · STALLED (nothing for 10 s
    /// or five sample periods, whichever is longer) · idle (no app wants it) · starting (LOW or
    /// STALLED, but the stream began recording less than `startGrace` ago: a wearable still
    /// connecting, a chip's first buffer not yet committed).
    static func state(_ stream: WireStreamHealth, now: Int64) -> String {
        guard stream.recording else { return "idle" }
        let age = stream.lastSample.map { Double(now.subtractingSaturating($0)) / 1e9 } ?? .infinity
        // A sensor sampled on change holds its last state: only never having a sample is a stall.
        let patience = patience(stream) ?? (stream.lastSample == nil ? 10 : .infinity)
        var verdict = "ok"
        if age > patience {
            verdict = "STALLED"
        } else if let expected = stream.expectedRate, stream.lastMinute / minuteSeconds(stream, now: now) < 0.9 * expected {
            verdict = "LOW"
        }
        if verdict != "ok", let since = stream.recordingSince(now: now),
            Double(now.subtractingSaturating(since)) / 1e9 < max(startGrace, patience.isFinite ? patience : 0)
        {
            return "starting"
        }
        return verdict
    }

    /// Seconds without a sample after which a recording stream is STALLED: 10 s or five sample
    /// periods, whichever is longer; for the interval families (one sample per 15-minute
    /// interval, written when it closes) 20 min. Nil for a sensor sampled only when its state
    /// changes (`onWristState`), whose newest sample may rightly be hours old.
    static func patience(_ stream: WireStreamHealth) -> Double? {
        switch SRSensor(stream.sensor) {
        case .onWristState: return nil
        case .keyboardMetrics, .deviceUsageReport, .phoneUsageReport, .messagesUsageReport: return 20 * 60
        default: return max(10, 5 / (stream.expectedRate ?? 1))
        }
    }

    /// The seconds the last day's rate is taken over: a day, or the time since the stream began
    /// when that is shorter (a stream 15 s old is not judged over 24 h).
    static func daySeconds(_ stream: WireStreamHealth, now: Int64) -> Double {
        guard let since = stream.recordingSince(now: now), since < now else { return 86_400 }
        return min(86_400, max(1, Double(now.subtractingSaturating(since)) / 1e9))
    }

    /// Seconds after a stream began (it existed and an app wanted it) before it may be called
    /// LOW or STALLED: on the demo rig a BLE wearable is found, connected and started well within
    /// this, and the store commits every 0.5 s.
    static let startGrace = 30.0

    /// The seconds the last minute's rate is taken over: 60, or for a stream that began less
    /// than a minute ago (its first span of the day is recent), the time from its first to its
    /// newest committed sample plus one sample period.
    static func minuteSeconds(_ stream: WireStreamHealth, now: Int64) -> Double {
        guard let first = stream.spans.first?.first, first > now.subtractingSaturating(60_000_000_000) else { return 60 }
        let covered = Double((stream.lastSample ?? now).subtractingSaturating(first)) / 1e9 + 1 / (stream.expectedRate ?? 1)
        return min(60, max(0.1, covered))
    }

    static func rate(_ received: Double, expected: Double?) -> String {
        let got = hertz(received)
        guard let expected else { return "\(got) Hz" }
        return "\(got)/\(hertz(expected)) Hz"
    }

    static func hertz(_ value: Double) -> String {
        value >= 10 ? String(format: "%.1f", value) : value >= 0.1 ? String(format: "%.2f", value) : String(format: "%.3g", value)
    }

    static func gaps(_ summaries: [WireGapSummary]) -> String {
        guard !summaries.isEmpty else { return "none" }
        return summaries.map { "\(reasonName($0.reason)) \($0.count)× \(duration($0.seconds))" }.joined(separator: ", ")
    }

    static func reasonName(_ raw: Int) -> String {
        SRDeletionReason(rawValue: raw).map { "\($0)" } ?? "reason \(raw)"
    }

    /// 0.4 s, 42 s, 13 min, 5 h 02 min, 3 d 4 h.
    static func duration(_ seconds: Double) -> String { DurationText.text(seconds: seconds) }

    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(max(0, count)), unit = 0
        while value >= 1024, unit < units.count - 1 { value /= 1024; unit += 1 }
        return unit == 0 ? "\(Int(value)) B" : String(format: "%.1f %@", value, units[unit])
    }

    static func percent(_ fraction: Double) -> String { String(format: "%.0f %%", fraction * 100) }

    /// Rows as aligned lines; every cell escaped (`PrintableText`), since cells carry what
    /// devices and apps said, and aligned by what is shown.
    static func table(_ rows: [[String]]) -> [String] {
        let rows = rows.map { $0.map { PrintableText.escaped($0) } }
        guard let width = rows.map(\.count).max() else { return [] }
        var widths = [Int](repeating: 0, count: width)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        return rows.map { row in
            row.enumerated().map { i, cell in
                i == row.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0)
            }
            .joined(separator: "  ")
        }
    }
}
