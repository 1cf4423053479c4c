import BLEBridge
import Synchronization
import Testing

@testable import SensorDaemon

/// The choice `[ble]` without `transport =` makes (docs/ble.md, "Which transport without
/// `transport =`"): the decision from what bluetoothd answered, and the bounded look loop on a
/// scripted clock.
@Suite struct BLETransportChoiceTests {
    typealias Sighting = BLETransportChoice.Sighting
    static let patience: Duration = .seconds(10)

    static func decide(_ presence: BluetoothdPresence, process: Bool = false, waited: Duration) -> BLETransportChoice {
        BLETransportChoice.decide(
            adapter: "hci0", Sighting(presence: presence, processRunning: process), waited: waited, patience: patience)
    }

    static func isBluez(_ choice: BLETransportChoice) -> Bool { if case .bluez = choice { true } else { false } }
    static func isHCI(_ choice: BLETransportChoice) -> Bool { if case .hci = choice { true } else { false } }

    @Test(.timeLimit(.minutes(3)))
    func theDecisionTable() {
        // bluetoothd exports the adapter: bluez, whenever it is seen.
        for waited in [Duration.zero, .seconds(3), .seconds(10), .seconds(12)] {
            for process in [false, true] {
                #expect(Self.isBluez(Self.decide(.managesAdapter, process: process, waited: waited)))
            }
        }
        // bluetoothd on the bus without the adapter: look again, then bluez anyway.
        #expect(Self.decide(.runsWithoutAdapter, waited: .zero) == .lookAgain)
        #expect(Self.decide(.runsWithoutAdapter, waited: .milliseconds(9_999)) == .lookAgain)
        #expect(Self.isBluez(Self.decide(.runsWithoutAdapter, waited: .seconds(10))))
        #expect(Self.isBluez(Self.decide(.runsWithoutAdapter, process: true, waited: .seconds(11))))
        // Not on the bus but a bluetoothd process runs (starting): look again, then bluez anyway.
        #expect(Self.decide(.absent, process: true, waited: .zero) == .lookAgain)
        #expect(Self.decide(.absent, process: true, waited: .seconds(9)) == .lookAgain)
        #expect(Self.isBluez(Self.decide(.absent, process: true, waited: .seconds(10))))
        // No bluetoothd at all: hci, at once and after waiting.
        #expect(Self.isHCI(Self.decide(.absent, waited: .zero)))
        #expect(Self.isHCI(Self.decide(.absent, waited: .seconds(4))))
    }

