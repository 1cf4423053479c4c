import SensorKitModel

/// A stream that wants a chip's scans: which channels, at which rate, and where to deliver.
public struct ScanConsumer: Sendable {
    public let id: ObjectIdentifier
    /// The channel prefixes of the stream's columns, in column order.
    public let channels: [String]
    /// Nanoseconds between scans at the function's rate (gap detection); nil when unknown.
    public let period: Int64?
    /// When the stream asked to record (the capture's boottime ns): scans the shared buffer read
    /// from then on are the stream's, even those read before its subscription reached the reading
    /// queue (`ScanFanOut.adopt`). Nil: only scans read after it joined.
    public var since: Int64?
    /// Where the stream's held samples are mirrored (nil: nowhere): then its batches may span
    /// `SampleBatcher.stagedSpan` (`ScanFanOut`).
    public let staging: (any SampleStaging)?
    public let deliver: @Sendable (SourceEvent) -> Void

    public init(
        id: ObjectIdentifier, channels: [String], period: Int64?, since: Int64? = nil,
        staging: (any SampleStaging)? = nil, deliver: @escaping @Sendable (SourceEvent) -> Void
    ) {
        self.id = id
        self.channels = channels
        self.period = period
        self.since = since
        self.staging = staging
        self.deliver = deliver
    }
}

/// A chip's shared buffer as its buffered streams see it — the local kernel buffer
/// (`IIODeviceCapture`) or a remote one served by `iiod` (`IIORemoteCapture`). Both calls return
/// at once; the buffer runs while at least one consumer is subscribed.
public protocol ScanCapture: AnyObject, Sendable {
    var plan: DeviceCapturePlan { get }
    func subscribe(_ consumer: ScanConsumer)
    func unsubscribe(_ id: ObjectIdentifier)
    /// What the buffer is doing while streams are subscribed; nil when the capture cannot tell.
    var status: CaptureStatus? { get }
}

extension ScanCapture {
    public var status: CaptureStatus? { nil }
}

/// Hands every decoded scan of a chip to each subscribed stream: the stream's channels in column
/// order through its own `SampleBatcher` (≤ 1 s batches, gaps from timestamp jumps).
///
/// A jump in the scan timeline is a loss of whole scans, so it is a gap for every stream the
/// scans feed, whatever each stream knows of its own rate: the fan-out watches the chip's scan
/// times against the fastest rate of the chip's functions and interrupts every stream at the
/// jump, so each gets a deletion record over the same span (a BMI160 whose gyroscope has no
/// `sampling_frequency` attribute lost scans without its gyroscope noticing).
///
/// A batch is handed over when it is complete — it spans its half second, or a gap cuts it — not
/// after every read: a chip read ten times a second would otherwise wake the store ten times a
/// second (docs/iio.md §4, "Delivery"). And it is handed over for the whole chip at once: the
/// chip's half seconds are cut at the same scan for every stream (`batchStart`), so a chip's
/// streams reach the store together — one writer wake-up per hand-over — instead of each at its
/// own phase (a stream that joined later would otherwise hand over between its siblings'
/// hand-overs). What the streams hold goes out when the oldest sample has
/// waited the owner's hold (`deliverDue`), when a stream leaves (`remove`) and when the capture
/// stops (`deliverAll`), so holding never loses a sample. Confined to its owner's reading queue
/// (or lock).
///
/// A fan-out made with `collectsDeliveries` keeps what it delivers in an outbox until its owner
/// calls `deliverCollected()`: a reading thread then opens the store's hand-over only at the rare
/// wake that delivers something, not at every wake (docs/iio.md §4, "Delivery").
struct ScanFanOut {
    /// What one stream hands over: its events in order, then what its staging holds after them.
    private struct Parcel {
        let deliver: @Sendable (SourceEvent) -> Void
        let events: [SourceEvent]
        let staging: (any SampleStaging)?
        let pendingCount: Int
        let continuing: Int64?

        func send() {
            for event in events { deliver(event) }
            staging?.publish(count: pendingCount, continuing: continuing)
        }
    }

