import Foundation
import SensorKitModel
import SensorSystem
import Testing

@testable import SensorDaemon

/// Who is an administrator, and how a bound connection's app is checked again (docs/protocol.md
/// §1.2, §3.6), without a daemon.
@Suite struct AdministratorsTests {
    func registry(_ folder: String) throws -> AppRegistry {
        try ManifestFixture.write(
            app: "study", in: folder, entitlements: ["pedometer"], users: ["1000"], executable: "/usr/bin/study")
        let binding = try PropertyListSerialization.data(
            fromPropertyList: ["Users": ["1000"], "Consenters": ["1500"], "Executable": "/usr/bin/study"],
            format: .xml, options: 0)
        try binding.write(to: URL(fileURLWithPath: folder + "/study/" + AppManifest.bindingFile))
        return AppRegistry.load(directory: folder).registry
    }

    @Test func rootTheDaemonsUserAndGroupAndConsentersAdministerTheRestAreStrangers() throws {
        let folder = try ManifestFixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let registry = try registry(folder)
        let administrators = Administrators(uid: 999, gid: 998)
        func peer(_ uid: UInt32, gid: UInt32 = 100, groups: [UInt32] = []) -> UnixSocket.PeerCredentials {
            .init(pid: 1, uid: uid, gid: gid, groups: groups)
        }
        #expect(administrators.include(peer(0), in: registry))
        #expect(administrators.include(peer(999), in: registry))
        #expect(administrators.include(peer(2000, gid: 998), in: registry))
        #expect(administrators.include(peer(2000, groups: [27, 998]), in: registry), "a supplementary group counts")
        #expect(administrators.include(peer(1500), in: registry), "a Consenter of some app")
        #expect(administrators.include(peer(1500), in: registry, app: "study"))
        #expect(
            !administrators.include(peer(1500), in: registry, app: "absent"), "a Consenter of one app learns nothing of others")
        #expect(!administrators.include(peer(1000), in: registry), "an app's own user is not its administrator")
        #expect(!administrators.include(peer(2000, groups: [27]), in: registry))
    }

    @Test func rebindFollowsTheAppsAsInstalledNow() throws {
        let folder = try ManifestFixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let peer = UnixSocket.PeerCredentials(pid: 77, uid: 1000, gid: 1000)
        let bound = try registry(folder).authenticate(app: "study", peer: peer, executableOf: { _ in "/usr/bin/study" })
        // The executable checked at hello is not read again while the manifest keeps it.
        #expect(
            try registry(folder).rebind(bound, peer: peer, executableOf: { _ in nil }).entitledSensors == bound.entitledSensors)
        try ManifestFixture.write(
            app: "study", in: folder, entitlements: ["pedometer"], users: ["1001"], executable: "/usr/bin/study")
        #expect(throws: AppRegistry.Refusal.userNotBound(app: "study", uid: 1000)) {
            try AppRegistry.load(directory: folder).registry.rebind(bound, peer: peer, executableOf: { _ in "/usr/bin/study" })
        }
        try ManifestFixture.write(
            app: "study", in: folder, entitlements: ["pedometer"], users: ["1000"], executable: "/usr/bin/study2")
        #expect(throws: AppRegistry.Refusal.wrongExecutable(app: "study", expected: "/usr/bin/study2", actual: "/usr/bin/study"))
        {
            try AppRegistry.load(directory: folder).registry.rebind(bound, peer: peer, executableOf: { _ in "/usr/bin/study" })
        }
        try FileManager.default.removeItem(atPath: folder + "/study")
        #expect(throws: AppRegistry.Refusal.unknownApp("study")) {
            try AppRegistry.load(directory: folder).registry.rebind(bound, peer: peer)
        }
    }
}
