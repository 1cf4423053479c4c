import Foundation
import SensorSystem

/// What sensorkitctl writes for a person. Every value in a line comes from the daemon, and through
/// it from apps' manifests, clients and wearables (a Device Information string, an app's purpose):
/// `show` takes a `LogMessage`, so each interpolated value is escaped (`PrintableText`) and the
/// administrator's terminal never gets an escape sequence, BEL, NUL, CR or a forged line.
enum Terminal {
    /// One line (or, with `terminator: ""`, a prompt) on stdout.
    static func show(_ message: LogMessage, terminator: String = "\n") {
        print(message.text, terminator: terminator)
    }

    /// One line on stderr.
    static func complain(_ message: LogMessage) {
        FileHandle.standardError.write(Data((message.text + "\n").utf8))
    }
}
