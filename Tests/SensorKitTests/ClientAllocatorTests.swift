import Foundation
import SensorSystem
import Testing

/// The client library runs in the app's process: it must leave the app's allocator alone unless
/// the app opts in (docs/configuration.md, "Memory allocator"). Checked in a fresh process each
/// time, because the setting is per process and other suites here apply it.
@Suite struct ClientAllocatorTests {
    /// `client-allocator-child` is built beside the test bundle (`.build/<config>/`).
    static var childPath: String {
        let bundle = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (bundle as NSString).deletingLastPathComponent + "/client-allocator-child"
    }

    /// Runs the child with the test's environment minus every malloc setting, plus `extra`.
    private func childReport(_ extra: [String: String]) throws -> String {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: Self.childPath)
        child.arguments = [NSTemporaryDirectory() + "no-sensorkitd-\(UUID().uuidString).sock"]
        var environment = ProcessInfo.processInfo.environment.filter {
            !["SENSORKIT_MALLOC", "GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"].contains($0.key)
        }
        environment.merge(extra) { $1 }
        child.environment = environment
        let output = Pipe()
        child.standardOutput = output
        try child.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        #expect(child.terminationStatus == 0)
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test(.timeLimit(.minutes(3)))
    func usingTheClientLeavesTheAppsAllocatorAlone() throws {
        #expect(FileManager.default.isExecutableFile(atPath: Self.childPath), "build client-allocator-child first")
        #expect(try childReport([:]) == "untouched")
    }

    @Test(.timeLimit(.minutes(3)))
    func anAppThatOptsInGetsTheTuning() throws {
        #expect(try childReport(["SENSORKIT_MALLOC": "bulk"]) == "tuned")
        #expect(
            try childReport(["SENSORKIT_MALLOC": "bulk", "MALLOC_TRIM_THRESHOLD_": "1"])
                == "leftToEnvironment(\"MALLOC_TRIM_THRESHOLD_\")")
    }
}
