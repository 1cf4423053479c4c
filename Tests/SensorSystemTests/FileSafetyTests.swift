import Foundation
import Glibc
import SensorSystem
import SensorTestKit
import Testing

/// A fresh folder under /tmp, removed by `remove()`.
struct ScratchFolder {
    let path: String

    init(mode: mode_t = 0o755) throws {
        var template = Array("/tmp/skfs-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemError("mkdtemp", errno: errno) }
        path = String(cString: made)
        chmod(path, mode)
    }

    init(path: String) { self.path = path }

    func remove() { try? FileManager.default.removeItem(atPath: path) }

    func write(_ name: String, _ text: String, mode: mode_t = 0o600) throws -> String {
        let file = path + "/" + name
        guard FileManager.default.createFile(atPath: file, contents: Data(text.utf8)) else {
            throw SystemError("create \(file)", errno: errno)
        }
        chmod(file, mode)
        return file
    }

    static func mode(_ path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
    }

    static func text(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }
}

let nobody: uid_t = 65534

@Suite struct AtomicWriteTests {
    @Test func aLinkPlantedAtTheTemporaryNameIsNotFollowed() throws {
        let folder = try ScratchFolder(mode: 0o1777)
        defer { folder.remove() }
        let victim = try folder.write("victim", "root's secret", mode: 0o600)
        let path = folder.path + "/timeline.json"
        #expect(symlink(victim, path + ".tmp.\(getpid())") == 0)

        try SystemFiles.writeAtomically(path, contents: Array("new timeline".utf8), mode: 0o644)

        #expect(ScratchFolder.text(victim) == "root's secret")
        #expect(ScratchFolder.mode(victim) == 0o600)
        var info = stat()
        #expect(lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG, "the file itself, not a link")
        #expect(ScratchFolder.text(path) == "new timeline")
        #expect(ScratchFolder.mode(path) == 0o644)
        #expect(!FileManager.default.fileExists(atPath: path + ".tmp.\(getpid())"))
    }

    @Test func writesArePrivateUnlessAModeIsGiven() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        try SystemFiles.writeAtomically(folder.path + "/state", contents: Array("x".utf8))
        #expect(ScratchFolder.mode(folder.path + "/state") == 0o600)
    }

    @Test func createIfMissingNeverFollowsALinkNorChangesAnExistingFile() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let victim = try folder.write("victim", "kept", mode: 0o644)
        #expect(symlink(victim, folder.path + "/store.sqlite") == 0)
        try SystemFiles.createIfMissing(folder.path + "/store.sqlite", mode: 0o600)
        #expect(ScratchFolder.mode(victim) == 0o644)
        try SystemFiles.createIfMissing(folder.path + "/fresh", mode: 0o600)
        #expect(ScratchFolder.mode(folder.path + "/fresh") == 0o600)
    }
}

@Suite struct StateDirectoryTests {
    @Test func aFolderOthersCanReadIsMadePrivateWithEverythingInIt() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let state = folder.path + "/state"
        #expect(mkdir(state, 0o755) == 0)
        chmod(state, 0o755)
        let store = try ScratchFolder(path: state).write("store.sqlite", "samples", mode: 0o644)
        #expect(mkdir(state + "/sub", 0o755) == 0)
        chmod(state + "/sub", 0o750)
        let inner = try ScratchFolder(path: state + "/sub").write("f", "x", mode: 0o640)

        let changes = try StateDirectory.secure(state)

