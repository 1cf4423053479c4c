import Foundation
import Glibc
import SessionAgent

// The session agent (docs/device-usage.md): `sensorkit-session [--socket PATH]`.
exit(SessionAgentCommand.run(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))
