import Foundation
import Glibc
import SensorExport
import SensorSystem

// sensorkit-export: released sensor data into PostgreSQL, exactly once (docs/export.md).
func say(_ line: String) {
    FileHandle.standardError.write(Data(("sensorkit-export: " + line + "\n").utf8))
}

let environment = ProcessInfo.processInfo.environment
let options: ExportOptions
do {
    options = try ExportOptions.parse(Array(CommandLine.arguments.dropFirst()), environment: environment)
} catch {
    say("\(error)")
    exit(2)
}
if options.help {
    print(ExportOptions.usage)
    exit(0)
}
switch PostgresConnection.carriesPassword(options.database) {
case .success(false): break
case .success(true):
    say("the connection string carries a password; put it in ~/.pgpass, PGPASSFILE or PGPASSWORD instead")
    exit(2)
case .failure(let error):
    say("--database: \(error)")
    exit(2)
}
guard let hostID = options.hostID ?? SystemFiles.readTrimmed("/etc/machine-id"), !hostID.isEmpty else {
    say("no /etc/machine-id to identify this host: give --host-id")
    exit(2)
}
// The SensorKit client reads its socket and app identity from the environment when it first
// connects; nothing has connected yet.
setenv("SENSORKIT_APP", options.app ?? environment["SENSORKIT_APP"] ?? ExportOptions.defaultApp, 1)
if let socket = options.socket { setenv("SENSORKIT_SOCKET", socket, 1) }

let exporter = Exporter(options: options, hostID: hostID, log: { say($0) })
exit(await exporter.run())
