import CSensorLinux
import Dispatch
import Foundation
import Glibc
import Synchronization

/// A thread of its own that sleeps in `poll(2)` on one fd and runs `body` each time the fd is
/// readable, or when a deadline the body asked for has passed. A negative fd is none (`poll`
/// ignores it): a thread woken by its deadlines only (`TickThread`).
///
/// Why not a `DispatchSourceRead`: on Linux, libdispatch's manager thread wakes from `epoll` and
/// hands every readable event to a worker thread, so each readiness costs the process two
/// wake-ups, and a sensor buffer that becomes readable ten times a second costs twenty. Here the
/// thread that slept is the one that reads: one wake-up per readiness (docs/iio.md §4, "Reading
/// thread"; docs/measurements/iio.md).
///
/// `stop()` wakes the thread through an eventfd and returns once it has left: `body` is not
/// running and `onExit` has run. `body` may also end the loop itself by returning `.stop`
/// (after a read error), and `stop()` may be called from inside `body`.
public final class ReadinessLoop: Sendable {
    /// Why the thread woke.
    public enum Wake: Sendable, Equatable {
        /// `poll` reported the fd (readable, or an error/hang-up condition a read will show).
        case readable
        /// The timeout the body asked for passed with nothing to read.
        case deadline
        /// `poll` itself failed (not EINTR, which is retried); the loop ends after this call.
        case failed(SystemError)
    }

    /// What to do after `body` returns.
    public enum Next: Sendable, Equatable {
        /// Sleep until the fd is readable or, when given, this many nanoseconds have passed.
        case wait(nanoseconds: Int64?)
        case stop
    }

    public let fileDescriptor: Int32
    private let wakeDescriptor: Int32
    private let finished = DispatchGroup()
    private let thread = Mutex<pthread_t?>(nil)

    /// Starts the thread at once; `body` and then `onExit` run on it. `firstTimeout` (ns) bounds
    /// the first sleep as `.wait` bounds the later ones.
    public init(
        name: String, fileDescriptor: Int32, firstTimeout: Int64? = nil,
        body: @escaping @Sendable (Wake) -> Next, onExit: @escaping @Sendable () -> Void
    ) throws(SystemError) {
        self.fileDescriptor = fileDescriptor
        wakeDescriptor = try syscall("eventfd") { csl_wake_counter() }
        finished.enter()
        let wake = wakeDescriptor
        // The thread keeps the loop (and so the wake counter) alive until it leaves.
        let worker = Thread { [self] in
            // Foundation's `Thread.name` does not reach the kernel on Linux; this does (`ps -L`).
            _ = csl_name_this_thread(name)
            thread.withLock { $0 = pthread_self() }
            Self.run(fileDescriptor: fileDescriptor, wake: wake, firstTimeout: firstTimeout, body: body)
            onExit()
            finished.leave()
        }
        worker.start()
    }

    deinit {
        // Closed here, never by the thread: a `stop()` after the thread left must not write to
        // a number the process may have reused.
        _ = SystemCalls.close(wakeDescriptor)
    }

    /// Ends the loop and waits for the thread to leave. Idempotent. From inside `body` it only
    /// asks: the loop ends when `body` returns.
    public func stop() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { bytes in try? SystemCalls.write(wakeDescriptor, bytes, "eventfd") }
        let onOwnThread = thread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
        if !onOwnThread { finished.wait() }
    }

    private static func run(fileDescriptor: Int32, wake: Int32, firstTimeout: Int64?, body: (Wake) -> Next) {
        var timeout = firstTimeout
        var entries = [
            pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            entries[0].revents = 0
            entries[1].revents = 0
            // Rounded up, so a deadline is never reported before it has passed.
            let milliseconds =
                timeout.map { Int32(clamping: (min(max(0, $0), Int64(Int32.max) * 1_000_000) + 999_999) / 1_000_000) } ?? -1
            let woke: Wake
            do throws(SystemError) {
                let ready = try syscall("poll(\(fileDescriptor))") { Glibc.poll(&entries, 2, milliseconds) }
                if entries[1].revents != 0 { return }
                woke = ready > 0 ? .readable : .deadline
            } catch {
                woke = .failed(error)
            }
            switch body(woke) {
            case .stop: return
            case let .wait(nanoseconds):
                if case .failed = woke { return }
                timeout = nanoseconds
            }
        }
    }
}
