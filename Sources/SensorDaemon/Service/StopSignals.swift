import Dispatch
import Glibc
import SensorSystem
import Synchronization

/// SIGTERM and SIGINT (stop) and SIGHUP (reload), taken over by Dispatch before the daemon starts.
///
/// The daemon says `READY=1` at the end of its start, and a service manager may send SIGTERM the
/// moment it reads that. Taken over only afterwards, a signal in between met `SIG_IGN` and was
/// lost: the daemon kept running and its stop hung (seen in the daemon benchmark). Likewise a
/// thread that does not block the signal may take it (and, ignored, drop it) before Dispatch
/// reads it. Made first, with the signals blocked before any thread starts, a stop asked for while
/// the daemon starts is kept and honoured as soon as it runs; a reload asked for before there is
/// anything to reload is logged and dropped.
public final class StopSignals: @unchecked Sendable {
    // @unchecked: `sources` is written once in init and only cancelled afterwards.
    private let stopRequested = DispatchSemaphore(value: 0)
    private let reloader = Mutex<(@Sendable () -> Void)?>(nil)
    private let queue = DispatchQueue(label: "sensorkitd.signals")
    private var sources: [any DispatchSourceSignal] = []

    /// Call on the main thread before any other thread starts: the signals are blocked here, and
    /// threads inherit the mask, so none of them takes a signal meant for Dispatch.
    public init(journal: Journal) {
        do {
            try SystemCalls.blockSignals([SIGTERM, SIGINT, SIGHUP])
        } catch {
            preconditionFailure("\(error)")  // only an invalid `how` fails: a bug, not weather
        }
        for number in [SIGTERM, SIGINT, SIGHUP] {
            // The Dispatch source takes the signal over; a failure here would only leave the
            // default action.
            _ = try? SystemCalls.ignoreSignal(number)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { [weak self] in
                guard let self else { return }
                if number == SIGHUP {
                    guard let reload = reloader.withLock({ $0 }) else {
                        return journal.notice("received SIGHUP while starting; nothing to reload yet")
                    }
                    return reload()
                }
                journal.notice("received signal \(number), stopping")
                stopRequested.signal()
            }
            source.resume()
            sources.append(source)
        }
        _ = try? SystemCalls.ignoreSignal(SIGPIPE)
    }

    /// What SIGHUP does from now on.
    public func onReload(_ reload: @escaping @Sendable () -> Void) { reloader.withLock { $0 = reload } }

    /// Blocks until SIGTERM or SIGINT (at once if one came already).
    public func waitForStop() { stopRequested.wait() }

    /// Hands the signals back to their default actions' stand-ins (after the stop).
    public func cancel() {
        for source in sources { source.cancel() }
    }
}
