import Foundation
import Glibc
import SensorKitModel
import SensorSystem
import SensorTestKit
import Testing

@testable import SensorDaemon

/// Writes apps.d/<bundle-id>/ folders the way an administrator would.
enum ManifestFixture {
    static func write(
        app: String, in folder: String, entitlements: [String], users: [String], executable: String? = nil,
        usage: [String: [String: Any]] = [:], info: String? = nil
    ) throws {
        let directory = folder + "/" + app
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let infoPlist: [String: Any] = [
            "NSSensorKitUsageDescription": "Sleep and activity study",
            "NSSensorKitPrivacyPolicyURL": "https://example.org/privacy",
            "NSSensorKitUsageDetail": usage,
        ]
        let infoData =
            try info.map { Data($0.utf8) }
            ?? PropertyListSerialization.data(fromPropertyList: infoPlist, format: .xml, options: 0)
        _ = FileManager.default.createFile(atPath: directory + "/Info.plist", contents: infoData)
        let entitlementData = try PropertyListSerialization.data(
            fromPropertyList: [AppManifest.entitlementKey: entitlements], format: .xml, options: 0)
        _ = FileManager.default.createFile(atPath: directory + "/Study.entitlements", contents: entitlementData)
        var binding: [String: Any] = ["Users": users]
        if let executable { binding["Executable"] = executable }
        _ = FileManager.default.createFile(
            atPath: directory + "/" + AppManifest.bindingFile,
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
        try ManifestFixture.write(
            app: "com.example.study", in: folder,
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
        try ManifestFixture.write(
            app: "bad-detail", in: folder, entitlements: ["pedometer"], users: ["0"],
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
        try ManifestFixture.write(
            app: "pinned", in: folder, entitlements: ["pedometer"], users: ["1000"], executable: "/usr/bin/study")
        let registry = AppRegistry.load(directory: folder).registry
        let peer = UnixSocket.PeerCredentials(pid: 77, uid: 1000, gid: 1000)
        #expect(throws: AppRegistry.Refusal.userNotBound(app: "pinned", uid: 1001)) {
            try registry.authenticate(
                app: "pinned", peer: .init(pid: 77, uid: 1001, gid: 1000), executableOf: { _ in "/usr/bin/study" })
        }
        #expect(throws: AppRegistry.Refusal.wrongExecutable(app: "pinned", expected: "/usr/bin/study", actual: "/tmp/evil")) {
            try registry.authenticate(app: "pinned", peer: peer, executableOf: { _ in "/tmp/evil" })
        }
        #expect(throws: AppRegistry.Refusal.unknownApp("other")) { try registry.authenticate(app: "other", peer: peer) }
        #expect(
            try registry.authenticate(app: "pinned", peer: peer, executableOf: { _ in "/usr/bin/study" }).bundleID == "pinned")
    }

