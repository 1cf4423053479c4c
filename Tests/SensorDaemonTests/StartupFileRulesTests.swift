import Foundation
import Glibc
import SensorSimulation
import SensorSystem
import Testing

@testable import SensorDaemon

/// The rules the daemon applies to its folders at start (docs/configuration.md, "Ownership,
/// permissions and sizes"), through a real daemon.
@Suite(.serialized) struct StartupFileRulesTests {
    private func mode(_ path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
    }

    @Test func aStateDirectoryOthersCanReadIsMadePrivateBeforeUse() throws {
        // Left 0755 by an older install, it let any user copy consent, stakes and samples.
        let harness = try DaemonHarness { folder in
            #expect(mkdir(folder + "/state", 0o755) == 0)
            chmod(folder + "/state", 0o755)
            #expect(FileManager.default.createFile(atPath: folder + "/state/store.sqlite", contents: nil))
            chmod(folder + "/state/store.sqlite", 0o644)
        }
        defer { harness.stop() }
        let state = harness.folder + "/state"
        #expect(mode(state) == 0o700)
        for name in ["store.sqlite", "store.sqlite-wal", "store.sqlite-shm", "timeline.json"] {
            #expect(mode(state + "/" + name) == 0o600, "\(name)")
        }
        #expect(mode(harness.folder + "/timeline.json") == 0o644, "the copy published for clients")
        let lines = harness.logLines().filter { $0.contains("made private") }
        #expect(
            lines == [
                "<4>state directory \(state) was readable by others; made private: \(state) 0755 → 0700, \(state)/store.sqlite 0644 → 0600"
            ])
    }

    @Test func aFreshStateDirectoryIsPrivate() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let state = harness.folder + "/state"
        #expect(mode(state) == 0o700)
        for name in ["store.sqlite", "store.sqlite-wal", "store.sqlite-shm", "timeline.json"] {
            #expect(mode(state + "/" + name) == 0o600, "\(name)")
        }
        #expect(!harness.logLines().contains { $0.contains("made private") })
    }

    @Test func aSocketFolderOthersCanWriteWithoutTheStickyBitIsRefused() throws {
        var socketFolder = ""
        #expect(throws: FileRefusal.self) {
            _ = try DaemonHarness { folder in
                socketFolder = folder
                chmod(folder, 0o777)
            }
        }
        #expect(!FileManager.default.fileExists(atPath: socketFolder + "/state"), "refused before anything was written")
    }
}
