import Foundation
import SensorKit
import SensorSystem
import Synchronization

/// `sensorkitctl watch SENSOR…`: live subscriptions (docs/live.md) shown as a terminal view that
/// redraws four times a second, or, with `--jsonl`, one JSON line per sample and per event.
enum WatchCommand {
    static let help = """
        Usage: sensorkitctl watch SENSOR… [--app APP] [--device D] [--jsonl] [--seconds N]

        Shows sensors live as sensorkitd records them: per sensor the samples/s over the last second,
        the last value of each column in SensorKit units (g, rad/s, kPa, °C, lx, beats/min, µV), a
        sparkline of the last 48 values, and gaps as they happen. Sensors by name (accelerometer,
        rotationRate, ambientPressure, ambientLightSensor, heartRate, electrocardiogram, …) or raw value.

        Live data is released data: the daemon must run the sensor with a hold of 0 (profile = lab),
        and an app must be recording it (watching does not start recording).

          --app APP      watch as the study app APP (its entitlement and consent apply; run as its user);
                         without it, an admin session (root, the daemon's user or group, a Consenter)
          --device D     a wearable ("ble:AA:BB:CC:DD:EE:FF"); default this machine ("host")
          --jsonl        for scripts: one line per sample {"sensor","sensorTime","writeTime",columns…}
                         (times SR ns) and one per event {"event":"gap"|"ended",…}; no view
          --seconds N    stop after N seconds (default: until every subscription ends or Ctrl-C)

        Exit status: 0 when stopped by --seconds or when the sources stopped; 1 when the daemon
        refused or ended a subscription with an error (111 overrun: the reader was too slow).

        Examples:
          sensorkitctl watch accelerometer rotationRate
          sensorkitctl watch heartRate --device ble:AA:BB:CC:DD:EE:FF
          sensorkitctl watch ambientPressure --jsonl --seconds 10 > pressure.jsonl
        """

    private struct Watched {
        var views: [WatchView]
        var open: Int
        var failed = false
    }

    static func run(_ options: CommandLineOptions) throws -> Int32 {
        if options.values["help"] != nil {
            Swift.print(help)
            return 0
        }
        guard !options.arguments.isEmpty else {
            throw CommandLineOptions.UsageError(description: "watch needs at least one sensor (sensorkitctl watch --help)")
        }
        let sensors = try options.arguments.map { name -> (SRSensor, BatchLayout) in
            guard let sensor = SensorCatalog.sensor(named: name), let layout = BatchLayout.of(sensor) else {
                throw CommandLineOptions.UsageError(description: "unknown sensor or one without a Linux source: '\(name)'")
            }
            return (sensor, layout)
        }
        var seconds: Double?
        if let text = options.values["seconds"] {
            guard let value = Double(text), value > 0, value.isFinite else {
                throw CommandLineOptions.UsageError(description: "--seconds needs a positive number")
            }
            seconds = value
        }
        let jsonl = options.values["jsonl"] != nil
        let connection = try Commands.connect(options, app: options.values["app"])
        let watched = Mutex(Watched(views: sensors.map { WatchView(sensor: $0.0, layout: $0.1) }, open: sensors.count))
        let output = Mutex(FileHandle.standardOutput)
        let started = DispatchTime.now().uptimeNanoseconds
        @Sendable func clock() -> Double { Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 }
        var ids: [UInt32] = []
        for (index, (sensor, layout)) in sensors.enumerated() {
            let name = SensorCatalog.descriptor(for: sensor)?.name ?? sensor.rawValue
            let id = connection.subscribe(sensor: sensor, device: options.values["device"] ?? SRDevice.hostIdentifier) {
                delivery in
                switch delivery {
                case .subscribed(let notice):
                    watched.withLock { $0.views[index].subscribed(notice: notice) }
                case .batch(let batch):
                    if jsonl {
                        let lines = FetchCommand.render(batch, columns: layout.columns, format: "jsonl")
                            .replacingOccurrences(of: "{\"sensorTime\"", with: "{\"sensor\":\"\(name)\",\"sensorTime\"")
                        output.withLock { $0.write(Data(lines.utf8)) }
                    }
                    watched.withLock { $0.views[index].add(batch, at: clock()) }
                case .gap(let missed):
                    let lost = Double(missed.to.subtractingSaturating(missed.from)) / 1e9
                    if jsonl {
                        let line =
                            "{\"event\":\"gap\",\"sensor\":\"\(name)\",\"from\":\(missed.from),\"to\":\(missed.to),\"reason\":\(missed.reason ?? -1)}\n"
                        output.withLock { $0.write(Data(line.utf8)) }
                    }
                    watched.withLock { $0.views[index].gap(seconds: lost, reason: missed.reason) }
                case .ended(let reply):
                    let why = reply.error.map { "\($0)" } ?? reply.notice ?? "the subscription ended"
                    if jsonl {
                        var end = WireReply(event: "ended")
                        end.sensor = name
                        end.error = reply.error
                        end.notice = reply.notice
                        end.missed = reply.missed
                        end.count = reply.count
                        let line = String(decoding: WireJSON.frame(end).payload, as: UTF8.self) + "\n"
                        output.withLock { $0.write(Data(line.utf8)) }
                    }
                    watched.withLock {
                        $0.views[index].ended(why)
                        $0.open -= 1
                        // A cancel at --seconds is the watcher's own doing, not a failure.
                        if let error = reply.error, error.code != .cancelled { $0.failed = true }
                    }
                }
            }
            ids.append(id)
        }
        let isTerminal = isatty(STDOUT_FILENO) == 1
        var lastPlain = -1.0
        while watched.withLock({ $0.open > 0 }) {
            let now = clock()
            if let seconds, now >= seconds {
                for id in ids { connection.notify(.cancel, target: id) }
                _ = DaemonReply.wait(5) { watched.withLock { $0.open == 0 } }
                break
            }
            if !jsonl && (isTerminal || now - lastPlain >= 1) {
                lastPlain = now
                draw(
                    watched.withLock { state in state.views.indices.flatMap { state.views[$0].lines(at: now) } },
                    clear: isTerminal)
            }
            Thread.sleep(forTimeInterval: 0.25)
        }
        if !jsonl {
            draw(
                watched.withLock { state in state.views.indices.flatMap { state.views[$0].lines(at: clock()) } },
                clear: isTerminal)
        }
        return watched.withLock { $0.failed } ? 1 : 0
    }

    private static func draw(_ lines: [String], clear: Bool) {
        if clear { print("\u{1B}[H\u{1B}[2J", terminator: "") }
        for line in lines { Terminal.show("\(line, limit: Journal.lineLimit)") }
        if !clear { print("") }
    }
}

/// Bounded waits of the command line (the subscriptions' ends after a cancel).
enum DaemonReply {
    static func wait(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return condition()
    }
}
