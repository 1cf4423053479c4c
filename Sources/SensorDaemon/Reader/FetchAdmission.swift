/// How many fetches run at once, per Unix user and in all (docs/protocol.md §6.2): each running
/// fetch may hold one of the store's read connections, and each of those holds descriptors, so
/// one app opening connections and fetches without end would otherwise take every descriptor
/// the daemon has left, and with them every other app's fetches. A user gets at most
/// `perUser`, which is a share of `total`, so one user's load always leaves room for the others.
/// Confined to the reader's control queue, like the service that keeps it.
struct FetchAdmission {
    let total: Int
    let perUser: Int
    private(set) var running = 0
    private(set) var runningPerUser: [UInt32: Int] = [:]

    init(total: Int, perUser: Int) {
        self.total = max(1, total)
        self.perUser = max(1, min(perUser, total))
    }

    /// Takes a place for a fetch of `uid`, or says why there is none.
    mutating func admit(_ uid: UInt32) -> String? {
        let mine = runningPerUser[uid, default: 0]
        if mine >= perUser {
            return "uid \(uid) has \(mine) fetches running, the limit per user (max-fetches-per-user); retry once one has ended"
        }
        if running >= total {
            return "\(running) fetches are running, the limit of the daemon (max-fetches); retry once one has ended"
        }
        runningPerUser[uid] = mine + 1
        running += 1
        return nil
    }

    /// A fetch of `uid` admitted before has ended.
    mutating func release(_ uid: UInt32) {
        guard let mine = runningPerUser[uid], mine > 0 else { return }
        runningPerUser[uid] = mine > 1 ? mine - 1 : nil
        running -= 1
    }
}