        #expect(ScratchFolder.mode(state) == 0o700)
        #expect(ScratchFolder.mode(store) == 0o600)
        #expect(ScratchFolder.mode(state + "/sub") == 0o700)
        #expect(ScratchFolder.mode(inner) == 0o600)
        #expect(changes.count == 4)
        #expect(changes.first?.description == "\(state) 0755 → 0700")
        #expect(try StateDirectory.secure(state).isEmpty, "nothing more to do the second time")
    }

    @Test func aMissingFolderIsCreatedPrivate() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        #expect(try StateDirectory.secure(folder.path + "/a/state").isEmpty)
        #expect(ScratchFolder.mode(folder.path + "/a/state") == 0o700)
    }

    @Test func whatOthersCouldWriteIsRefusedAndLeftAlone() throws {
        let folder = try ScratchFolder(mode: 0o777)
        defer { folder.remove() }
        #expect(throws: FileRefusal.writableByOthers(folder.path, mode: 0o40777)) { try StateDirectory.secure(folder.path) }
        #expect(ScratchFolder.mode(folder.path) == 0o777, "a shared folder is never chmod-ed")
        chmod(folder.path, 0o1777)
        #expect(throws: FileRefusal.writableByOthers(folder.path, mode: 0o41777)) { try StateDirectory.secure(folder.path) }

        chmod(folder.path, 0o700)
        let file = try folder.write("store.sqlite", "x", mode: 0o666)
        #expect(throws: FileRefusal.writableByOthers(file, mode: 0o100666)) { try StateDirectory.secure(folder.path) }
    }

    @Test func linksAndOtherEntriesAreRefused() throws {
        let folder = try ScratchFolder(mode: 0o700)
        defer { folder.remove() }
        #expect(symlink("/etc/shadow", folder.path + "/store.sqlite") == 0)
        #expect(throws: FileRefusal.foreignEntry(folder.path + "/store.sqlite")) { try StateDirectory.secure(folder.path) }
    }

    @Test(.needs(.root("chown to another user")))
    func anotherUsersFileIsRefused() throws {
        let folder = try ScratchFolder(mode: 0o700)
        defer { folder.remove() }
        let file = try folder.write("timeline.json", "{}", mode: 0o600)
        #expect(chown(file, nobody, nobody) == 0)
        #expect(throws: FileRefusal.notOwnedByDaemonUser(file, uid: nobody)) { try StateDirectory.secure(folder.path) }
        #expect(chown(folder.path, nobody, nobody) == 0)
        #expect(throws: FileRefusal.notOwnedByDaemonUser(folder.path, uid: nobody)) { try StateDirectory.secure(folder.path) }
    }
}

@Suite struct SharedFolderTests {
    @Test func aFolderOthersCanWriteNeedsTheStickyBit() throws {
        let folder = try ScratchFolder(mode: 0o777)
        defer { folder.remove() }
        #expect(throws: FileRefusal.writableWithoutStickyBit(folder.path, mode: 0o40777)) {
            try SharedFolder.prepare(folder.path)
        }
        chmod(folder.path, 0o775)
        #expect(throws: FileRefusal.writableWithoutStickyBit(folder.path, mode: 0o40775)) {
            try SharedFolder.prepare(folder.path)
        }
        chmod(folder.path, 0o1777)
        try SharedFolder.prepare(folder.path)
        chmod(folder.path, 0o755)
        try SharedFolder.prepare(folder.path)
        try SharedFolder.prepare(folder.path + "/run/sensorkit")
        #expect(FileManager.default.fileExists(atPath: folder.path + "/run/sensorkit"))
    }

    @Test(.needs(.root("chown to another user")))
    func anotherUsersFolderIsRefused() throws {
        let folder = try ScratchFolder(mode: 0o755)
        defer { folder.remove() }
        #expect(chown(folder.path, nobody, nobody) == 0)
        #expect(throws: FileRefusal.ownedByAnotherUser(folder.path, uid: nobody)) { try SharedFolder.prepare(folder.path) }
    }
}

@Suite struct AdministeredFileTests {
    @Test func readsAFileOnlyItsOwnerCanWrite() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let file = try folder.write("sensorkitd.conf", "profile = lab\n", mode: 0o644)
        #expect(try AdministeredFile.read(file, limit: 100) == Array("profile = lab\n".utf8))
    }

    @Test func aFileOverTheBoundIsRefused() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let file = try folder.write("big", String(repeating: "x", count: 101), mode: 0o644)
        #expect(throws: FileRefusal.tooLarge(file, limit: 100)) { try AdministeredFile.read(file, limit: 100) }
        #expect(try AdministeredFile.read(file, limit: 101).count == 101)
    }

    @Test func aFileGroupOrOthersCanWriteIsRefused() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let file = try folder.write("Binding.plist", "<plist/>", mode: 0o664)
        #expect(throws: FileRefusal.writableByOthers(file, mode: 0o100664)) { try AdministeredFile.read(file, limit: 100) }
        chmod(file, 0o646)
        #expect(throws: FileRefusal.writableByOthers(file, mode: 0o100646)) { try AdministeredFile.read(file, limit: 100) }
    }

    @Test func aFifoIsRefusedWithoutWaitingForAWriter() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        #expect(mkfifo(folder.path + "/Info.plist", 0o600) == 0)
        #expect(throws: FileRefusal.notRegularFile(folder.path + "/Info.plist")) {
            try AdministeredFile.read(folder.path + "/Info.plist", limit: 100)
        }
    }

    @Test(.needs(.root("chown to another user")))
    func anotherUsersFileIsRefused() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let file = try folder.write("Binding.plist", "<plist/>", mode: 0o644)
        #expect(chown(file, nobody, nobody) == 0)
        #expect(throws: FileRefusal.ownedByAnotherUser(file, uid: nobody)) { try AdministeredFile.read(file, limit: 100) }
    }
}
