import Glibc
import Synchronization

/// A mutex for state that a reading thread (`ReadinessLoop`) shares with the code that starts,
/// stops and subscribes to it: whoever holds it may touch the state, and `assertHeld()` checks
/// that a method meant for a holder has one.
///
/// Why not a serial `DispatchQueue` and `sync`: on Linux, `sync` from a thread that is not one of
/// libdispatch's costs ≈ 0.1 µs when warm but 15–17 µs of CPU after the thread slept 100 ms —
/// about a seventh of an IIO reading thread's whole wake — while this lock costs ≈ 1 µs cold
/// (docs/measurements/iio.md, "2026-12-06, night").
public final class ConfinementLock: @unchecked Sendable {
    // @unchecked: the mutex is a pthread mutex of its own (never moved: heap-allocated here), and
    // `holder` is atomic.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// The holder's `pthread_self()`, 0 when free: written only by the holder.
    private let holder = Atomic<UInt>(0)

    public init() {
        mutex = .allocate(capacity: 1)
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` holding the lock. Not reentrant: a holder that asks again deadlocks.
    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        holder.store(UInt(pthread_self()), ordering: .relaxed)
        defer {
            holder.store(0, ordering: .relaxed)
            pthread_mutex_unlock(mutex)
        }
        return try body()
    }

    /// Traps unless the calling thread holds the lock.
    public func assertHeld(_ file: StaticString = #fileID, _ line: UInt = #line) {
        precondition(holder.load(ordering: .relaxed) == UInt(pthread_self()), "lock not held", file: file, line: line)
    }
}
