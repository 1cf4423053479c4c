import Dispatch
import Glibc
import SensorSystem
import Synchronization

/// The store writer's own thread (docs/store.md, "When the writer wakes"): runs jobs one at a
/// time in the order they were queued, and rings the writer's alarms at their deadlines; in
/// between it sleeps in `poll` on one timerfd (`AlarmTimer`, through a `ReadinessLoop`).
///
/// Why not a serial `DispatchQueue` with `DispatchSourceTimer`s: on Linux a job queued to an
/// idle queue wakes a pooled worker (often a new thread: workers come and go), a timer set from
/// a worker wakes the dispatch manager thread to reprogram its own timer, and a timer that fires
/// wakes the manager and then a worker. Here a hand-over costs one wake-up, and a deadline one.
///
/// One timerfd serves both: a job queued while the thread sleeps sets the alarm to a past
/// instant (it rings at once); before the thread sleeps it sets the alarm to the earliest
/// deadline plus that alarm's slack, and rings every alarm due by then together. So a deadline
/// set from another thread (an append's drain deadline) wakes nobody until it comes, and the
/// slack (a dispatch timer's leeway: late, never early) lets alarms share a wake-up.
///
/// A thread that is awake anyway may stand in for the sleeping one (`runHereOrQueue`): it runs
/// the job, and whatever that queues or brings due, itself, and leaves the writer asleep. The
/// IIO reading thread hands a due chip's batches over this way, which saves the writer's wake-up
/// at every hand-over.
final class WriterThread: Sendable {
    /// The writer's alarms, one deadline each (setting one again replaces it).
    enum Alarm: Int, CaseIterable, Sendable {
        /// Appended samples fall due (`AppendInbox`).
        case drain
        /// A flood's grace has passed: drain what it gathered.
        case grace
        /// A commit tick is owed (`CommitSchedule`).
        case commit
        /// Unsynced commits must reach the disk (`SyncSchedule`).
        case sync
        /// The window and the budget are kept on schedule.
        case purge
    }

    typealias Job = @Sendable () -> Void

    private struct Deadline {
        var due: UInt64
        /// How much later than `due` it may ring, to share another alarm's wake-up.
        var slack: UInt64
        var latest: UInt64 { due.addingReportingOverflow(slack).overflow ? .max : due + slack }
    }

    private struct State {
        var jobs: [Job] = []
        /// An emptied job array with its capacity, handed back by the thread.
        var spare: [Job] = []
        var deadlines = [Deadline?](repeating: nil, count: Alarm.allCases.count)
        /// The thread sleeps in `poll` (or is about to), with the timerfd set for `setFor` (nil:
        /// disarmed). A job or an earlier deadline must set the timerfd to wake it; while it is
        /// awake, it sets the timerfd itself before sleeping again. Before the thread starts, the
        /// disarmed timerfd is what it will first sleep on.
        var sleeping = true
        var setFor: UInt64?
        /// Times the thread came back from `poll` (tests count them).
        var wakes = 0
        /// `stop` was called: jobs are no longer taken.
        var stopped = false
        /// Another thread stands in for the sleeping one (`runHereOrQueue`): jobs queued meanwhile
        /// wait for it, and the thread, should an alarm wake it, goes back to sleep.
        var borrowed = false
        /// Times a caller stood in for the thread (tests count them).
        var borrows = 0
    }

    private let state = Mutex(State())
    private let alarm: AlarmTimer
    private let loop = Mutex<ReadinessLoop?>(nil)
    /// The thread's `pthread_self()`, once it runs (0 before).
    private let owner = Atomic<UInt>(0)
    /// The `pthread_self()` of a thread standing in for this one (0: none).
    private let standIn = Atomic<UInt>(0)
    /// What `start` was given to ring alarms with; a stand-in rings them too.
    private let ringer = Mutex<(@Sendable (Alarm) -> Void)?>(nil)
    /// Monotonic nanoseconds, the timerfd's clock (`DispatchTime`'s uptime on Linux).
    private let now: @Sendable () -> UInt64

