/// The daemon's paths (docs/configuration.md), each overridable so everything runs unprivileged from a checkout.
public struct DaemonPaths: Hashable, Sendable {
    public var socket: String
    public var config: String
    public var appsDirectory: String
    public var stateDirectory: String

    public static let system = DaemonPaths(
        socket: "/run/sensorkit/sensorkitd.sock",
        config: "/etc/sensorkit/sensorkitd.conf",
        appsDirectory: "/etc/sensorkit/apps.d",
        stateDirectory: "/var/lib/sensorkit")

    public init(socket: String, config: String, appsDirectory: String, stateDirectory: String) {
        self.socket = socket
        self.config = config
        self.appsDirectory = appsDirectory
        self.stateDirectory = stateDirectory
    }
}
