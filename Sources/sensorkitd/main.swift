import Foundation
import SensorDaemon

// Thin entry point: parse the command line, hand over to the daemon, exit with its status.
exit(DaemonCommand.main(arguments: Array(CommandLine.arguments.dropFirst())))
