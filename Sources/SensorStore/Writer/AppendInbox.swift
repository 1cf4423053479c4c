import SensorChunks
import SensorKitModel
import Synchronization

/// Samples appended but not yet taken by the writer, behind a `Mutex`.
///
/// An append copies its batch, on the caller's thread, into the staging buffers of the inbox —
/// segments of at most `segmentSamples` samples, filled one after the other per stream and boot,
/// reused from drain to drain — and the caller keeps (and frees) its own arrays. So the writer
/// never touches an appended batch: no reference counting per batch, no freeing on another
/// thread than the one that allocated (which makes glibc's malloc take the slow path on both),
/// no per-batch entry. Batches of one stream stay in append order.
///
/// Why not one writer job per batch: a busy pipeline appends faster than the writer seals, and
/// between seals the writer is faster than the pipeline, so it would go to sleep and be woken
/// (a futex on both sides) for nearly every batch. And the writer sleeps until its commit
/// deadline: a batch whose samples were read less than `commitInterval` ago is only staged, and
/// the first one arms the writer's deadline timer for its oldest sample's read plus the interval
/// (`arm`; a later batch due earlier arms it earlier), so a source that delivers ten batches a
/// second wakes the writer once per interval, not ten times, and no sample waits longer than the
/// interval after its read (the crash contract). A batch already due — read an interval ago or
/// more, as an IIO chip's half-second hand-over is, or due within a tenth of the interval, for
/// which a timer would cost more than it saves — or a backlog of `backlogSamples` starts a drain
/// when none is pending: at once (a delivery after a pause: one wake-up, no timer), or after a
/// millisecond's grace once the writer has been restarted `floodRestarts` times in a row within a
/// millisecond of its last run of drains ending (a flood that the writer keeps catching up with:
/// the batches of the grace share one wake-up instead of ping-ponging one by one). The streams of
/// one delivery, appended one after the other, restart it a few times at most: no timer. A drain takes everything staged, stores it, and schedules the next drain
/// behind whatever else reached the writer thread meanwhile (the commit alarm, a flush), so a
/// flood of appends never starves them; the drain that finds the inbox empty ends the run.
/// `flush` and `close` take what is staged first, so they cover every batch appended before.
final class AppendInbox: Sendable {
    enum Entry: Sendable {
        /// Samples of one stream from one boot, in append order (boot-clock times). `continued`:
        /// the segment was full and the stream's next samples entry, later in the same take,
        /// goes on with the same boot (the writer treats such a run as one batch).
        case samples(StreamID, BootID, ChunkSamples, continued: Bool)
        /// A batch refused because the writer fell too far behind, to record as a gap: its first
        /// and last sensor times (boot clock).
        case dropped(StreamID, BootID, first: Int64, last: Int64)
    }

    /// How an append must start a drain.
    enum DrainStart: Equatable, Sendable {
        /// A plain `async`.
        case now
        /// Appends are flooding in: after a grace of `floodWindow`.
        case afterGrace
    }

    /// Nanoseconds: a restart this soon after the writer's last run of drains ended is a quick
    /// one; also the grace a drain waits in a flood.
    static let floodWindow: UInt64 = 1_000_000
    /// Staged samples from which on a drain starts without waiting for the deadline: a flood is
    /// stored as it comes (and the inbox stays far below `maxPendingSamples`).
    static let backlogSamples = 16 * segmentSamples
    /// Quick restarts in a row from which on appends count as a flood.
    static let floodRestarts = 4

    private struct State {
        /// Optional so the writer can move entries out in order, leaving nil.
        var entries: [Entry?] = []
        /// Where each stream's newest samples entry is in `entries` (appends of the same stream
        /// and boot go into it).
        var newest: [StreamID: Int] = [:]
        /// An emptied array the writer handed back, with its capacity.
        var spare: [Entry?] = []
        /// Emptied staging buffers the writer handed back, with their capacity.
        var buffers: [ChunkSamples] = []
        /// Samples in admitted batches not yet taken by a drain.
        var pendingSamples = 0
        /// A drain is scheduled or running; appends need not schedule another.
        var drainScheduled = false
        /// When the last run of drains ended (monotonic ns; 0: never).
        var idleSince: UInt64 = 0
        /// Drains started in a row within `floodWindow` of the previous run's end.
        var quickRestarts = 0
        /// The deadline the writer's timer is armed for (monotonic ns); nil when not armed.
        var armed: UInt64?
        /// The earliest commit deadline of what is staged (monotonic ns); nil when nothing is.
        var due: UInt64?
        /// Hand-overs in progress (`hold`): appends meanwhile are staged without starting or
        /// arming anything; the last `release` decides once for all of them.
        var holds = 0
        /// Something was appended while held, not yet decided for.
        var stagedWhileHeld = false
    }

