import Foundation

/// A command run to its end with stdout and stderr captured together: the tests' and the bench's
/// one way to run a tool and read what it said.
public enum CommandOutput {
    /// Runs `arguments[0]` with the rest as its arguments (and `environment` added to this
    /// process's), waits for it and returns its exit status and everything it printed.
    public static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
