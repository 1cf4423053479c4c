import Dispatch
import Foundation
import LocationBridge
import SensorKitModel
import SensorSystem
import SystemBus

/// The session's location, handed to the daemon as visits (docs/visits.md): a
/// `GeoClueLocationSource` on the system bus under the agent's desktop id feeds a `VisitTracker`
/// on the source's queue, and each visit it completes leaves as a `visit` event — distance,
/// bounds as ages, category, identifier; never a coordinate. Where GeoClue is absent or refuses,
/// the reason is logged and the agent goes on without location.
public final class LocationFeed: @unchecked Sendable {
    // @unchecked: `tracker` and `source` are touched only on `queue`.
    /// The id GeoClue's configuration must allow (`[sensorkit-session] allowed=true`).
    public static let desktopID = "sensorkit-session"
    private let queue = DispatchQueue(label: "sensorkit-session.location")
    private var tracker: VisitTracker
    private var source: GeoClueLocationSource?
    private let bus: DBusBus
    private let send: @Sendable ([WireUsageEvent]) -> Void
    private let log: @Sendable (LogMessage) -> Void
    private let now: @Sendable () -> Date
    private let keep: @Sendable ([PlaceBook.Place]) -> Void

    /// `labels`: the places file's; `places`: the book a previous run kept; `keep`: called on the
    /// feed's queue with the book after each visit, to keep it for the next run.
    public init(
        bus: DBusBus, key: PlaceKey, labels: [PlaceLabel] = [], places: [PlaceBook.Place] = [], utcOffsetSeconds: Int,
        send: @escaping @Sendable ([WireUsageEvent]) -> Void, log: @escaping @Sendable (LogMessage) -> Void,
        keep: @escaping @Sendable ([PlaceBook.Place]) -> Void = { _ in }, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.bus = bus
        tracker = VisitTracker(key: key, labels: labels, places: places, utcOffsetSeconds: utcOffsetSeconds)
        self.keep = keep
        self.send = send
        self.log = log
        self.now = now
    }

    /// Asks GeoClue for a client and starts it; `completion` says whether location is watched.
    public func start(completion: @escaping @Sendable (Bool) -> Void = { _ in }) {
        queue.async { [self] in
            let source: GeoClueLocationSource
            do throws(DBusError) {
                // The source's own queue: its `stop` waits on it.
                source = try GeoClueLocationSource(
                    bus: bus, desktopID: Self.desktopID, log: log,
                    onFix: { [weak self] fix in
                        guard let self else { return }
                        queue.async { self.take(fix) }
                    })
            } catch {
                log("location: GeoClue cannot be reached (\(error)); no visits are recorded")
                return completion(false)
            }
            self.source = source
            source.start { [self] result in queue.async { [self] in started(source, result, completion: completion) } }
        }
    }

    private func started(
        _ source: GeoClueLocationSource, _ result: Result<Void, DBusError>, completion: @escaping @Sendable (Bool) -> Void
    ) {
        dispatchPrecondition(condition: .onQueue(queue))
        // Stopped while GeoClue answered: nothing is watched.
        guard self.source === source else {
            if case .success = result { source.stop() }
            return completion(false)
        }
        switch result {
        case .success:
            send([WireUsageEvent(kind: .watching, on: true, source: "location")])
            log("location: watching GeoClue as \(Self.desktopID)")
            completion(true)
        case .failure(let error):
            log("location: GeoClue refused (\(error)); no visits are recorded")
            source.stop()
            self.source = nil
            completion(false)
        }
    }

    public func stop() {
        let running = queue.sync {
            defer { source = nil }
            return source
        }
        guard let running else { return }
        running.stop()
        send([WireUsageEvent(kind: .watching, on: false, source: "location")])
    }

    private func take(_ fix: LocationFix) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let visit = tracker.add(fix) else { return }
        keep(tracker.places)
        guard let handed = HandedVisit(visit, now: now()) else {
            return log("location: a visit older than the daemon keeps was not handed over")
        }
        send([
            .visit(
                distance: handed.distance, ages: handed.ages, category: handed.category.rawValue,
                place: handed.identifier.uuidString)
        ])
    }
}