    private let state = Mutex(State())
    /// Monotonic nanoseconds (injected for tests).
    private let now: @Sendable () -> UInt64
    let maxPendingSamples: Int
    /// Nanoseconds from a sample's read to its commit at the most (`CommitSchedule.interval`); 0
    /// makes every batch due at once.
    let commitInterval: UInt64
    /// Samples a staging buffer holds at most. Buffers are allocated at this capacity and never
    /// grow: a backlog is a run of equal segments, not one buffer that doubles (copying itself
    /// and faulting in fresh pages at every step, then freed once the burst is over — in a flood
    /// of appends that was a sixth of the appending thread's time). Equal sizes also let the
    /// allocator reuse the memory of segments beyond the kept ones.
    static let segmentSamples = 1 << 10
    /// Staging buffers kept for reuse at most: one per stream in steady state, and a little
    /// backlog (64 Ki samples) without allocating.
    static let keptBuffers = 64

    init(maxPendingSamples: Int, commitInterval: UInt64 = 0, now: @escaping @Sendable () -> UInt64) {
        self.maxPendingSamples = maxPendingSamples
        self.commitInterval = commitInterval
        self.now = now
    }

    /// Stages a batch, or its drop record when more than `maxPendingSamples` are pending.
    /// `readAgo`: nanoseconds since its oldest sample was read (`.max`: long ago, or unknown).
    /// Returns how the caller must start a drain; nil when one is already scheduled, or when the
    /// batch waits for the writer's deadline timer — which `arm` (called under the inbox's lock,
    /// so two appenders cannot arm it out of order) has set for the batch's deadline if none as
    /// early was armed.
    func push(
        _ batch: SampleBatch, to stream: StreamID, readAgo: UInt64 = .max, arm: (UInt64) -> Void = { _ in }
    ) -> DrainStart? {
        state.withLock { state in
            if state.pendingSamples + batch.count <= maxPendingSamples {
                state.pendingSamples += batch.count
                Self.stage(batch, stream, &state)
            } else if let first = batch.sensorTimes.min(), let last = batch.sensorTimes.max() {
                state.entries.append(.dropped(stream, batch.boot, first: first, last: last))
            }
            let now = self.now()
            let wait = commitInterval > readAgo ? commitInterval - readAgo : 0
            let (sum, overflow) = now.addingReportingOverflow(wait)
            state.due = min(state.due ?? .max, overflow ? UInt64.max : sum)
            guard !state.drainScheduled else { return nil }
            guard state.holds == 0 else {
                state.stagedWhileHeld = true
                return nil
            }
            return decide(&state, now: now, arm: arm)
        }
    }

    /// A hand-over of several batches begins (the streams of one chip, from one thread): until
    /// the matching `release`, appends start no drain and arm no timer. Without it the first
    /// batch's drain wakes a worker that preempts the appending thread, drains and commits, and
    /// the next batch then finds a tick just run and arms the commit timer: two commits and a
    /// timer per hand-over instead of one commit (docs/measurements/iio.md, "Battery").
    func hold() {
        state.withLock { $0.holds += 1 }
    }

    /// The hand-over `hold` began has ended: decides for what it appended as `push` would have
    /// for one batch with their earliest deadline. Returns how the caller must start a drain.
    func release(arm: (UInt64) -> Void = { _ in }) -> DrainStart? {
        state.withLock { state in
            state.holds = max(0, state.holds - 1)
            guard state.holds == 0, state.stagedWhileHeld else { return nil }
            state.stagedWhileHeld = false
            guard !state.drainScheduled, state.due != nil else { return nil }
            return decide(&state, now: self.now(), arm: arm)
        }
    }

    /// Whether what is staged needs a drain now (or after a grace in a flood), or waits for the
    /// timer armed for its deadline.
    private func decide(_ state: inout State, now: UInt64, arm: (UInt64) -> Void) -> DrainStart? {
        let due = state.due ?? now
        let wait = due > now ? due - now : 0
        if wait > commitInterval / 10, state.pendingSamples < Self.backlogSamples {
            if let armed = state.armed, armed <= due { return nil }
            state.armed = due
            arm(due)
            return nil
        }
        state.drainScheduled = true
        let quick = state.idleSince > 0 && now < state.idleSince.addingReportingOverflow(Self.floodWindow).partialValue
        state.quickRestarts = quick ? min(state.quickRestarts + 1, Self.floodRestarts) : 0
        return state.quickRestarts >= Self.floodRestarts ? .afterGrace : .now
    }

