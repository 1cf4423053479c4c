import Foundation
import SensorKit
import SensorSystem

/// `sensorkitctl consent`: the Linux authorization sheet. Shows the study's purpose and privacy
/// policy, then each sensor's description, asks Allow/Don't Allow, and warns before declining a
/// sensor the study marks Required ("Don't Enroll in Study" / "Change Choice", as on iOS).
/// With --grant/--deny it decides without asking.
enum ConsentSheet {
    static func run(_ options: CommandLineOptions) throws -> Int32 {
        let connection = try Commands.connect(options)
        let decisions = try decisions(options)
        // Deciding for a named app goes straight to the daemon: it alone knows who may decide,
        // and its refusal says why (a user's own list would only come back empty).
        if !decisions.isEmpty, let app = options.arguments.first {
            return try decide(connection, app: app, decisions, options)
        }
        let requests = try Commands.call(connection, .consentList) { $0.app = options.arguments.first }.consent ?? []
        if requests.isEmpty {
            Commands.fail(
                options.arguments.first.map { "no app '\($0)' that you may decide for" } ?? "no apps you may decide for")
            return 1
        }
        if !decisions.isEmpty {
            guard requests.count == 1 else {
                throw CommandLineOptions.UsageError(description: "name the app: sensorkitctl consent APP --grant …")
            }
            return try decide(connection, app: requests[0].app, decisions, options)
        }
        if options.json {
            Commands.printJSON(requests)
            return 0
        }
        guard isatty(STDIN_FILENO) == 1 else {
            for request in requests { show(request) }
            Commands.fail("standard input is not a terminal: decide with --grant/--deny")
            return 2
        }
        for request in requests {
            show(request)
            var decisions: [String: Bool] = [:]
            for item in request.items where item.status == SRAuthorizationStatus.notDetermined.rawValue {
                decisions[item.sensor] = ask(item)
            }
            if decisions.isEmpty { Terminal.show("  nothing to decide for \(request.app)\n"); continue }
            _ = try decide(connection, app: request.app, decisions, options)
        }
        return 0
    }

    /// The --grant and --deny sensors by raw name; a name given to both ends as denied.
    static func decisions(_ options: CommandLineOptions) throws -> [String: Bool] {
        var decisions: [String: Bool] = [:]
        for (names, granted) in [(options.grants, true), (options.denials, false)] {
            for name in names {
                guard let sensor = SensorCatalog.sensor(named: name) else {
                    throw CommandLineOptions.UsageError(description: "unknown sensor '\(name)'")
                }
                decisions[sensor.rawValue] = granted
            }
        }
        return decisions
    }

    static func show(_ request: WireConsentRequest) {
        Terminal.show("Research Sensor & Usage Data Request — \(request.app)")
        Terminal.show("  Study purpose: \(request.purpose ?? "(not given)", limit: 4096)")
        Terminal.show("  Privacy policy: \(request.privacyPolicyURL ?? "(not given)")")
        for item in request.items {
            let status = SRAuthorizationStatus(rawValue: item.status).map { "\($0)" } ?? "?"
            Terminal.show(
                "  • \(item.name)\(item.required ? " (Required)" : ""): \(item.description ?? "(no description)", limit: 4096) [\(status)]"
            )
        }
        Terminal.show("")
    }

    /// Asks about one sensor until the answer is clear; declining a Required one needs confirming.
    static func ask(_ item: WireConsentRequest.Item) -> Bool {
        while true {
            Terminal.show("\(item.name): \(item.description ?? "", limit: 4096)")
            Terminal.show("  [a] Allow Collection & Sharing   [d] Don't Allow Collection & Sharing > ", terminator: "")
            guard let answer = readLine()?.lowercased() else { return false }
            if answer.hasPrefix("a") { return true }
            if answer.hasPrefix("d") {
                guard item.required else { return false }
                Terminal.show("  This study requires \(item.name). Declining means you cannot take part.")
                Terminal.show("  [x] Don't Enroll in Study   [c] Change Choice > ", terminator: "")
                if readLine()?.lowercased().hasPrefix("x") == true { return false }
            }
        }
    }

    static func decide(
        _ connection: ReaderConnection, app: String, _ decisions: [String: Bool],
        _ options: CommandLineOptions
    ) throws -> Int32 {
        let reply = try Commands.call(connection, .consentDecide) {
            $0.app = app
            $0.decisions = decisions
        }
        if options.json {
            Commands.printJSON(["app": app, "notice": reply.notice ?? ""])
        } else {
            for (sensor, granted) in decisions.sorted(by: { $0.key < $1.key }) {
                Terminal.show("\(app): \(Commands.name(sensor)) \(granted ? "allowed" : "not allowed")")
            }
            if let notice = reply.notice { Terminal.show("warning: \(notice)") }
        }
        return 0
    }
}
