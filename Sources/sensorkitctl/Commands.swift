import Foundation
import SensorKit
import SensorSystem

/// What each sensorkitctl command does. Every command talks to the daemon through the same
/// `ReaderConnection` a study app uses; administrative ones connect without an app.
enum Commands {
    static func run(_ options: CommandLineOptions) -> Int32 {
        do {
            switch options.command {
            case "help":
                Swift.print(CommandLineOptions.help)
                return 0
            case "time": return try time(options)
            case "status": return try StatusCommand.run(options)
            case "report": return try ReportCommand.run(options)
            case "sensors": return try sensors(options)
            case "devices": return try devices(options)
            case "apps": return try apps(options)
            case "stakes": return try stakes(options)
            case "consent": return try ConsentSheet.run(options)
            case "fetch": return try FetchCommand.run(options)
            case "delete": return try DeleteCommand.run(options)
            case "watch": return try WatchCommand.run(options)
            default:
                fail("unknown command '\(options.command)' (see sensorkitctl --help)")
                return 2
            }
        } catch let error as CommandLineOptions.UsageError {
            fail(error.description)
            return 2
        } catch {
            fail("\(error)")
            return 1
        }
    }

    static func fail(_ message: String) {
        Terminal.complain("sensorkitctl: \(message, limit: Journal.lineLimit)")
    }

    /// An administrative connection (no app); throws the daemon's refusal or an unreachable socket.
    static func connect(_ options: CommandLineOptions, app: String? = nil) throws -> ReaderConnection {
        try ReaderConnection(socketPath: options.socket, app: app)
    }

    /// Calls the daemon and returns the reply, or throws its error.
    static func call(
        _ connection: ReaderConnection, _ op: WireRequest.Operation,
        _ build: (inout WireRequest) -> Void = { _ in }
    ) throws -> WireReply {
        let reply = connection.call(op, build)
        if let error = reply.error { throw error }
        return reply
    }

    static func printJSON(_ value: some Encodable) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        Swift.print(String(decoding: try! encoder.encode(value), as: UTF8.self))
    }

    static func name(_ raw: String) -> String {
        SensorCatalog.descriptor(for: SRSensor(raw))?.name ?? raw
    }

    static func seconds(_ ns: Int64) -> String { String(format: "%.3f", Double(ns) / 1e9) }

    static func table(_ rows: [[String]]) {
        for line in StatusCommand.table(rows) { Terminal.show("\(line, limit: Journal.lineLimit)") }
    }

    private static func time(_ options: CommandLineOptions) throws -> Int32 {
        let environment = SensorKitEnvironment.current
        let now = SRAbsoluteTime.current()
        let unproven = environment.timeline.currentBootIsUnproven
        if options.values["confirm-clock"] != nil {
            guard unproven else {
                fail("nothing to confirm: this boot is anchored by its synchronised wall clock")
                return 1
            }
            let path = (options.values["state"] ?? "/var/lib/sensorkit") + "/" + TimelineFile.confirmationFileName
            try SystemFiles.writeAtomically(path, contents: Array("confirmed in boot \(environment.clock.bootID)\n".utf8))
            Terminal.show("confirmed: the next boot is anchored by its synchronised wall clock (\(path))")
            return 0
        }
        if options.json {
            printJSON(["srTime": now.rawValue, "cfTime": now.toCFAbsoluteTime(), "bootUnproven": unproven ? 1 : 0])
        } else {
            Terminal.show("SR time \(now.rawValue) s, CF time \(now.toCFAbsoluteTime()) s, boot \(environment.clock.bootID)")
            if unproven {
                Terminal.show(
                    "this boot starts right after recorded time: its wall clock was not synchronised, or said more than the 12 h past it a boot may move the timeline unconfirmed (sensorkitd's log says which); held data is released late, never early. If the clock is right and synchronised: sensorkitctl time --confirm-clock"
                )
            }
        }
        return 0
    }

    private static func sensors(_ options: CommandLineOptions) throws -> Int32 {
        // Without a daemon the catalog is still shown; whether a driver can record is the daemon's to say.
        // A daemon that refuses (what records is for administrators) says why; one that cannot
        // be reached is said to be so.
        var unknown = "daemon not reachable"
        var replied: [WireSensorState] = []
        do {
            replied = try call(connect(options), .sensors).states ?? []
        } catch let error as WireError {
            unknown = error.message
        } catch {}
        let states = Dictionary(replied.map { ($0.sensor, $0) }, uniquingKeysWith: { first, _ in first })
        func recordable(_ state: WireSensorState?) -> (String, String) {
            guard let state, let recordable = state.recordable else { return ("?", unknown) }
            return recordable ? ("yes", "") : ("no", state.unrecordableReason ?? "no driver")
        }
        if options.json {
            printJSON(
                SensorCatalog.all.map { d in
                    let state = states[d.sensor.rawValue]
                    let (can, why) = recordable(state)
                    return [
                        "name": d.name, "rawValue": d.sensor.rawValue, "source": d.source.rawValue,
                        "linuxSource": d.sourceDescription, "entitlement": d.entitlement ?? "",
                        "sample": d.sampleClass, "recording": state.map { $0.recording ? "yes" : "no" } ?? "?",
                        "recordable": can, "why": why,
                    ]
                })
            return 0
        }
        table(
            [["SENSOR", "RECORDING", "RECORDABLE", "LINUX SOURCE"]]
                + SensorCatalog.all.map { d in
                    let state = states[d.sensor.rawValue]
                    let (can, why) = recordable(state)
                    return [
                        d.name, state.map { $0.recording ? "yes" : "no" } ?? "?", why.isEmpty ? can : "\(can): \(why)",
                        d.isSupportedOnLinux ? d.sourceDescription : "— (no Linux source)",
                    ]
                })
        return 0
    }

    private static func devices(_ options: CommandLineOptions) throws -> Int32 {
        let sources = try call(connect(options), .devices).sources ?? []
        if options.json { printJSON(sources); return 0 }
        if sources.isEmpty { Terminal.show("no recording sources found"); return 0 }
        for source in sources {
            let state = source.state ?? (source.recording ? "recording" : nil)
            Terminal.show("\(name(source.sensor)) on \(source.device): \(source.source)\(state.map { " (\($0))" } ?? "")")
            for (key, value) in source.details.sorted(by: { $0.key < $1.key }) { Terminal.show("    \(key): \(value)") }
        }
        return 0
    }

    private static func apps(_ options: CommandLineOptions) throws -> Int32 {
        let apps = try call(connect(options), .apps).apps ?? []
        if options.json { printJSON(apps); return 0 }
        if apps.isEmpty { Terminal.show("no apps you may see are installed (apps.d)"); return 0 }
        for app in apps {
            Terminal.show("\(app.app): \(app.purpose ?? "(no NSSensorKitUsageDescription)", limit: 4096)")
            Terminal.show("    sensors: \(app.entitledSensors.map(name).joined(separator: ", "))")
            Terminal.show("    users: \(app.users.joined(separator: ", "))\(app.executable.map { ", executable \($0)" } ?? "")")
        }
        return 0
    }

    private static func stakes(_ options: CommandLineOptions) throws -> Int32 {
        let stakes = try call(connect(options), .stakes).stakes ?? []
        if options.json { printJSON(stakes); return 0 }
        if stakes.isEmpty { Terminal.show("no stakes"); return 0 }
        table(
            [["APP", "SENSOR", "ACTIVE", "FIRST START (SR s)"]]
                + stakes.map {
                    [$0.app, name($0.sensor), $0.active ? "yes" : "no", seconds($0.firstRecording)]
                })
        return 0
    }
}
