import Foundation
import Glibc
import LocationBridge
import SensorSystem
import Synchronization
import Testing

@testable import SessionAgent

/// The session agent's two files with coordinates in them, the place labels and the place book:
/// read only when the participant alone can read them, and what is logged about them holds
/// line numbers and reasons, never a coordinate.
@Suite struct PlaceFilesTests {
    static func folder() throws -> String {
        var template = Array("/tmp/skplaces-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemError("mkdtemp", errno: errno) }
        return String(cString: made)
    }

    @Test func aPlacesFileOthersCanReadIsRefusedWithAClearMessage() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/places"
        let logged = LoggedLines()
        let log = { (message: LogMessage) in logged.append(message.text) }
        #expect(
            PlaceLabelsFile.load(path, log: log).isEmpty && logged.all.isEmpty, "no file: no labels, nothing to say")

        try "home 48.8566,2.3522\nwork 48.8606,2.3376,80\nwork 48.86 2.33\n".write(
            toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o644)
        #expect(PlaceLabelsFile.load(path, log: log).isEmpty)
        #expect((logged.all.last ?? "").contains("mode 0644"), "\(logged.all)")
        #expect((logged.all.last ?? "").contains("chmod 600"))

        chmod(path, 0o600)
        let labels = PlaceLabelsFile.load(path, log: log)
        #expect(labels.map(\.category) == [.home, .work] && labels.map(\.radius) == [150, 80])
        #expect(logged.all.contains { $0.contains("line 3: ") && $0.contains("skipped") })
        for line in logged.all {
            for coordinate in ["48.8", "2.35", "2.33"] { #expect(!line.contains(coordinate), "\(line)") }
        }

        // A link in its place is not followed; an oversized file is refused whole.
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "/etc/hostname")
        #expect(PlaceLabelsFile.load(path, log: log).isEmpty)
        try FileManager.default.removeItem(atPath: path)
        try String(repeating: "# padding\n", count: 2_000).write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o600)
        #expect(PlaceLabelsFile.load(path, log: log).isEmpty)
        #expect((logged.all.last ?? "").contains("larger than \(PlaceLabelsFile.maximumBytes) bytes"))
    }

    @Test func thePlaceBookIsKeptOwnerOnlyBesideTheKey() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = PlaceBookFile.path(besideKey: folder + "/sensorkit/place-key")
        #expect(path == folder + "/sensorkit/place-book")
        try FileManager.default.createDirectory(atPath: folder + "/sensorkit", withIntermediateDirectories: true)
        let places = [
            PlaceBook.Place(latitude: 48.8566, longitude: 2.3522, identifier: UUID(), nightNanoseconds: 3_600_000_000_000)
        ]
        try PlaceBookFile.save(places, to: path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let back = PlaceBookFile.load(path) { _ in }
        #expect(back.map(\.identifier) == places.map(\.identifier) && back.map(\.latitude) == [48.8566])
        chmod(path, 0o640)
        let logged = LoggedLines()
        #expect(PlaceBookFile.load(path) { logged.append($0.text) }.isEmpty)
        #expect((logged.all.first ?? "").contains("refused"))
    }
}

/// What a loader logged, in order.
final class LoggedLines: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}
