import BLEBridge
import Glibc

/// Which transport `[ble]` without `transport =` takes (docs/ble.md, "Which transport without
/// `transport =`"): `bluez` wherever bluetoothd is, `hci` only where it is not at all. At boot
/// bluetoothd may own `org.bluez` before it exports the adapter (it adds one once the kernel
/// reports the controller), or may still be starting; `hci` there would take an adapter
/// bluetoothd is about to manage, so the choice waits a while for the adapter and, if it never
/// comes, still takes `bluez` (which waits for the adapter itself).
enum BLETransportChoice: Equatable, Sendable {
    case bluez(because: String)
    case hci(because: String)
    /// bluetoothd is there or starting, without the adapter yet: look again.
    case lookAgain

    /// One look at bluetoothd.
    struct Sighting: Equatable, Sendable {
        var presence: BluetoothdPresence
        /// Whether a `bluetoothd` process runs; it counts only when the bus could not tell.
        var processRunning: Bool

        /// Asks the system bus about `adapter`, and `/proc` only when the bus could not tell.
        static func look(adapter: String) -> Sighting {
            let presence = BluetoothdPresence.probe(adapter: adapter)
            return Sighting(presence: presence, processRunning: presence == .absent && BluetoothdPresence.processRunning())
        }
    }

    /// How long the choice waits for bluetoothd to export the adapter, and how often it looks.
    static let defaultPatience: Duration = .seconds(10)
    static let defaultInterval: Duration = .seconds(1)

    /// The sentence said once in the log, after "no [ble] transport set: "; nil while looking.
    var reason: String? {
        switch self {
        case .bluez(let because), .hci(let because): because
        case .lookAgain: nil
        }
    }

    /// The choice after `sighting`, a look that started `waited` after the first one (zero: the
    /// first), waiting at most `patience` (pure).
    static func decide(adapter: String, _ sighting: Sighting, waited: Duration, patience: Duration) -> BLETransportChoice {
        let waitedOut = waited >= patience
        switch sighting.presence {
        case .managesAdapter:
            let exported =
                waited == .zero
                ? "org.bluez exports /org/bluez/\(adapter)"
                : "org.bluez exported /org/bluez/\(adapter) after \(wholeSeconds(waited)) s"
            return .bluez(because: "bluetoothd manages \(adapter) (\(exported)), so wearables go through it: bluez")
        case .runsWithoutAdapter where waitedOut:
            return .bluez(
                because:
                    "bluetoothd is on the system bus but did not export /org/bluez/\(adapter) within \(wholeSeconds(waited)) s; it adds an adapter once the kernel reports its controller, so wearables go through it once it does (`transport = hci` is for an adapter bluetoothd never manages): bluez"
            )
        case .absent where sighting.processRunning && waitedOut:
            return .bluez(
                because:
                    "bluetoothd runs but did not answer on the system bus for /org/bluez/\(adapter) within \(wholeSeconds(waited)) s, so wearables go through it once it does: bluez"
            )
        case .runsWithoutAdapter:
            return .lookAgain
        case .absent where sighting.processRunning:
            return .lookAgain
        case .absent:
            return .hci(because: "bluetoothd is neither on the system bus nor running, so \(adapter) is opened directly: hci")
        }
    }

    /// Looks until `decide` chooses: at once when the first look settles it, else about every
    /// `interval`, the last look starting by `patience` (so the wait is bounded by `patience` and
    /// two looks' own bounded waits). `now` and `pause` are the clock, replaceable in tests.
    static func settle(
        adapter: String, patience: Duration = defaultPatience, interval: Duration = defaultInterval,
        look: () -> Sighting, now: () -> Duration = { ContinuousClock.now - epoch }, pause: (Duration) -> Void = sleepHere
    ) -> BLETransportChoice {
        // A zero interval would probe the bus in a busy loop.
        let interval = max(interval, .milliseconds(10))
        let start = now()
        var waited = Duration.zero
        while true {
            let choice = decide(adapter: adapter, look(), waited: waited, patience: patience)
            guard choice == .lookAgain else { return choice }
            // A look that started before `patience` may end after it: the next one is the last.
            let left = patience - (now() - start)
            if left > .zero { pause(min(interval, left)) }
            // Read before the next look: its own time is not waiting.
            waited = now() - start
        }
    }

    /// Where `settle`'s default clock counts from (only differences of it are used).
    static let epoch = ContinuousClock.now

    private static func sleepHere(_ duration: Duration) {
        usleep(UInt32(clamping: duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000))
    }

    /// Seconds, rounded to the nearest, for the log.
    private static func wholeSeconds(_ duration: Duration) -> Int64 {
        duration.components.seconds + (duration.components.attoseconds >= 500_000_000_000_000_000 ? 1 : 0)
    }
}
