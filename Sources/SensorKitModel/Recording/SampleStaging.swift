/// Where a source mirrors, as it reads them, the samples of one stream it holds and has not
/// handed over yet: a file mapping in the store's state directory, so that a killed daemon loses
/// none of them — the store takes them in at its next open (docs/store.md, "Staged samples").
/// Because the batch it holds is safe, a source may hold it for seconds and hand it over rarely
/// (an IIO chip: every 5 s instead of every half second; docs/iio.md §4), which is most of what
/// recording costs the CPU. Written by one thread at a time.
public protocol SampleStaging: AnyObject, Sendable {
    /// How many samples fit: a source hands its batch over before it would hold more.
    var capacity: Int { get }
    /// Sample `i`'s sensor time, receive time (boot-clock ns) and column `c` (in the stream's
    /// descriptor order, as `SourceBatch` holds them) go to `slots[i × stride]`,
    /// `slots[i × stride + 1]` and `slots[i × stride + 2 + c]`, `stride` being 2 + the column
    /// count: a sample's values side by side, so a read's samples dirty one page, not one a
    /// column. A replay sees them only once published.
    var slots: UnsafeMutablePointer<Int64> { get }
    /// The first `count` samples are written. `continuing`: the sensor time of the last sample
    /// of the batch the source handed over just before them, when nothing was lost in between;
    /// nil at the start of a run or after a gap — a replay then leaves them out, since a
    /// deletion record between them and what was stored might be lost with the process, and
    /// the crash's own record covers them instead.
    func publish(count: Int, continuing: Int64?)
}

/// A source that can keep its held samples in a `SampleStaging` (the recording pipeline gives it
/// one per stream before it starts recording).
public protocol StagingSource: SensorSource {
    /// How many samples the source may hold for its stream at most.
    var stagingCapacity: Int { get }
    /// Mirror held samples into `staging` from the next recording on (nil: stop mirroring).
    func useStaging(_ staging: (any SampleStaging)?)
}
