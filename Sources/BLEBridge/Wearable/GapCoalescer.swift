/// Turns one stream's gaps into deletion records without letting a device that keeps breaking
/// its stream write a record per break. While gaps are rare, each becomes its own record, closed
/// by the first sample after it, and no sample is held. Gaps come with a budget (`burst` records,
/// one more every `refillNanoseconds`); once it is spent, a gap closes only after the stream has
/// delivered `settleNanoseconds` of samples without another gap: the samples of that settling are
/// held, and a gap inside it drops them and continues the same gap. A run of bad frames between
/// good ones — however long the alternation goes on — is one record, and every sample it covers
/// was really dropped, so the record never claims a loss that did not happen.
/// Pure: the caller delivers what `Action`s say (docs/ble.md, "Gaps").
struct GapCoalescer<Batch> {
    struct Gap: Equatable {
        var from: Int64
        var to: Int64
        var why: String
        /// Gaps this record stands for (1 when nothing was coalesced).
        var gaps: Int
        /// Samples received inside the gap and dropped with it.
        var droppedSamples: Int
    }

    enum Action {
        case gap(Gap)
        case samples(Batch)
    }

    static var settleNanoseconds: Int64 { 1_000_000_000 }
    static var burst: Int { 5 }
    static var refillNanoseconds: Int64 { 10_000_000_000 }
    /// Samples held while settling; more go out at once (the coalescing ends early).
    static var heldLimit: Int { 4096 }

    private var open: Gap?
    private var held: [Batch] = []
    private var heldSamples = 0
    private var settlingSince: Int64?
    private var tokens = Self.burst
    private var refilledAt: Int64?

    init() {}

    /// A gap is open or settling.
    var isOpen: Bool { open != nil }

    /// Data stopped at `from` (boot ns) for `why`. Inside an open gap nothing changes; inside a
    /// settling one the held samples are dropped and the gap goes on.
    mutating func gap(from: Int64, why: String) {
        guard var gap = open else {
            open = Gap(from: from, to: from, why: why, gaps: 1, droppedSamples: 0)
            return
        }
        if settlingSince != nil {
            gap.gaps += 1
            gap.droppedSamples += heldSamples
            held.removeAll()
            heldSamples = 0
            settlingSince = nil
            open = gap
        }
    }

    /// Samples `first…last` (boot ns); `count` of them.
    mutating func samples(_ batch: Batch, count: Int, first: Int64, last: Int64) -> [Action] {
        guard var gap = open else { return [.samples(batch)] }
        if let since = settlingSince {
            held.append(batch)
            heldSamples += count
            return last - since >= Self.settleNanoseconds || heldSamples >= Self.heldLimit ? release() : []
        }
        refill(at: first)
        gap.to = max(gap.from, first)
        open = gap
        // A gap that already joined others settles whatever the budget: the run is one record.
        if tokens > 0, gap.gaps == 1 {
            tokens -= 1
            open = nil
            return [.gap(gap), .samples(batch)]
        }
        settlingSince = first
        held = [batch]
        heldSamples = count
        return count >= Self.heldLimit ? release() : []
    }

    /// Time passes without samples: a settling gap whose samples stopped coming is released.
    mutating func tick(now: Int64) -> [Action] {
        guard let since = settlingSince, now - since >= Self.settleNanoseconds else { return [] }
        return release()
    }

    /// The stream stops (or is known to flow again without a sample) at `time`: an open gap ends
    /// there; a settling one goes out with its samples.
    mutating func close(at time: Int64) -> [Action] {
        guard var gap = open else { return [] }
        if settlingSince != nil { return release() }
        gap.to = max(gap.from, time)
        open = nil
        return [.gap(gap)]
    }

    private mutating func release() -> [Action] {
        guard let gap = open else { return [] }
        let out: [Action] = [.gap(gap)] + held.map { Action.samples($0) }
        open = nil
        held.removeAll()
        heldSamples = 0
        settlingSince = nil
        return out
    }

    private mutating func refill(at time: Int64) {
        guard let at = refilledAt else {
            refilledAt = time
            return
        }
        guard time > at else { return }
        let earned = (time - at) / Self.refillNanoseconds
        guard earned > 0 else { return }
        tokens = min(Self.burst, tokens + Int(clamping: earned))
        refilledAt = at + earned * Self.refillNanoseconds
    }
}
