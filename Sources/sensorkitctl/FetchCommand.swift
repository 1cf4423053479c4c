import Foundation
import SensorKit
import SensorSystem
import Synchronization

/// `sensorkitctl fetch`: fetches as a study app would (same checks, same hold), writing CSV or
/// JSON Lines to stdout, a progress line on stderr for long fetches, and the daemon's explanation
/// when nothing comes back (hold, window, no stake).
enum FetchCommand {
    static func run(_ options: CommandLineOptions) throws -> Int32 {
        guard let app = options.values["app"], let sensorName = options.values["sensor"],
            let fromText = options.values["from"], let toText = options.values["to"]
        else {
            throw CommandLineOptions.UsageError(description: "fetch needs --app, --sensor, --from and --to")
        }
        guard
            let sensor = SensorCatalog.sensor(named: sensorName)
                ?? (sensorName.hasSuffix(".tombstones") ? SRSensor(sensorName) : nil)
        else {
            throw CommandLineOptions.UsageError(description: "unknown sensor '\(sensorName)'")
        }
        let format = options.values["format"] ?? "csv"
        guard format == "csv" || format == "jsonl" else {
            throw CommandLineOptions.UsageError(description: "--format must be csv or jsonl")
        }
        let connection = try Commands.connect(options, app: app)
        let now = srNow(connection)
        guard let from = parseTime(fromText, now: now), let to = parseTime(toText, now: now) else {
            throw CommandLineOptions.UsageError(description: "times are SR seconds, now, now-36h or -36h")
        }
        guard let layout = BatchLayout.of(sensor) else {
            Commands.fail("\(sensor.rawValue) has no Linux source")
            return 1
        }
        let output = FileHandle.standardOutput
        let columns = layout.columns
        if format == "csv" {
            output.write(
                Data(
                    (["sensorTime", "writeTime"] + columns + (layout == .heartRate ? ["rrIntervals"] : [])).joined(separator: ",")
                        .utf8 + [10]))
        }
        let finished = DispatchSemaphore(value: 0)
        let outcome = Mutex<WireReply?>(nil)
        let progress = Mutex((samples: 0, lastReport: Date()))
        let isTerminal = isatty(STDERR_FILENO) == 1
        connection.send(
            {
                $0.sensor = sensor.rawValue
                $0.device = options.values["device"] ?? SRDevice.hostIdentifier
                $0.from = from
                $0.to = to
                $0.chunkFormats = ReaderConnection.chunkFormats
            }, op: .fetch
        ) { incoming in
            switch incoming {
            case .batch(let batch):
                output.write(Data(render(batch, columns: columns, format: format).utf8))
                connection.notify(.ack, target: batch.requestID, batches: 1)
                progress.withLock { state in
                    state.samples += batch.count
                    if state.lastReport.timeIntervalSinceNow < -1 {
                        state.lastReport = Date()
                        let line = "fetched \(state.samples) samples…"
                        FileHandle.standardError.write(Data((isTerminal ? "\r" + line : line + "\n").utf8))
                    }
                }
            case .reply(let reply):
                outcome.withLock { $0 = reply }
                finished.signal()
            }
        }
        finished.wait()
        let reply = outcome.withLock { $0! }
        if let error = reply.error { throw error }
        let count = reply.count ?? 0
        FileHandle.standardError.write(
            Data("\(isTerminal ? "\r" : "")fetched \(count) samples of \(Commands.name(sensor.rawValue))\n".utf8))
        if let notice = reply.notice { Terminal.complain("why: \(notice)") }
        return 0
    }

    /// SR nanoseconds now, from the daemon's timeline and this machine's boot clock.
    static func srNow(_ connection: ReaderConnection) -> Int64 {
        let clock = LinuxSystemClock()
        if let timeline = connection.welcome.timeline, timeline.boot == clock.bootID.rawValue {
            return timeline.anchor + clock.boottimeNanoseconds()
        }
        return SRAbsoluteTime.current().nanoseconds ?? 0
    }

    /// "now", "now-36h", "-36h", "now+1s", or SR seconds ("12345.5").
    static func parseTime(_ text: String, now: Int64) -> Int64? {
        var rest = Substring(text)
        if rest.hasPrefix("now") { rest = rest.dropFirst(3) }
        if rest.isEmpty { return now }
        if text.hasPrefix("now") || text.hasPrefix("-") || text.hasPrefix("+") {
            let sign: Int64 = rest.hasPrefix("-") ? -1 : 1
            guard rest.hasPrefix("-") || rest.hasPrefix("+"),
                let amount = DurationText.nanoseconds(String(rest.dropFirst()), allowingFraction: true)
            else { return nil }
            // Saturating: "now+292y" in nanoseconds is past Int64, and the text is typed by anyone.
            let (time, overflow) = now.addingReportingOverflow(sign * amount)
            return overflow ? nil : time
        }
        guard let seconds = Double(text), seconds.isFinite else { return nil }
        return SRAbsoluteTime(seconds).nanoseconds
    }

    static func render(_ batch: SampleBatchFrame, columns: [String], format: String) -> String {
        var text = ""
        text.reserveCapacity(batch.count * 64)
        var raggedOffset = 0
        for i in 0..<batch.count {
            var rr: [Double] = []
            if batch.layout == .heartRate {
                let n = Int(batch.columns[HeartRateFamily.Wire.rrCount.ordinal][i])
                rr = Array(batch.ragged[raggedOffset..<min(raggedOffset + n, batch.ragged.count)])
                raggedOffset += n
            }
            if format == "csv" {
                text += "\(batch.sensorTimes[i]),\(batch.writeTimes[i])"
                for column in batch.columns { text += ",\(column[i])" }
                if batch.layout == .heartRate { text += "," + rr.map { "\($0)" }.joined(separator: " ") }
                text += "\n"
            } else {
                text += "{\"sensorTime\":\(batch.sensorTimes[i]),\"writeTime\":\(batch.writeTimes[i])"
                for (name, column) in zip(columns, batch.columns) { text += ",\"\(name)\":\(json(column[i]))" }
                if batch.layout == .heartRate { text += ",\"rrIntervals\":[\(rr.map(json).joined(separator: ","))]" }
                text += "}\n"
            }
        }
        return text
    }

    static func json(_ value: Double) -> String { value.isFinite ? "\(value)" : "null" }
}
