import Foundation

// sensorkitctl: people and scripts talking to sensorkitd. Parses the command line and runs one
// command; see CommandLineOptions for the grammar and Commands for what each does.
let options: CommandLineOptions
do {
    options = try CommandLineOptions.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("sensorkitctl: \(error)\n(see sensorkitctl --help)\n".utf8))
    exit(2)
}
exit(Commands.run(options))