    private struct Stream {
        let consumer: ScanConsumer
        let positions: [Int]
        var batcher: SampleBatcher
        /// Where what the stream holds is mirrored: its consumer's staging while batches may be
        /// long (`stagedSpan`); none when every read goes out at once (the lab profile).
        let staging: (any SampleStaging)?
        /// The last sample of the batch handed over before the one held, when nothing was lost
        /// in between (no gap, the same run): what a staged batch continues.
        var continuing: Int64?
    }

    /// How far a scan's sensor time may lie from the moment it was read. A kernel stamps a scan
    /// when it is captured, moments before the read; mapped clocks, estimated stamps and a remote
    /// rig's calibrated offset stay within seconds. A time further off is a glitching chip or a
    /// broken rig, and arithmetic on it (`INT64_MAX`) would overflow downstream.
    static let plausibleSkew: Int64 = 3_600_000_000_000

    let layout: ScanLayout
    let boot: BootID
    /// Nanoseconds between scans (the fastest rate of the chip's functions); nil when unknown.
    let scanPeriod: Int64?
    private var streams: [Stream] = []
    /// The last plausible scan's sensor time, to see the step to the next read's first scan.
    private var lastScanTime: Int64?
    /// Scans dropped for an implausible sensor time since the fan-out was made.
    private(set) var implausibleScans = 0
    /// The scans read lately, for streams that join while the buffer runs (`adopt`).
    private(set) var recent: RecentScans
    /// Whether reads are kept in `recent`. An owner that knows when a stream is on its way may
    /// keep them only then (`IIODeviceCapture`: from its subscription to its `adopt`), so a chip
    /// whose streams all run copies no scan a second time. A read not kept counts as evicted
    /// (`RecentScans.skipped`): a stream that asked before it was received gets a gap for it.
    var keepsRecent = true
    /// The sensor time of the first scan of the chip's batch being filled: every stream's batch is
    /// cut before the first scan `SampleBatcher.maximumSpan` after it. Nil when nothing is held.
    private var batchStart: Int64?
    /// Delivered but not yet sent, oldest first (only with `collectsDeliveries`). Whoever holds the
    /// fan-out sends it all (`deliverCollected`), so a stream's events reach it in order whichever
    /// thread sends them.
    private var outbox: [Parcel] = []
    /// Deliveries wait in the outbox for `deliverCollected()` instead of going out at once.
    let collectsDeliveries: Bool

    /// How long scans are kept for a stream that joins late: the kernel buffer's own length
    /// (docs/iio.md §4), far longer than a subscription takes to cross the capture's queues even on
    /// a machine whose cores are all busy.
    static let recentSpan: Int64 = 2_000_000_000

    /// How long the chip's batches may span while every stream stages what it holds and
    /// continues a batch handed over before (nil: `SampleBatcher.maximumSpan` always). The first
    /// batch of a run and the one after a gap stay short: a replay after a crash takes in only
    /// staged samples that continue what the store holds.
    let stagedSpan: Int64?

    init(
        layout: ScanLayout, boot: BootID, scanPeriod: Int64? = nil, stagedSpan: Int64? = nil, collectsDeliveries: Bool = false
    ) {
        self.layout = layout
        self.boot = boot
        self.scanPeriod = scanPeriod
        self.stagedSpan = stagedSpan
        self.collectsDeliveries = collectsDeliveries
        let scans = scanPeriod.map { Self.recentSpan / max($0, 1) } ?? 1024
        recent = RecentScans(width: layout.valueCount, capacity: Int(min(max(scans, 64), 4096)))
    }

    /// `init` with the scan period of a capture plan: its fastest function.
    init(plan: DeviceCapturePlan, boot: BootID, stagedSpan: Int64? = nil, collectsDeliveries: Bool = false) {
        self.init(
            layout: plan.layout, boot: boot, scanPeriod: plan.rates.values.compactMap(\.period).min(), stagedSpan: stagedSpan,
            collectsDeliveries: collectsDeliveries)
    }

    /// Something was delivered and waits in the outbox for `deliverCollected()`.
    var hasCollected: Bool { !outbox.isEmpty }

    /// Sends what the outbox holds, oldest first: each stream's events, then its staging's count.
    mutating func deliverCollected() {
        guard !outbox.isEmpty else { return }
        let parcels = outbox
        outbox.removeAll()
        for parcel in parcels { parcel.send() }
    }