    /// Copies `batch` into the stream's newest staging buffer while it has the same boot and
    /// room, then into fresh (recycled) ones.
    private static func stage(_ batch: SampleBatch, _ stream: StreamID, _ state: inout State) {
        var next = 0
        while next < batch.count {
            // The stream's newest buffer when it has the same boot and room (index ≥ 0), moved out
            // while appended to, so the arrays are not copied (nor retained and released once
            // more per batch by a look at them in place).
            var samples = ChunkSamples(columns: [])
            var index = -1
            if let at = state.newest[stream], case .samples(_, let boot, _, _)? = state.entries[at], boot == batch.boot {
                guard case .samples(_, _, let staged, _)? = state.entries[at].take() else { preconditionFailure() }
                if staged.count < segmentSamples {
                    samples = staged
                    index = at
                } else {
                    state.entries[at] = .samples(stream, boot, staged, continued: true)
                }
            }
            if index < 0 {
                samples = state.buffers.popLast() ?? segment(columnCount: batch.columns.count)
                if samples.columns.count != batch.columns.count { samples = segment(columnCount: batch.columns.count) }
                index = state.entries.count
                state.entries.append(nil)
                state.newest[stream] = index
            }
            let end = min(batch.count, next + segmentSamples - samples.count)
            samples.times.append(contentsOf: batch.sensorTimes[next..<end])
            samples.receiveTimes.append(contentsOf: batch.receiveTimes[next..<end])
            for column in batch.columns.indices {
                switch batch.columns[column] {
                case .integers(let values):
                    samples.columns[column].append(contentsOf: values[next..<end])
                case .floats(let values):
                    samples.columns[column].append(contentsOf: values[next..<end].lazy.map { Int64(bitPattern: $0.bitPattern) })
                }
            }
            state.entries[index] = .samples(stream, batch.boot, samples, continued: false)
            next = end
        }
    }

    /// An empty staging buffer with room for `segmentSamples` samples.
    private static func segment(columnCount: Int) -> ChunkSamples {
        var samples = ChunkSamples(columnCount: columnCount)
        samples.times.reserveCapacity(segmentSamples)
        samples.receiveTimes.reserveCapacity(segmentSamples)
        for index in samples.columns.indices { samples.columns[index].reserveCapacity(segmentSamples) }
        return samples
    }

    /// The writer's deadline timer fired: it is no longer armed. True when the writer must drain
    /// now; false when a drain is already scheduled.
    func deadlineReached() -> Bool {
        state.withLock { state in
            state.armed = nil
            guard !state.drainScheduled else { return false }
            state.drainScheduled = true
            return true
        }
    }

    /// Everything staged, oldest first, for a scheduled drain, with its earliest commit deadline;
    /// empty when there is nothing left, and then no drain is scheduled any more (the next append
    /// schedules one).
    func takeOrFinish() -> (entries: [Entry?], due: UInt64?) {
        state.withLock { state in
            guard !state.entries.isEmpty else {
                state.drainScheduled = false
                state.idleSince = now()
                return ([], nil)
            }
            return Self.takeEntries(&state)
        }
    }

    /// Everything staged, oldest first, for `flush` and `close` (a drain stays scheduled).
    func take() -> [Entry?] {
        state.withLock { Self.takeEntries(&$0).entries }
    }

    private static func takeEntries(_ state: inout State) -> (entries: [Entry?], due: UInt64?) {
        var taken: [Entry?] = []
        swap(&taken, &state.entries)
        swap(&state.entries, &state.spare)
        state.newest.removeAll(keepingCapacity: true)
        defer { state.due = nil }
        return (taken, state.due)
    }

    /// Hands back an array the writer has emptied, and the staging buffers it has stored.
    func recycle(_ emptied: inout [Entry?], buffers: inout [ChunkSamples]) {
        emptied.removeAll(keepingCapacity: true)
        // Every buffer was allocated at `segmentSamples` and never grew; a stranger is not kept.
        buffers.removeAll { $0.times.capacity > 2 * Self.segmentSamples }
        for index in buffers.indices { buffers[index].removeAll() }
        state.withLock { state in
            if state.spare.capacity < emptied.capacity { swap(&state.spare, &emptied) }
            let room = max(0, Self.keptBuffers - state.buffers.count)
            state.buffers.append(contentsOf: buffers.prefix(room))
        }
        buffers.removeAll(keepingCapacity: true)
    }

    /// The writer stored (or dropped) `samples` samples of admitted batches it took.
    func finished(samples: Int) {
        state.withLock { $0.pendingSamples -= samples }
    }

    /// Samples in admitted batches the writer has not finished with.
    var pendingSamples: Int { state.withLock { $0.pendingSamples } }
}
