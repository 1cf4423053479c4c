import SensorSystem

/// Who may learn which apps are installed, what records, which devices are attached and how busy
/// the daemon is (docs/protocol.md §1.2): root, the daemon's own user, the members of its group
/// (primary or supplementary, as the kernel gave them at `connect`) and the people who answer a
/// study's consent (`Consenters`). Everyone else is a stranger.
public struct Administrators: Hashable, Sendable {
    /// The daemon's own uid and gid.
    public var uid: UInt32
    public var gid: UInt32

    public init(uid: UInt32, gid: UInt32) {
        self.uid = uid
        self.gid = gid
    }

    /// This process's effective user and group.
    public static var ofThisProcess: Administrators {
        let own = ProcessIdentity.own
        return Administrators(uid: own.uid, gid: own.gid)
    }

    /// Whether `peer` is an administrator: of `app` when given (its Consenters, not another
    /// app's), else of any installed app.
    public func include(_ peer: UnixSocket.PeerCredentials, in registry: AppRegistry, app: String? = nil) -> Bool {
        if peer.uid == 0 || peer.uid == uid || peer.gid == gid || peer.groups.contains(gid) { return true }
        if let app { return registry.apps[app]?.consenters.contains(peer.uid) == true }
        return registry.apps.values.contains { $0.consenters.contains(peer.uid) }
    }
}
