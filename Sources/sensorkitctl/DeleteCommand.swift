import Foundation
import SensorKit
import SensorSystem

/// `sensorkitctl delete APP --from T --to T [--sensor S1,S2]`: a participant deletes what was
/// recorded of a study's sensors over a range (`deleteData`, docs/protocol.md §3.8). Every app
/// then fetches the range as `userInitiated` deletion records. Only the study's Consenters and
/// root may; the daemon says why to anyone else.
enum DeleteCommand {
    static func run(_ options: CommandLineOptions) throws -> Int32 {
        guard let app = options.arguments.first, let fromText = options.values["from"], let toText = options.values["to"]
        else {
            throw CommandLineOptions.UsageError(description: "delete needs APP, --from and --to")
        }
        var sensors: [String]?
        if let names = options.values["sensor"] {
            sensors = try names.split(separator: ",").map { name in
                guard let sensor = SensorCatalog.sensor(named: String(name)) else {
                    throw CommandLineOptions.UsageError(description: "unknown sensor '\(name)'")
                }
                return sensor.rawValue
            }
        }
        let connection = try Commands.connect(options)
        let now = FetchCommand.srNow(connection)
        guard let from = FetchCommand.parseTime(fromText, now: now), let to = FetchCommand.parseTime(toText, now: now) else {
            throw CommandLineOptions.UsageError(description: "times are SR seconds, now, now-36h or -36h")
        }
        let reply = try Commands.call(connection, .deleteData) {
            $0.app = app
            $0.sensors = sensors
            $0.from = from
            $0.to = to
        }
        let count = reply.count ?? 0
        if options.json {
            Commands.printJSON(["app": app, "deletedSamples": String(count), "notice": reply.notice ?? ""])
        } else {
            let names = sensors.map { $0.map(Commands.name).joined(separator: ", ") } ?? "every sensor"
            Terminal.show(
                "\(app): deleted \(count) samples of \(names) recorded from \(Commands.seconds(from)) to \(Commands.seconds(to)) SR s; every app sees this range as deleted by you"
            )
            if let notice = reply.notice { Terminal.show("note: \(notice)") }
        }
        return 0
    }
}
