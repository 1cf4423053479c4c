import Dispatch
import SensorKitModel
import SensorSystem

/// The BLE driver's discovery: scans while a wearable is being searched for (at least once a
/// second), connects one wearable at a time and never while a scan pass runs, and on stop lets
/// every link stop its PMD streams before it closes. Everything runs on one serial queue.
public final class BLECentral: @unchecked Sendable {
    // @unchecked: every field is confined to `queue`.
    static let tickNanoseconds: Int64 = 250_000_000
    static let scanInterval: Int64 = 900_000_000
    /// How long a planned disconnect waits for the devices to confirm PMD STOP.
    static let stopTimeoutSeconds = 2.0
    /// A tick this late means the queue was held up: heart rate and wrist state, stamped when
    /// their PDU is read, may be late by as much, and the log says so rather than staying silent.
    static let lateTick: Int64 = 500_000_000

    let queue = DispatchQueue(label: "sensorkitd.ble")
    private let transport: any BLETransport
    private let clock: any SystemClock
    private let journal: Journal
    private let links: [WearableLink]
    private var timer: (any DispatchSourceTimer)?
    private var lastScan: Int64?
    private var scanProblem: String?
    private var lastTick: Int64?
    private let problems: RecurringProblems
    private let durations: @Sendable (Int64) -> String

    /// `durations` words a span of nanoseconds for the log the way the rest of the daemon does.
    public init(
        transport: any BLETransport, wearables: [WearableConfiguration], registry: any SourceRegistry,
        clock: any SystemClock, journal: Journal, durations: @escaping @Sendable (Int64) -> String
    ) {
        self.transport = transport
        self.durations = durations
        self.clock = clock
        self.journal = journal
        problems = RecurringProblems(journal)
        let queue = self.queue
        links = wearables.map {
            WearableLink(
                configuration: $0, queue: queue, transport: transport, registry: registry, clock: clock, journal: journal,
                durations: durations)
        }
    }

    public func start() {
        queue.async {
            let timer = DispatchSource.makeTimerSource(queue: self.queue)
            timer.schedule(deadline: .now(), repeating: .nanoseconds(Int(Self.tickNanoseconds)), leeway: .milliseconds(20))
            timer.setEventHandler { [weak self] in self?.tick() }
            timer.resume()
            self.timer = timer
        }
    }

    private func tick() {
        dispatchPrecondition(condition: .onQueue(queue))
        let now = clock.boottimeNanoseconds()
        if let last = lastTick, now &- last > Self.lateTick {
            let late = durations(now &- last &- Self.tickNanoseconds)
            problems.report(
                "ble: queue held up",
                "<4>ble: the driver's queue was held up \(late); heart rates and wrist states received meanwhile are stamped up to that late; counted, and summed up in the log later"
            )
        }
        lastTick = now
        for link in links { link.tick(now: now) }
        let searching = links.filter(\.isSearching)
        guard !searching.isEmpty, lastScan.map({ now &- $0 >= Self.scanInterval }) ?? true else { return }
        lastScan = now
        let reports: [BLEScanReport]
        do {
            reports = try transport.scan()
            if scanProblem != nil { journal.notice("ble: scanning works again") }
            scanProblem = nil
        } catch {
            let why: String
            switch error {
            case .busy(let detail):
                why =
                    "\(detail) — another Bluetooth stack holds the adapter (bluetoothd discovery or a scanner left running); stop it or retry later"
            default:
                why = error.description
            }
            if scanProblem != why { journal.warning("ble: scan failed: \(why); retrying every second") }
            scanProblem = why
            return
        }
        // Connects run after the scan pass, one at a time on this queue.
        for link in searching { link.scanned(reports) }
    }

    /// A planned disconnect of every wearable: PMD STOP for each running stream, wait (bounded)
    /// for the devices to confirm, then close the links.
    public func stop() {
        let confirmed = DispatchSemaphore(value: 0)
        let count = queue.sync { () -> Int in
            timer?.cancel()
            timer = nil
            for link in links { link.stopStreams { confirmed.signal() } }
            return links.count
        }
        let deadline = DispatchTime.now() + Self.stopTimeoutSeconds
        for _ in 0..<count where confirmed.wait(timeout: deadline) == .timedOut {
            journal.warning("ble: a wearable did not confirm PMD STOP within \(Self.stopTimeoutSeconds) s; closing anyway")
            break
        }
        queue.sync { for link in links { link.close() } }
    }
}
