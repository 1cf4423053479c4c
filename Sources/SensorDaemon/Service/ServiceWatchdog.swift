import Dispatch
import SensorKitModel
import SensorSystem
import Synchronization

/// systemd's watchdog (`WATCHDOG=1` every half `WATCHDOG_USEC`, `WatchdogSec=` in
/// `systemd/sensorkitd.service`), sent only while the queues that do the daemon's work answer.
/// Each tick sends a probe to every such queue (the recording pipeline, the reader's control
/// queue), and the ping goes out when all have answered. A wedged queue therefore stops the
/// pings and systemd restarts the daemon, while the timer's own queue stays free. The housekeeping queue that purges the store is
/// not probed: a long purge is work, not a hang (docs/reliability.md, "The service manager").
public final class ServiceWatchdog: @unchecked Sendable {
    // @unchecked: `timer` is set once in init and only cancelled afterwards (a scheduled timer is
    // Sendable); the probe bookkeeping is behind a Mutex.
    /// Runs `answer` on the probed queue, asynchronously.
    public typealias Probe = @Sendable (_ answer: @escaping @Sendable () -> Void) -> Void

    private let queue = DispatchQueue(label: "sensorkitd.watchdog")
    private var timer: (any ScheduledTimer)?
    /// Probes sent on the last tick that have not answered: name → ticks waited.
    private let outstanding = Mutex<[String: Int]>([:])

    private let probes: [(String, Probe)]
    private let ping: @Sendable () -> Void
    private let log: Journal
    private let milliseconds: Int

    /// `probes` by name; `ping` sends `WATCHDOG=1`; `log` hears when a ping is withheld. Ticks
    /// every `interval` seconds on `scheduler` (tests move its time by hand).
    public init(
        interval: Double, scheduler: any Scheduler = DispatchScheduler(), probes: [(String, Probe)],
        ping: @escaping @Sendable () -> Void, log: Journal
    ) {
        self.probes = probes
        self.ping = ping
        self.log = log
        milliseconds = Int(min(max(interval, 0.01), 3600) * 1000)
        let period = Int64(milliseconds) * 1_000_000
        timer = scheduler.schedule(on: queue, after: 0, repeating: period) { [weak self] in self?.tick() }
    }

    /// Sends a probe to every queue; the ping goes out when the last one answers. A tick that
    /// finds probes still unanswered sends no new ones and withholds the ping (logged once per
    /// stall), so a wedged queue stops the pings until it answers again.
    private func tick() {
        dispatchPrecondition(condition: .onQueue(queue))
        let late = outstanding.withLock { waiting -> [String: Int] in
            for name in waiting.keys { waiting[name, default: 0] += 1 }
            return waiting
        }
        guard late.isEmpty else {
            if late.values.contains(1) {
                log.error(
                    "watchdog: \(late.keys.sorted().joined(separator: ", ")) did not answer within \(milliseconds) ms; withholding WATCHDOG=1"
                )
            }
            return
        }
        guard !probes.isEmpty else { return ping() }
        outstanding.withLock { waiting in for (name, _) in probes { waiting[name] = 0 } }
        for (name, probe) in probes {
            probe { [weak self] in self?.answered(name) }
        }
    }

    private func answered(_ name: String) {
        let all = outstanding.withLock { waiting -> Bool in
            waiting.removeValue(forKey: name)
            return waiting.isEmpty
        }
        if all { ping() }
    }

    public func stop() {
        timer?.cancel()
        queue.sync {}
    }
}
