import Foundation
import Testing

/// Every committed fuzz input (Fuzz/corpus/<target>/, crashes found by `make fuzz` included)
/// replays clean through its parser in the ordinary build: a regression of any of them traps
/// `sensorkit-fuzz`, which is built beside the test bundle.
@Suite struct FuzzCorpusTests {
    static var replayer: String {
        let bundle = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (bundle as NSString).deletingLastPathComponent + "/sensorkit-fuzz"
    }

    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/corpus").path

    @Test(.timeLimit(.minutes(3)), arguments: ["wire", "scan-type", "scan", "manifest", "configuration"])
    func committedInputsReplayClean(target: String) throws {
        #expect(FileManager.default.isExecutableFile(atPath: Self.replayer), "build sensorkit-fuzz first")
        let folder = Self.corpus + "/" + target
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).sorted().map { folder + "/" + $0 }
        #expect(!files.isEmpty, "no corpus for \(target)")
        let child = Process()
        child.executableURL = URL(fileURLWithPath: Self.replayer)
        child.arguments = [target] + files
        // Foundation's property-list parser leaks its error object on a malformed manifest
        // (swift-corelibs-foundation, not ours): a test build under AddressSanitizer would fail
        // this replay on that leak alone. Without the sanitizer the variable is ignored.
        var environment = ProcessInfo.processInfo.environment
        if target == "manifest" { environment["ASAN_OPTIONS"] = "detect_leaks=0" }
        child.environment = environment
        let output = Pipe()
        child.standardOutput = output
        child.standardError = output
        try child.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        #expect(child.terminationReason == .exit && child.terminationStatus == 0, "\(target): \(text.suffix(2_000))")
        #expect(text.contains("\(files.count) inputs ran clean"), "\(text.suffix(2_000))")
    }
}
