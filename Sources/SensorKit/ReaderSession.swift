import Foundation
import SensorKitModel
import Synchronization

/// The process's connection to sensorkitd, shared by every reader of the same app and opened on
/// first use. The app identity is `SENSORKIT_APP`, else the bundle identifier, else the
/// executable's name; the daemon checks it against the app's manifest and the peer's uid.
public enum ReaderSession {
    private static let shared = Mutex<ReaderConnection?>(nil)

    /// The bundle id this process acts as.
    public static var appIdentifier: String {
        if let app = ProcessInfo.processInfo.environment["SENSORKIT_APP"], !app.isEmpty { return app }
        if let bundle = Bundle.main.bundleIdentifier { return bundle }
        return ProcessInfo.processInfo.processName
    }

    /// The open connection, connecting if needed; throws `SRError` when the daemon is unreachable
    /// or refuses this app.
    public static func connection() throws -> ReaderConnection {
        try shared.withLock { connection in
            if let connection, !connection.isClosed { return connection }
            let made = try ReaderConnection(socketPath: SensorKitEnvironment.current.socketPath, app: appIdentifier)
            if let timeline = made.welcome.timeline { SensorKitEnvironment.adopt(timeline) }
            connection = made
            return made
        }
    }

    /// Forgets the shared connection (tests, or after the daemon restarted).
    public static func reset() {
        let old = shared.withLock { connection -> ReaderConnection? in
            defer { connection = nil }
            return connection
        }
        old?.close()
    }
}