    init(now: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds }) throws(SystemError) {
        alarm = try AlarmTimer()
        self.now = now
    }

    /// Starts the thread. `ring` runs on it for each alarm whose deadline has passed.
    /// Jobs queued before have set the timerfd ringing: its first wake runs them.
    func start(name: String, ring: @escaping @Sendable (Alarm) -> Void) throws(SystemError) {
        ringer.withLock { $0 = ring }
        let started = try ReadinessLoop(
            name: name, fileDescriptor: alarm.fileDescriptor,
            body: { [self] wake in self.woke(wake, ring: ring) }, onExit: {})
        loop.withLock { $0 = started }
    }

    /// Ends the thread (jobs still queued are not run) and waits for it to leave, unless called
    /// on it. Idempotent.
    func stop() {
        state.withLock { $0.stopped = true }
        loop.withLock { $0 }?.stop()
    }

    /// Times the thread has woken so far: each is a wake-up the battery pays for.
    var wakes: Int { state.withLock { $0.wakes } }

    /// Times a caller ran the writer's work in its stead (`runHereOrQueue`).
    var borrows: Int { state.withLock { $0.borrows } }

    /// Whether the caller runs on this thread, or stands in for it.
    var isCurrent: Bool {
        let me = UInt(pthread_self())
        return owner.load(ordering: .relaxed) == me || standIn.load(ordering: .relaxed) == me
    }

    /// Traps unless called on this thread: the writer's state is touched only there.
    func assertCurrent() {
        precondition(isCurrent, "the store writer's state is touched off its thread")
    }

    /// Queues `job` behind those already queued. Any thread. After `stop`, the job is dropped
    /// and this returns false.
    @discardableResult
    func async(_ job: @escaping Job) -> Bool {
        let (queued, wake) = state.withLock { state -> (Bool, Bool) in
            guard !state.stopped else { return (false, false) }
            state.jobs.append(job)
            guard state.sleeping, !state.borrowed else { return (true, false) }
            state.sleeping = false
            state.setFor = 1
            return (true, true)
        }
        // Outside the lock: the thread woken may preempt the caller at once, and would then
        // block on the lock the caller still held (two more switches per hand-over, measured).
        // Set late, after the thread has run and slept again, it only wakes it once for nothing.
        if wake { alarm.set(at: 1) }
        return queued
    }

    /// Runs `job` on the caller's thread when the writer's thread sleeps with nothing queued, then
    /// whatever that queues or brings due, up to `maxRounds` rounds (the rest wakes the thread);
    /// otherwise queues it as `async` does. For a caller that is awake anyway and may wait for
    /// the job (a commit, at times its sync). Not from the thread itself, nor from within a job.
    func runHereOrQueue(_ job: @escaping Job) {
        // Not started yet: nobody may stand in for a thread that has no alarms to ring.
        guard let ring = ringer.withLock({ $0 }) else {
            async(job)
            return
        }
        let here = state.withLock { state -> Bool in
            guard !state.stopped, state.sleeping, !state.borrowed, state.jobs.isEmpty else { return false }
            state.borrowed = true
            state.borrows += 1
            return true
        }
        guard here else {
            async(job)
            return
        }
        standIn.store(UInt(pthread_self()), ordering: .relaxed)
        job()
        var jobs: [Job] = []
        var rung: [Alarm] = []
        for _ in 0..<Self.maxRounds {
            guard take(&jobs, due: &rung) else { break }
            for job in jobs { job() }
            jobs.removeAll()
            for alarm in rung { ring(alarm) }
            rung.removeAll()
        }
        standIn.store(0, ordering: .relaxed)
        // Hand the thread back asleep, its timerfd set for what is left (at once, when jobs are).
        state.withLock { state in
            state.borrowed = false
            let earliest = state.jobs.isEmpty ? state.deadlines.lazy.compactMap { $0?.latest }.min() : 1
            state.setFor = earliest
            if let earliest { alarm.set(at: earliest) } else { alarm.disarm() }
        }
    }

    /// Rounds a stand-in runs before it leaves the rest to the thread (a drain queues one more
    /// drain and a tick: three rounds in the usual case).
    private static let maxRounds = 8

    /// A stand-in's round: takes the queued jobs and the alarms due; false when there are none.
    private func take(_ jobs: inout [Job], due rung: inout [Alarm]) -> Bool {
        state.withLock { state in
            swap(&jobs, &state.jobs)
            let now = self.now()
            for index in state.deadlines.indices {
                if let deadline = state.deadlines[index], deadline.due <= now {
                    state.deadlines[index] = nil
                    rung.append(Alarm(rawValue: index)!)
                }
            }
            return !jobs.isEmpty || !rung.isEmpty
        }
    }

    /// Runs `body` on the thread behind the jobs already queued and waits for it. Not from the
    /// thread itself, which would wait for itself, nor after `stop`, which would wait for ever.
    func sync<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        precondition(!isCurrent, "the store writer waits for itself")
        precondition(!state.withLock { $0.stopped }, "the store writer's thread has ended")
        let result: Result<T, E> = withoutActuallyEscaping(body) { body in
            let handoff = Handoff(body)
            let done = DispatchSemaphore(value: 0)
            async {
                handoff.run()
                done.signal()
            }
            done.wait()
            return handoff.result!
        }
        return try result.get()
    }

    /// `sync`'s closure and result, carried to the thread and back while the caller waits.
    /// `@unchecked Sendable`: the caller touches `result` only after the thread has set it and
    /// signalled, and `body` runs only on the thread.
    private final class Handoff<T, E: Error>: @unchecked Sendable {
        /// Let go of once run: `withoutActuallyEscaping` traps if it is still held when the
        /// caller's wait ends (the job holding this may be released later).
        var body: (() throws(E) -> T)?
        var result: Result<T, E>?
        init(_ body: @escaping () throws(E) -> T) { self.body = body }
        func run() {
            guard let body else { return }
            self.body = nil
            do throws(E) {
                result = .success(try body())
            } catch {
                result = .failure(error)
            }
        }
    }

    /// Sets `alarm` to ring at `deadline` (monotonic ns), or up to `slack` ns later together with
    /// another alarm. Any thread.
    func set(_ alarm: Alarm, at deadline: UInt64, slack: UInt64 = 0) {
        state.withLock { state in
            let entry = Deadline(due: deadline, slack: slack)
            state.deadlines[alarm.rawValue] = entry
            // Asleep until later (or for good): wake in time for this one.
            if state.sleeping, !state.borrowed, state.setFor.map({ entry.latest < $0 }) ?? true {
                state.setFor = entry.latest
                self.alarm.set(at: entry.latest)
            }
        }
    }

    /// Clears `alarm`'s deadline. Any thread; a sleeping thread may still wake once for it.
    func cancel(_ alarm: Alarm) {
        state.withLock { $0.deadlines[alarm.rawValue] = nil }
    }

    /// On the thread: runs the queued jobs and the rung alarms until there are none, then sets
    /// the timerfd for the earliest deadline and sleeps.
    private func woke(_ wake: ReadinessLoop.Wake, ring: (Alarm) -> Void) -> ReadinessLoop.Next {
        if case .failed(let error) = wake { preconditionFailure("the store writer's poll failed: \(error)") }
        owner.store(UInt(pthread_self()), ordering: .relaxed)
        alarm.acknowledge()
        var jobs: [Job] = []
        var rung: [Alarm] = []
        state.withLock { $0.wakes += 1 }
        while true {
            let idle = state.withLock { state -> Bool in
                // A stand-in holds the writer: it sets the timerfd again when it leaves.
                if state.borrowed { return true }
                state.sleeping = false
                swap(&jobs, &state.jobs)
                swap(&state.jobs, &state.spare)
                let now = self.now()
                for index in state.deadlines.indices {
                    if let deadline = state.deadlines[index], deadline.due <= now {
                        state.deadlines[index] = nil
                        rung.append(Alarm(rawValue: index)!)
                    }
                }
                guard jobs.isEmpty, rung.isEmpty else { return false }
                state.sleeping = true
                state.setFor = state.deadlines.lazy.compactMap { $0?.latest }.min()
                if let setFor = state.setFor { alarm.set(at: setFor) } else { alarm.disarm() }
                return true
            }
            if idle { return .wait(nanoseconds: nil) }
            for job in jobs { job() }
            jobs.removeAll(keepingCapacity: true)
            state.withLock { state in
                if state.spare.capacity < jobs.capacity { swap(&state.spare, &jobs) }
            }
            for alarm in rung { ring(alarm) }
            rung.removeAll(keepingCapacity: true)
        }
    }
}