    /// Replaces an app's Binding.plist with `plist`.
    private func rewriteBinding(_ app: String, in folder: String, _ plist: [String: Any]) throws {
        let data = try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0)
        let path = folder + "/" + app + "/" + AppManifest.bindingFile
        try FileManager.default.removeItem(atPath: path)
        #expect(FileManager.default.createFile(atPath: path, contents: data))
    }

    @Test func anExecutableOfTheWrongTypeFailsClosed() throws {
        let folder = try ManifestFixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let wrongTypes: [String: Any] = [
            "array": ["/usr/bin/study"], "bool": true, "number": 42, "data": Data("/usr/bin/study".utf8),
        ]
        for (name, value) in wrongTypes {
            try ManifestFixture.write(app: name, in: folder, entitlements: ["pedometer"], users: ["1000"])
            try rewriteBinding(name, in: folder, ["Users": ["1000"], "Executable": value])
        }
        let (registry, problems) = AppRegistry.load(directory: folder)
        #expect(registry.apps.isEmpty, "an app whose pin cannot be read is not installed unpinned")
        #expect(problems.count == 4)
        #expect(problems.allSatisfy { $0.contains("Executable must be a string (an absolute path)") })
    }

    @Test func anOversizedManifestSkipsTheAppWithOneLine() throws {
        let folder = try ManifestFixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try ManifestFixture.write(app: "good", in: folder, entitlements: ["pedometer"], users: ["0"])
        // A purpose of 20 MB once came back whole in a reply frame five times the protocol's maximum.
        try ManifestFixture.write(
            app: "huge", in: folder, entitlements: ["pedometer"], users: ["0"],
            info: "<plist><dict><key>NSSensorKitUsageDescription</key><string>"
                + String(repeating: "a", count: AppManifest.maximumFileBytes) + "</string></dict></plist>")
        let (registry, problems) = AppRegistry.load(directory: folder)
        #expect(Array(registry.apps.keys) == ["good"])
        #expect(problems == ["app huge skipped: \(folder)/huge/Info.plist is larger than \(AppManifest.maximumFileBytes) bytes"])
    }

    @Test func aManifestOthersCanWriteSkipsTheApp() throws {
        let folder = try ManifestFixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try ManifestFixture.write(app: "good", in: folder, entitlements: ["pedometer"], users: ["0"])
        for app in ["group-writable", "world-writable", "folder-writable"] {
            try ManifestFixture.write(app: app, in: folder, entitlements: ["pedometer"], users: ["0"])
        }
        chmod(folder + "/group-writable/" + AppManifest.bindingFile, 0o664)
        chmod(folder + "/world-writable/Info.plist", 0o666)
        chmod(folder + "/folder-writable", 0o777)
        let (registry, problems) = AppRegistry.load(directory: folder)
        #expect(Array(registry.apps.keys) == ["good"])
        #expect(
            problems.sorted() == [
                "app folder-writable skipped: \(folder)/folder-writable has mode 0777: writable by users other than its owner",
                "app group-writable skipped: \(folder)/group-writable/Binding.plist has mode 0664: writable by users other than its owner",
                "app world-writable skipped: \(folder)/world-writable/Info.plist has mode 0666: writable by users other than its owner",
            ])
    }

    @Test func anAppsFolderOthersCanWriteInstallsNothing() throws {
        let folder = try ManifestFixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try ManifestFixture.write(app: "good", in: folder, entitlements: ["pedometer"], users: ["0"])
        chmod(folder, 0o1777)
        let (registry, problems) = AppRegistry.load(directory: folder)
        #expect(registry.apps.isEmpty)
        #expect(problems == ["no app installed: \(folder) has mode 1777: writable by users other than its owner"])
    }

    @Test(.needs(.root("chown to another user")))
    func aManifestTheAppsOwnUserOwnsSkipsTheApp() throws {
        let folder = try ManifestFixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // The app's user could otherwise add itself to Consenters and grant itself consent.
        try ManifestFixture.write(app: "self-consenting", in: folder, entitlements: ["pedometer"], users: ["nobody"])
        try ManifestFixture.write(app: "own-folder", in: folder, entitlements: ["pedometer"], users: ["nobody"])
        let binding = folder + "/self-consenting/" + AppManifest.bindingFile
        #expect(chown(binding, 65534, 65534) == 0)
        #expect(chown(folder + "/own-folder", 65534, 65534) == 0)
        let (registry, problems) = AppRegistry.load(directory: folder)
        #expect(registry.apps.isEmpty)
        #expect(
            problems.sorted() == [
                "app own-folder skipped: \(folder)/own-folder is owned by uid 65534; it must be owned by root or by the daemon's user (uid 0)",
                "app self-consenting skipped: \(binding) is owned by uid 65534; it must be owned by root or by the daemon's user (uid 0)",
            ])
    }

    @Test func theParseFunctionNeedsNoFiles() throws {
        func plist(_ object: Any) throws -> [UInt8] {
            Array(try PropertyListSerialization.data(fromPropertyList: object, format: .xml, options: 0))
        }
        let app = try AppManifest.parse(
            directory: "/etc/sensorkit/apps.d/com.example.study",
            info: try plist(["NSSensorKitUsageDescription": "Sleep"]),
            entitlements: ("Study.entitlements", try plist([AppManifest.entitlementKey: ["pedometer"]])),
            binding: try plist(["Users": ["study"], "Executable": "/usr/bin/study"]),
            resolveUser: { $0 == "study" ? 1234 : nil })
        #expect(app.bundleID == "com.example.study")
        #expect(app.uids == [1234])
        #expect(app.executable == "/usr/bin/study")
        #expect(app.purpose == "Sleep")
    }
}
