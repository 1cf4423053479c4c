import Synchronization

/// Batches appended but not yet taken by the writer, in append order, behind a `Mutex`.
///
/// Why not one `queue.async` per batch: a busy pipeline appends faster than the writer seals, and
/// between seals the writer is faster than the pipeline, so it would go to sleep and be woken
/// (a futex on both sides) for nearly every batch. Here an append schedules a drain only when
/// none is pending. A drain takes everything queued, stores it, and schedules the next drain
/// behind whatever else reached the writer queue meanwhile (the commit timer, a flush), so a
/// flood of appends never starves them; the drain that finds the inbox empty ends the run.
/// `flush` and `close` take what is queued first, so they cover every batch appended before.
final class AppendInbox: Sendable {
    enum Entry: Sendable {
        /// A batch to store.
        case batch(SampleBatch, StreamID)
        /// A batch refused because the writer fell too far behind, to record as a gap.
        case dropped(SampleBatch, StreamID)
    }

    private struct State {
        /// Optional so the writer can move entries out in order, leaving nil (no copies, no
        /// reference counting per batch).
        var entries: [Entry?] = []
        /// An emptied array the writer handed back, with its capacity, to take the next entries
        /// without growing an array from nothing after every drain.
        var spare: [Entry?] = []
        /// Samples in admitted batches not yet taken by a drain.
        var pendingSamples = 0
        /// A drain is scheduled or running; appends need not schedule another.
        var drainScheduled = false
    }

    private let state = Mutex(State())
    let maxPendingSamples: Int

    init(maxPendingSamples: Int) {
        self.maxPendingSamples = maxPendingSamples
    }

    /// Queues a batch, or its drop record when more than `maxPendingSamples` are pending.
    /// Returns true when the caller must schedule a drain.
    func push(_ batch: SampleBatch, to stream: StreamID) -> Bool {
        state.withLock { state in
            if state.pendingSamples + batch.count <= maxPendingSamples {
                state.pendingSamples += batch.count
                state.entries.append(.batch(batch, stream))
            } else {
                state.entries.append(.dropped(batch, stream))
            }
            guard !state.drainScheduled else { return false }
            state.drainScheduled = true
            return true
        }
    }

    /// Everything queued, oldest first, for a scheduled drain; empty when there is nothing left,
    /// and then no drain is scheduled any more (the next append schedules one).
    func takeOrFinish() -> [Entry?] {
        state.withLock { state in
            guard !state.entries.isEmpty else {
                state.drainScheduled = false
                return []
            }
            return Self.takeEntries(&state)
        }
    }

    /// Everything queued, oldest first, for `flush` and `close` (a drain stays scheduled).
    func take() -> [Entry?] {
        state.withLock { Self.takeEntries(&$0) }
    }

    private static func takeEntries(_ state: inout State) -> [Entry?] {
        var taken: [Entry?] = []
        swap(&taken, &state.entries)
        swap(&state.entries, &state.spare)
        return taken
    }

    /// Hands back an array the writer has emptied, to be filled again.
    func recycle(_ emptied: inout [Entry?]) {
        emptied.removeAll(keepingCapacity: true)
        state.withLock { state in
            if state.spare.capacity < emptied.capacity { swap(&state.spare, &emptied) }
        }
    }

    /// The writer stored (or dropped) `samples` samples of admitted batches it took.
    func finished(samples: Int) {
        state.withLock { $0.pendingSamples -= samples }
    }

    /// Samples in admitted batches the writer has not finished with.
    var pendingSamples: Int { state.withLock { $0.pendingSamples } }
}
