import Glibc
import Synchronization

/// A mutex that owns the state it guards: a reading thread (`ReadinessLoop`) and the code that
/// starts, stops and subscribes to it reach the state only inside `withLock`, as an `inout`.
///
/// Why not a serial `DispatchQueue` and `sync`: on Linux, `sync` from a thread that is not one of
/// libdispatch's costs ≈ 0.1 µs when warm but 15–17 µs of CPU after the thread slept 100 ms —
/// about a seventh of an IIO reading thread's whole wake — while this lock costs ≈ 1 µs cold
/// (docs/measurements/iio.md, "2026-12-06, night").
///
/// Why the state lives here and not in the owner's stored properties: every touch of a class's
/// stored `var` is checked for exclusive access at run time (a call into the Swift runtime and its
/// thread-local access set, cold after 100 ms of sleep); an IIO reading thread's wake made nine of
/// them (docs/measurements/iio.md, "2026-12-07, latest"). An `inout` to state kept here is checked
/// by the compiler instead, and the one way two accesses could still overlap — a holder asking
/// again — traps.
public final class ConfinementLock<State>: @unchecked Sendable {
    // @unchecked: the mutex is a pthread mutex of its own and the state a value of its own (both
    // heap-allocated here, never moved); the state is reached only holding the mutex, and
    // `holder` is atomic.
    // Usable from inlined code: `withLock` is inlined and specialized where it is called, so a
    // wake does not go through the generic function and its type metadata.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline let state: UnsafeMutablePointer<State>
    /// The holder's `pthread_self()`, 0 when free: written only by the holder.
    @usableFromInline let holder = Atomic<UInt>(0)

    public init(_ initial: State) {
        mutex = .allocate(capacity: 1)
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init")
        state = .allocate(capacity: 1)
        state.initialize(to: initial)
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` holding the lock, with the state. Not reentrant: a holder that asks again traps
    /// (two `inout`s to one state at once).
    @inlinable
    public func withLock<T>(_ body: (inout State) throws -> T) rethrows -> T {
        let me = UInt(pthread_self())
        precondition(holder.load(ordering: .relaxed) != me, "ConfinementLock.withLock re-entered by its holder")
        pthread_mutex_lock(mutex)
        holder.store(me, ordering: .relaxed)
        defer {
            holder.store(0, ordering: .relaxed)
            pthread_mutex_unlock(mutex)
        }
        return try body(&state.pointee)
    }
}
