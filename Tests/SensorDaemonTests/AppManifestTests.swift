import Foundation
import Testing
import SensorKitModel
import SensorSystem
@testable import SensorDaemon

/// Writes apps.d/<bundle-id>/ folders the way an administrator would.
enum ManifestFixture {
    static func write(app: String, in folder: String, entitlements: [String], users: [String], executable: String? = nil,
                      usage: [String: [String: Any]] = [:], info: String? = nil) throws {
        let directory = folder + "/" + app
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let infoPlist: [String: Any] = [
            "NSSensorKitUsageDescription": "Sleep and activity study",
            "NSSensorKitPrivacyPolicyURL": "https://example.org/privacy",
            "NSSensorKitUsageDetail": usage,
        ]
        let infoData = try info.map { Data($0.utf8) } ?? PropertyListSerialization.data(fromPropertyList: infoPlist, format: .xml, options: 0)
        _ = FileManager.default.createFile(atPath: directory + "/Info.plist", contents: infoData)
        let entitlementData = try PropertyListSerialization.data(
            fromPropertyList: [AppManifest.entitlementKey: entitlements], format: .xml, options: 0)
        _ = FileManager.default.createFile(atPath: directory + "/Study.entitlements", contents: entitlementData)
        var binding: [String: Any] = ["Users": users]
        if let executable { binding["Executable"] = executable }
        _ = FileManager.default.createFile(atPath: directory + "/" + AppManifest.bindingFile,
                                       contents: try PropertyListSerialization.data(fromPropertyList: binding, format: .xml, options: 0))
    }

    static func temporaryFolder() throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("apps-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }
}

@Suite struct AppManifestTests {
    @Test func loadsApplesKeysAndTheBinding() throws {
        let folder = try ManifestFixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try ManifestFixture.write(app: "com.example.study", in: folder,
                                  entitlements: ["motion-accelerometer", "ambient-light-sensor"], users: ["root", "4242"],
                                  usage: ["SRSensorUsageMotion": ["Description": "Counts how you move", "Required": true]])
        let (registry, problems) = AppRegistry.load(directory: folder)
        #expect(problems.isEmpty)
        let app = try #require(registry.apps["com.example.study"])
        #expect(app.entitledSensors == [.accelerometer, .ambientLightSensor])
        #expect(app.uids == [0, 4242])
        #expect(app.purpose == "Sleep and activity study")
        #expect(app.usageDetail(for: .accelerometer) == .init(description: "Counts how you move", required: true))
        #expect(app.usageDetail(for: .rotationRate)?.required == true)  // same SRSensorUsageMotion key
        #expect(app.usageDetail(for: .ambientLightSensor) == nil)
    }

    @Test func brokenManifestsAreSkippedWithAReason() throws {
        let folder = try ManifestFixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try ManifestFixture.write(app: "good", in: folder, entitlements: ["pedometer"], users: ["0"])
        try ManifestFixture.write(app: "no-such-user", in: folder, entitlements: ["pedometer"], users: ["nobody-here-xyz"])
        try ManifestFixture.write(app: "bad-detail", in: folder, entitlements: ["pedometer"], users: ["0"],
                                  info: "<plist><dict><key>NSSensorKitUsageDetail</key><string>oops</string></dict></plist>")
        try FileManager.default.createDirectory(atPath: folder + "/empty", withIntermediateDirectories: true)
        let (registry, problems) = AppRegistry.load(directory: folder)
        #expect(Array(registry.apps.keys) == ["good"])
        #expect(problems.count == 3)
        #expect(problems.contains { $0.contains("no such user 'nobody-here-xyz'") })
        #expect(problems.contains { $0.contains("NSSensorKitUsageDetail must be a dictionary") })
    }

    @Test func authenticationChecksUidAndExecutable() throws {
        let folder = try ManifestFixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try ManifestFixture.write(app: "pinned", in: folder, entitlements: ["pedometer"], users: ["1000"], executable: "/usr/bin/study")
        let registry = AppRegistry.load(directory: folder).registry
        let peer = UnixSocket.PeerCredentials(pid: 77, uid: 1000, gid: 1000)
        #expect(throws: AppRegistry.Refusal.userNotBound(app: "pinned", uid: 1001)) {
            try registry.authenticate(app: "pinned", peer: .init(pid: 77, uid: 1001, gid: 1000), executableOf: { _ in "/usr/bin/study" })
        }
        #expect(throws: AppRegistry.Refusal.wrongExecutable(app: "pinned", expected: "/usr/bin/study", actual: "/tmp/evil")) {
            try registry.authenticate(app: "pinned", peer: peer, executableOf: { _ in "/tmp/evil" })
        }
        #expect(throws: AppRegistry.Refusal.unknownApp("other")) { try registry.authenticate(app: "other", peer: peer) }
        #expect(try registry.authenticate(app: "pinned", peer: peer, executableOf: { _ in "/usr/bin/study" }).bundleID == "pinned")
    }
}
