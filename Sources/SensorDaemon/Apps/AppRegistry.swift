import Foundation
import Glibc
import SensorKitModel
import SensorSystem

/// Every installed app manifest, and the check that a connection may act as one of them.
public struct AppRegistry: Sendable {
    public private(set) var apps: [String: AppManifest]

    public init(apps: [AppManifest]) {
        self.apps = Dictionary(apps.map { ($0.bundleID, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Loads every `apps.d/<bundle-id>/`; a broken manifest is skipped and reported, never fatal.
    /// An apps.d that another user could fill installs no app at all.
    public static func load(directory: String) -> (registry: AppRegistry, problems: [String]) {
        do {
            try AdministeredFile.checkFolder(directory)
        } catch .unreadable(let failure) where failure.errno == ENOENT {
            return (AppRegistry(apps: []), [])
        } catch {
            return (AppRegistry(apps: []), ["no app installed: \(error)"])
        }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        var apps: [AppManifest] = []
        var problems: [String] = []
        for name in names where !name.hasPrefix(".") {
            do {
                apps.append(try AppManifest.load(directory: directory + "/" + name, resolveUser: UserDatabase.uid(forName:)))
            } catch {
                problems.append("app \(name) skipped: \(error)")
            }
        }
        return (AppRegistry(apps: apps), problems)
    }

    public enum Refusal: Error, Hashable, Sendable, CustomStringConvertible {
        case unknownApp(String)
        case userNotBound(app: String, uid: UInt32)
        case wrongExecutable(app: String, expected: String, actual: String?)

        public var description: String {
            switch self {
            case .unknownApp(let app): return "no app '\(app)' is installed in apps.d"
            case .userNotBound(let app, let uid): return "uid \(uid) is not bound to app '\(app)'"
            case .wrongExecutable(let app, let expected, let actual):
                return "app '\(app)' may only be run as \(expected), not \(actual ?? "an unknown executable")"
            }
        }
    }

    /// The manifest `app` if the peer may act as it: its uid is bound, and if the manifest names an
    /// executable, the peer process runs it (`/proc/<pid>/exe`).
    public func authenticate(
        app: String, peer: UnixSocket.PeerCredentials,
        executableOf: (Int32) -> String? = ProcessIdentity.executable(ofPID:)
    ) throws(Refusal) -> AppManifest {
        guard let manifest = apps[app] else { throw .unknownApp(app) }
        guard manifest.uids.contains(peer.uid) else { throw .userNotBound(app: app, uid: peer.uid) }
        if let expected = manifest.executable {
            let actual = executableOf(peer.pid)
            guard actual == expected else { throw .wrongExecutable(app: app, expected: expected, actual: actual) }
        }
        return manifest
    }

    /// The manifest a connection bound to `bound` at `hello` acts under now, checked as `hello`
    /// would check it (docs/protocol.md §3.6): throws when the app was uninstalled or the uid
    /// removed from its binding. The executable is read again only when the manifest names a new one.
    public func rebind(
        _ bound: AppManifest, peer: UnixSocket.PeerCredentials,
        executableOf: (Int32) -> String? = ProcessIdentity.executable(ofPID:)
    ) throws(Refusal) -> AppManifest {
        let unchanged = apps[bound.bundleID]?.executable == bound.executable
        return try authenticate(
            app: bound.bundleID, peer: peer, executableOf: { unchanged ? bound.executable : executableOf($0) })
    }
}
