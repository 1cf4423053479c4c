import Foundation
import SensorKit

// sensorkitctl: people and scripts talking to sensorkitd. Commands that need the daemon arrive with
// the reader API; `sensors` works from the catalog alone.
let help = """
    Usage: sensorkitctl [--json] COMMAND

    Commands:
      sensors     every SensorKit sensor, whether it has a Linux source here, its entitlement
      time        the SR timeline now: SR time, CF time, boot id
      help        this text

    Options:
      --json      machine-readable output
      --socket P  daemon socket (default /run/sensorkit/sensorkitd.sock, env SENSORKIT_SOCKET)
    """

var arguments = Array(CommandLine.arguments.dropFirst())
let json = arguments.contains("--json")
arguments.removeAll { $0 == "--json" }

switch arguments.first {
case nil, "help", "-h", "--help":
    print(help)
case "sensors":
    if json {
        let rows = SensorCatalog.all.map { d -> [String: String] in
            ["name": d.name, "rawValue": d.sensor.rawValue, "source": d.source.rawValue,
             "entitlement": d.entitlement ?? "", "sample": d.sampleClass]
        }
        let data = try JSONSerialization.data(withJSONObject: rows, options: [.prettyPrinted, .sortedKeys])
        print(String(decoding: data, as: UTF8.self))
    } else {
        for d in SensorCatalog.all {
            let source = d.isSupportedOnLinux ? d.sourceDescription : "no Linux source"
            print("\(d.name.padding(toLength: 24, withPad: " ", startingAt: 0)) \(source)")
        }
    }
case "time":
    let now = SRAbsoluteTime.current()
    print("SR time \(now.rawValue) s, CF time \(now.toCFAbsoluteTime()) s, boot \(SensorKitEnvironment.current.clock.bootID)")
case let other?:
    FileHandle.standardError.write(Data("sensorkitctl: unknown command '\(other)' (see --help)\n".utf8))
    exit(2)
}
