import Foundation
import SensorKit

/// The command line of sensorkitctl: `[--json] [--socket PATH] COMMAND [ARGS…] [OPTIONS]`.
struct CommandLineOptions {
    var json = false
    var socket = ProcessInfo.processInfo.environment["SENSORKIT_SOCKET"] ?? SensorKitEnvironment.defaultSocketPath
    var command = "help"
    var arguments: [String] = []
    var values: [String: String] = [:]
    var grants: [String] = []
    var denials: [String] = []

    static let help = """
        Usage: sensorkitctl [--json] [--socket PATH] COMMAND [ARGUMENTS]

        Talks to sensorkitd over its socket (default /run/sensorkit/sensorkitd.sock, or
        $SENSORKIT_SOCKET). Output is for people; --json gives one JSON document for scripts.

        Commands:
          status                      the daemon (version, boot, SR time now, what is recording) and
                                      each stream: samples/s received against the rate its source
                                      promises over the last minute and day, age of the newest sample,
                                      gaps in the last day by reason, the store against its budget
          report --day DATE --svg FILE
                                      one picture of a day (DATE as 2026-12-01, local time): a row per
                                      stream, recorded time filled, each gap coloured by its reason,
                                      time before the stream existed or an app wanted it set apart
          report --week DATE --svg FILE
                                      the same for the seven days ending with DATE (the window)
          sensors                     every SensorKit sensor, its Linux source, whether it records
          devices                     recording sources (IIO chips, wearables) with their details
          apps                        installed study apps you may see, their purpose and sensors
          consent [APP]               answer pending consent requests like the authorization sheet:
                                      purpose, privacy policy, each sensor's description, a warning
                                      when a Required sensor is declined
            --grant S1,S2 --deny S3   decide without asking (scripts); sensors by name or raw value
          stakes                      which apps hold recording stakes, since when
          delete APP --from T --to T [--sensor S1,S2]
                                      delete what was recorded of the study's sensors (all it may
                                      read, or those named) in the range; every app then fetches it
                                      as deleted by the participant (a Consenter of the app, or root)
          fetch --app APP --sensor S --from T --to T [--device D] [--format csv|jsonl]
                                      fetch recorded samples as the app would (needs the app's
                                      user); T is SR seconds, "now", "now-36h", or "-36h"
          watch SENSOR… [--app APP] [--device D] [--jsonl] [--seconds N]
                                      sensors live as they are recorded (lab profile, hold 0): rate,
                                      last values in SensorKit units, a sparkline per column, gaps;
                                      --jsonl for scripts; sensorkitctl watch --help for more
          time                        the SR timeline here: SR time, CF time, boot id, and whether
                                      this boot waits for its wall clock to be confirmed
            --confirm-clock [--state DIR]
                                      confirm a synchronised wall clock that put this boot more than
                                      12 h past recorded time: the next boot is anchored by it (root;
                                      DIR is sensorkitd's state directory, default /var/lib/sensorkit)
          help                        this text

        Exit status: 0 success, 1 the daemon refused or failed, 2 bad usage.
        """

    struct UsageError: Error, CustomStringConvertible {
        var description: String
    }

    static func parse(_ words: [String]) throws -> CommandLineOptions {
        var options = CommandLineOptions()
        var positional: [String] = []
        var iterator = words.makeIterator()
        func value(_ flag: String) throws -> String {
            guard let next = iterator.next() else { throw UsageError(description: "\(flag) needs a value") }
            return next
        }
        while let word = iterator.next() {
            switch word {
            case "--json": options.json = true
            case "--socket": options.socket = try value(word)
            case "-h", "--help": options.values["help"] = "yes"
            case "--jsonl": options.values["jsonl"] = "yes"
            case "--grant": options.grants += try value(word).split(separator: ",").map(String.init)
            case "--deny": options.denials += try value(word).split(separator: ",").map(String.init)
            case "--confirm-clock": options.values["confirm-clock"] = "yes"
            case "--app", "--sensor", "--from", "--to", "--device", "--format", "--day", "--week", "--svg", "--state",
                "--seconds":
                options.values[String(word.dropFirst(2))] = try value(word)
            default:
                if word.hasPrefix("--") { throw UsageError(description: "unknown option \(word)") }
                positional.append(word)
            }
        }
        options.command = positional.first ?? "help"
        options.arguments = Array(positional.dropFirst())
        // `watch --help` is watch's own; --help with any other command is the overview.
        if options.values["help"] != nil && options.command != "watch" {
            options.command = "help"
            options.arguments = []
        }
        return options
    }
}