    @Test(.timeLimit(.minutes(3)))
    func theSentencesSayWhy() {
        #expect(
            Self.decide(.managesAdapter, waited: .zero).reason
                == "bluetoothd manages hci0 (org.bluez exports /org/bluez/hci0), so wearables go through it: bluez")
        #expect(
            Self.decide(.managesAdapter, waited: .milliseconds(3_400)).reason
                == "bluetoothd manages hci0 (org.bluez exported /org/bluez/hci0 after 3 s), so wearables go through it: bluez")
        let late = Self.decide(.runsWithoutAdapter, waited: .milliseconds(10_600)).reason ?? ""
        #expect(late.hasPrefix("bluetoothd is on the system bus but did not export /org/bluez/hci0 within 11 s;"), "\(late)")
        #expect(late.hasSuffix(": bluez"), "\(late)")
        let starting = Self.decide(.absent, process: true, waited: .seconds(10)).reason ?? ""
        #expect(starting.hasPrefix("bluetoothd runs but did not answer on the system bus"), "\(starting)")
        #expect(
            Self.decide(.absent, waited: .zero).reason
                == "bluetoothd is neither on the system bus nor running, so hci0 is opened directly: hci")
        #expect(BLETransportChoice.lookAgain.reason == nil)
    }

    /// A scripted clock: `pause` moves it on, each look takes `lookTakes`; `sightings` by time.
    final class Script: Sendable {
        let now = Mutex<Duration>(.zero)
        let looks = Mutex<[Duration]>([])
        let lookTakes: Duration
        let sighting: @Sendable (Duration) -> Sighting

        init(lookTakes: Duration = .milliseconds(5), _ sighting: @escaping @Sendable (Duration) -> Sighting) {
            self.lookTakes = lookTakes
            self.sighting = sighting
        }

        func settle(patience: Duration = BLETransportChoiceTests.patience) -> BLETransportChoice {
            BLETransportChoice.settle(
                adapter: "hci0", patience: patience, interval: .seconds(1),
                look: {
                    let at = now.withLock { $0 }
                    looks.withLock { $0.append(at) }
                    now.withLock { $0 += lookTakes }
                    return sighting(at)
                },
                now: { self.now.withLock { $0 } },
                pause: { duration in self.now.withLock { $0 += duration } })
        }

        var lookCount: Int { looks.withLock { $0.count } }
        var end: Duration { now.withLock { $0 } }
    }

    @Test(.timeLimit(.minutes(3)))
    func anAdapterExportedLateIsWaitedForAndTaken() {
        let script = Script { at in
            Sighting(presence: at < .seconds(3) ? .runsWithoutAdapter : .managesAdapter, processRunning: false)
        }
        let choice = script.settle()
        #expect(Self.isBluez(choice))
        #expect(choice.reason?.contains("exported /org/bluez/hci0 after 3 s") == true, "\(choice)")
        // About once a second: at 0, 1, 2 and 3 s (plus the looks' own time).
        #expect(script.lookCount == 4)
    }

    @Test(.timeLimit(.minutes(3)))
    func anAdapterNeverExportedStillMeansBluezWithinThePatience() {
        let script = Script { _ in Sighting(presence: .runsWithoutAdapter, processRunning: false) }
        let choice = script.settle()
        #expect(Self.isBluez(choice))
        #expect(choice.reason?.contains("did not export /org/bluez/hci0 within 10 s") == true, "\(choice)")
        // The last look comes at the patience, not a second later; no more than one a second.
        #expect(script.end <= Self.patience + .milliseconds(10))
        #expect(script.lookCount >= 10 && script.lookCount <= 12, "\(script.lookCount)")
    }

    /// The first look's own time is not waiting: its sentence is the plain one.
    @Test(.timeLimit(.minutes(3)))
    func anAdapterExportedAtTheFirstLookIsTakenAtOnce() {
        let script = Script(lookTakes: .milliseconds(1_500)) { _ in Sighting(presence: .managesAdapter, processRunning: false) }
        #expect(
            script.settle().reason
                == "bluetoothd manages hci0 (org.bluez exports /org/bluez/hci0), so wearables go through it: bluez")
        #expect(script.lookCount == 1)
    }

    @Test(.timeLimit(.minutes(3)))
    func withoutBluetoothdHCIIsTakenAtOnce() {
        let script = Script { _ in Sighting(presence: .absent, processRunning: false) }
        #expect(Self.isHCI(script.settle()))
        #expect(script.lookCount == 1)
        #expect(script.end == .milliseconds(5))
    }

    @Test(.timeLimit(.minutes(3)))
    func aBluetoothdStillStartingIsWaitedForThenTaken() {
        // The process runs first, then owns org.bluez, then exports the adapter.
        let script = Script { at in
            if at < .seconds(2) { return Sighting(presence: .absent, processRunning: true) }
            return Sighting(presence: at < .seconds(5) ? .runsWithoutAdapter : .managesAdapter, processRunning: false)
        }
        #expect(Self.isBluez(script.settle()))
        #expect(script.end < .seconds(6))
    }

    @Test(.timeLimit(.minutes(3)))
    func aBluetoothdThatExitsWhileStartingLeavesHCI() {
        let script = Script { at in Sighting(presence: .absent, processRunning: at < .seconds(2)) }
        #expect(Self.isHCI(script.settle()))
        #expect(script.lookCount == 3)
    }

    @Test(.timeLimit(.minutes(3)))
    func slowLooksDoNotStretchTheWait() {
        // Each look takes the bus's whole 2 s timeout: still bounded by the patience and two looks.
        let script = Script(lookTakes: .seconds(2)) { _ in Sighting(presence: .absent, processRunning: true) }
        #expect(Self.isBluez(script.settle()))
        #expect(script.end <= Self.patience + .seconds(4))
        #expect(script.settle(patience: .zero) != .lookAgain)
    }
}