    /// The span the chip's batches are cut at now (see `stagedSpan`).
    private var span: Int64 {
        guard let stagedSpan, !streams.isEmpty,
            streams.allSatisfy({ $0.staging != nil && $0.continuing != nil })
        else { return SampleBatcher.maximumSpan }
        return stagedSpan
    }

    /// Where the scan timeline jumps by more than a stream's gap threshold at the scan rate: the
    /// index of the scan after each jump and the reason every stream's deletion record gives.
    private mutating func scanGaps(_ sensorTimes: [Int64], plausible: ClosedRange<Int64>) -> [(scan: Int, why: String)] {
        var gaps: [(scan: Int, why: String)] = []
        let threshold = scanPeriod.map { SampleBatcher.gapThreshold(period: $0) }
        for (scan, time) in sensorTimes.enumerated() where plausible.contains(time) {
            if let threshold, let scanPeriod, let last = lastScanTime, time.subtractingSaturating(last) > threshold {
                gaps.append(
                    (
                        scan,
                        SampleBatcher.gapReason(
                            cause: "kernel FIFO overflow", step: time.subtractingSaturating(last),
                            period: scanPeriod)
                    ))
            }
            lastScanTime = time
        }
        return gaps
    }

    var isEmpty: Bool { streams.isEmpty }

    /// Adds consumers not yet present (a restarted buffer keeps the others and their batchers).
    /// A newcomer first gets the kept scans read since it asked to record (`ScanConsumer.since`):
    /// a chip's streams are turned on one by one, and the first one's reads must not take scans
    /// from the others that asked at the same moment. Scans it asked for that are no longer kept
    /// are a gap from its request to its first scan.
    mutating func adopt(_ newcomers: [ScanConsumer]) {
        for consumer in newcomers where !streams.contains(where: { $0.consumer.id == consumer.id }) {
            let positions = consumer.channels.map { channel -> Int in
                guard let position = layout.slot(for: channel)?.firstValue else {
                    preconditionFailure("\(channel) is not in the capture's scan layout")
                }
                return position
            }
            let staging = stagedSpan == nil ? nil : consumer.staging
            var batcher = SampleBatcher(boot: boot, columnCount: positions.count, period: consumer.period, staging: staging)
            var events: [SourceEvent] = []
            if let since = consumer.since {
                let first = recent.firstRead(atOrAfter: since)
                if recent.missedScans(readSince: since), first < recent.count {
                    // The scans missed came before the first one kept; a kernel stamps a scan
                    // before it is read, so that can be before the request itself.
                    let from = min(since, recent.sensorTimes[first].subtractingSaturating(scanPeriod ?? 1))
                    batcher.missed(since: from, "scans read while the stream was joining the running buffer were no longer held")
                }
                for scan in first..<recent.count {
                    if let why = recent.gapBefore(scan) { batcher.interrupted(why) }
                    let values = recent.values(of: scan)
                    batcher.append(sensorTime: recent.sensorTimes[scan], receiveTime: recent.receiveTimes[scan], into: &events) {
                        values[values.startIndex + positions[$0]]
                    }
                }
            }
            streams.append(Stream(consumer: consumer, positions: positions, batcher: batcher, staging: staging))
            hand(events, to: streams.count - 1)
            // Already read, and no read may come to hand them over (a quiet chip): now.
            deliverPending(streams.count - 1)
        }
    }

    /// Keeps the listed consumers; the others get what they hold, then leave.
    mutating func keepOnly(_ ids: Set<ObjectIdentifier>) {
        for index in streams.indices where !ids.contains(streams[index].consumer.id) { deliverPending(index) }
        streams.removeAll { !ids.contains($0.consumer.id) }
    }

    /// The stream gets what it holds, then leaves.
    mutating func remove(_ id: ObjectIdentifier) {
        guard let index = streams.firstIndex(where: { $0.consumer.id == id }) else { return }
        deliverPending(index)
        streams.remove(at: index)
    }

    /// Every stream gets what it holds, then leaves; the buffer stopped, so no scan is kept.
    mutating func removeAll() {
        deliverAll()
        streams.removeAll()
        recent.removeAll()
    }

    /// Every stream's next step is a gap (a read failed; the buffer restarts).
    mutating func interrupt(_ why: String) {
        for index in streams.indices { streams[index].batcher.interrupted(why) }
    }

