import SensorKitModel

/// The connections that asked to be told when an app's consent requests become pending or are
/// answered (`watchConsent`, docs/protocol.md §3.10), and what each has not been told yet.
///
/// Bounded whatever the clients do: one watch per connection, `maxPerUser` per Unix user and
/// `maxInAll` in the daemon; a watch has at most one event on its way to the socket, and what
/// changes meanwhile is remembered as the set of apps to tell about (at most the installed apps),
/// so a client that does not read costs one frame and that set, never a growing queue. Each
/// event says what is pending *when it is sent*, so folding changes together loses nothing.
struct ConsentWatchers {
    static let defaultMaxPerUser = 4
    static let defaultMaxInAll = 64

    struct Watch {
        /// The `watchConsent` request's id: events carry it as `target`.
        let target: UInt32
        let uid: UInt32
        /// Apps whose pending requests changed since the watch was last told about them.
        var untold: Set<String> = []
        /// An event is written to the socket and not yet taken by it.
        var sending = false
    }

    let maxPerUser: Int
    let maxInAll: Int
    private(set) var watches: [Int: Watch] = [:]

    init(maxPerUser: Int = defaultMaxPerUser, maxInAll: Int = defaultMaxInAll) {
        self.maxPerUser = maxPerUser
        self.maxInAll = maxInAll
    }

    /// Starts a watch for `connection`, or says why not (103 `tooManyRequests`).
    mutating func admit(connection: Int, target: UInt32, uid: UInt32) -> WireError? {
        if watches[connection] != nil {
            return WireError(.tooManyRequests, "this connection already watches consent requests (one watch per connection)")
        }
        if watches.values.count(where: { $0.uid == uid }) >= maxPerUser {
            return WireError(
                .tooManyRequests, "uid \(uid) already has \(maxPerUser) consent watches, the limit per user; close one first")
        }
        if watches.count >= maxInAll {
            return WireError(
                .tooManyRequests, "the daemon already serves \(maxInAll) consent watches, its limit; try again later")
        }
        watches[connection] = Watch(target: target, uid: uid)
        return nil
    }

    mutating func remove(connection: Int) { watches[connection] = nil }

    /// `app`'s pending requests changed: every watch of a uid in `mayKnow` is to be told.
    mutating func changed(_ app: String, mayKnow: (UInt32) -> Bool) {
        for (connection, watch) in watches where mayKnow(watch.uid) { watches[connection]?.untold.insert(app) }
    }

    /// A new watch is to be told what `app` waits for now (its first events).
    mutating func tell(_ connection: Int, about app: String) { watches[connection]?.untold.insert(app) }

    /// The next app to tell `connection` about, unless an event is on its way already; marks the
    /// watch as sending. Apps `mayKnow` refuses now (a reload took the uid off their Consenters)
    /// are dropped untold.
    mutating func next(for connection: Int, mayKnow: (String, UInt32) -> Bool) -> (target: UInt32, app: String)? {
        guard var watch = watches[connection], !watch.sending else { return nil }
        defer { watches[connection] = watch }
        while let app = watch.untold.min() {
            watch.untold.remove(app)
            if mayKnow(app, watch.uid) {
                watch.sending = true
                return (watch.target, app)
            }
        }
        return nil
    }

    /// The socket took the event last handed out for `connection`.
    mutating func written(connection: Int) { watches[connection]?.sending = false }
}