    /// The stream gets what it holds and stays.
    mutating func deliverPending(of id: ObjectIdentifier) {
        guard let index = streams.firstIndex(where: { $0.consumer.id == id }) else { return }
        deliverPending(index)
    }

    /// Every stream gets what it holds.
    mutating func deliverAll() {
        for index in streams.indices { deliverPending(index) }
        batchStart = nil
    }

    /// The scans (indices) before which every stream's batch is cut: the first plausible scan
    /// `SampleBatcher.maximumSpan` or more after the chip's batch began, and so on.
    private mutating func cuts(_ sensorTimes: [Int64], plausible: ClosedRange<Int64>) -> [Int] {
        guard !streams.isEmpty else { return [] }
        var cuts: [Int] = []
        let span = self.span
        for (scan, time) in sensorTimes.enumerated() where plausible.contains(time) {
            if let start = batchStart, time.subtractingSaturating(start) < span { continue }
            if batchStart != nil { cuts.append(scan) }
            batchStart = time
        }
        return cuts
    }

    /// Hands over what every stream holds once the oldest sample of any was read `hold` or more
    /// before `now` (one hand-over for the chip). Returns the nanoseconds until that falls due; nil
    /// when nothing is held.
    mutating func deliverDue(at now: Int64, hold: Int64) -> Int64? {
        let oldest = streams.lazy.compactMap(\.batcher.oldestPendingReceiveTime).min()
        guard let oldest else {
            batchStart = nil
            return nil
        }
        // A long batch waits as much longer as it may span (a quiet chip's last one too).
        let longer = span - SampleBatcher.maximumSpan
        let due = oldest.addingSaturating(hold > 0 ? hold.addingSaturating(longer) : 0)
        guard due > now else {
            deliverAll()
            return nil
        }
        return due - now
    }

    /// `values` holds `sensorTimes.count` scans of `layout.valueCount` values each; each stream's
    /// batches that these complete are handed over, the rest is held. A scan whose sensor time lies
    /// more than `plausibleSkew` from `receive` is dropped: each stream's next step becomes a gap
    /// (a deletion record) naming the bad timestamp. Returns how many scans were dropped, for the
    /// capture's log.
    @discardableResult
    mutating func distribute(values: [Int64], sensorTimes: [Int64], receivedAt receive: Int64) -> Int {
        let count = sensorTimes.count
        guard count > 0 else { return 0 }
        precondition(outbox.isEmpty, "the last read's deliveries were not sent (deliverCollected)")
        let width = layout.valueCount
        precondition(values.count >= count * width, "fewer values than scans")
        let earliest = receive.subtractingSaturating(Self.plausibleSkew)
        let latest = receive.addingSaturating(Self.plausibleSkew)
        let dropped = sensorTimes.lazy.filter { $0 < earliest || $0 > latest }.count
        let gaps = scanGaps(sensorTimes, plausible: earliest...latest)
        if keepsRecent {
            remember(values: values, sensorTimes: sensorTimes, receivedAt: receive, plausible: earliest...latest, gaps: gaps)
        } else {
            recent.skipped(readAt: receive)
        }
        var why = ""
        if dropped > 0, let first = sensorTimes.first(where: { $0 < earliest || $0 > latest }) {
            implausibleScans += dropped
            why = "\(dropped) of \(count) scans dropped: sensor time \(first) ns is more than 1 h from the read at \(receive) ns"
        }
        feed(values: values, sensorTimes: sensorTimes, receivedAt: receive, plausible: earliest...latest, why: why, gaps: gaps)
        return dropped
    }

    /// `distribute`, then every stream gets what it holds: for a reader whose reads are already
    /// rare and large (a remote rig's refills, whose wake-ups cost no battery of ours).
    @discardableResult
    mutating func distributeAndDeliver(values: [Int64], sensorTimes: [Int64], receivedAt receive: Int64) -> Int {
        defer { deliverAll() }
        return distribute(values: values, sensorTimes: sensorTimes, receivedAt: receive)
    }

    /// Hands every stream its values of the read's scans. Scans outside `plausible` are skipped,
    /// each one interrupting every stream with `why`, so the step over it is recorded as a gap
    /// (`distribute` calls this with none outside).
    private mutating func feed(
        values: [Int64], sensorTimes: [Int64], receivedAt receive: Int64,
        plausible: ClosedRange<Int64>, why: String, gaps: [(scan: Int, why: String)]
    ) {
        let width = layout.valueCount
        let span = self.span
        let cuts = cuts(sensorTimes, plausible: plausible)
        for index in streams.indices {
            let positions = streams[index].positions
            streams[index].batcher.spanLimit = span
            var events: [SourceEvent] = []
            var nextGap = gaps.startIndex
            var nextCut = cuts.startIndex
            values.withUnsafeBufferPointer { values in
                Self.inPlace(&streams[index].batcher) { batcher in
                    for scan in sensorTimes.indices {
                        if nextCut < cuts.endIndex, cuts[nextCut] == scan {
                            batcher.flush(into: &events)
                            nextCut += 1
                        }
                        if nextGap < gaps.endIndex, gaps[nextGap].scan == scan {
                            batcher.interrupted(gaps[nextGap].why)
                            nextGap += 1
                        }
                        guard plausible.contains(sensorTimes[scan]) else {
                            batcher.interrupted(why)
                            continue
                        }
                        let base = scan * width
                        batcher.append(sensorTime: sensorTimes[scan], receiveTime: receive, into: &events) {
                            values[base + positions[$0]]
                        }
                    }
                }
            }
            hand(events, to: index)
        }
    }

    /// Runs `body` on `batcher` where it is. A batcher copied out of `streams` and written back
    /// shared its arrays with the copy still there, so its first append of every read copied the
    /// whole pending batch (a fifth of the reading thread's instructions per scan).
    @inline(__always)
    private static func inPlace(_ batcher: inout SampleBatcher, _ body: (inout SampleBatcher) -> Void) {
        body(&batcher)
    }

    /// Keeps the plausible scans of a read for streams that join late (`adopt`).
    private mutating func remember(
        values: [Int64], sensorTimes: [Int64], receivedAt receive: Int64,
        plausible: ClosedRange<Int64>, gaps: [(scan: Int, why: String)]
    ) {
        let width = layout.valueCount
        if gaps.isEmpty, sensorTimes.allSatisfy({ plausible.contains($0) }) {
            values.withUnsafeBufferPointer { values in
                recent.append(
                    reads: UnsafeBufferPointer(rebasing: values[0..<(sensorTimes.count * width)]), sensorTimes: sensorTimes,
                    receiveTime: receive)
            }
            return
        }
        var nextGap = gaps.startIndex
        values.withUnsafeBufferPointer { values in
            for scan in sensorTimes.indices {
                var why: String?
                if nextGap < gaps.endIndex, gaps[nextGap].scan == scan {
                    why = gaps[nextGap].why
                    nextGap += 1
                }
                guard plausible.contains(sensorTimes[scan]) else { continue }
                recent.append(
                    UnsafeBufferPointer(rebasing: values[(scan * width)..<((scan + 1) * width)]),
                    sensorTime: sensorTimes[scan], receiveTime: receive, gapBefore: why)
            }
        }
    }

    private mutating func deliverPending(_ index: Int) {
        var events: [SourceEvent] = []
        streams[index].batcher.flush(into: &events)
        hand(events, to: index)
    }

    /// Delivers a stream's events in order, then publishes what its staging holds: the batch
    /// held now, and whether it continues the one just handed over. With `collectsDeliveries`,
    /// into the outbox; a publication alone goes out at once unless something waits before it.
    private mutating func hand(_ events: [SourceEvent], to index: Int) {
        for event in events {
            switch event {
            case .samples(let batch): streams[index].continuing = batch.sensorTimes.last
            case .gap: streams[index].continuing = nil
            }
        }
        // Field by field: a copy of the stream would share its batcher's rows (see `inPlace`).
        let parcel = Parcel(
            deliver: streams[index].consumer.deliver, events: events, staging: streams[index].staging,
            pendingCount: streams[index].batcher.pendingCount, continuing: streams[index].continuing)
        guard !events.isEmpty || !outbox.isEmpty else {
            parcel.send()
            return
        }
        outbox.append(parcel)
        if !collectsDeliveries { deliverCollected() }
    }
}
