import Dispatch
import SensorKitModel
import Synchronization

/// One stream of one wearable (heart rate, wrist state, ECG, PPG or accelerometer) as a
/// `SensorSource`. It stays registered across link losses: a loss while recording opens a gap,
/// and the first sample after recording resumes closes it as one `systemInitiated` deletion
/// record (docs/ble.md, "Gaps").
/// Recording state is confined to the BLE driver's queue; `status` is readable from any thread.
final class WearableStream: SensorSource, @unchecked Sendable {
    // @unchecked: the mutable fields are confined to `queue`; `live` is a Mutex.
    let descriptor: SourceDescriptor
    private let queue: DispatchQueue
    private let changed: (WearableStream, Bool) -> Void
    private let clock: any SystemClock
    private let live = Mutex<[String: String]>([:])

    private(set) var recording = false
    private var deliver: (@Sendable (SourceEvent) -> Void)?
    /// The last sample's time (boot ns), or when recording started if nothing came yet.
    private(set) var lastTime: Int64?
    private var gaps = GapCoalescer<SourceBatch>()
    /// A stream registered while its sensor is recorded (a PPG frame type first seen mid-stream)
    /// holds what it is given until the pipeline starts it, which happens on other queues a moment
    /// later; nil once started (or for a stream registered before recording).
    private var held: HeldUntilStart?

    /// What a stream registered mid-recording holds, in the order it came: at most `limit`
    /// entries (a batch, a gap, or the end of a gap); what comes beyond is dropped and becomes a
    /// gap from the last held sample. Gaps in a row are one entry, as they are one record.
    struct HeldUntilStart {
        static let limit = 64

        enum Entry {
            case samples(SourceBatch)
            /// `openGap(after:now:why:)` while held.
            case gap(after: Int64?, now: Int64, why: String)
            /// `closeGap(at:boot:)` while held: the gap before it ends there.
            case closed(at: Int64, boot: BootID)
        }

        var entries: [Entry] = []
        /// When the first thing that did not fit came, if anything did not.
        var droppedFrom: Int64?

        /// Whether the last thing held is a gap not yet ended.
        var endsInGap: Bool {
            if case .gap? = entries.last { droppedFrom == nil } else { false }
        }

        /// Keeps `entry`, or notes at `time` that it did not fit.
        mutating func hold(_ entry: Entry, at time: Int64) {
            guard droppedFrom == nil else { return }
            guard entries.count < Self.limit else {
                droppedFrom = time
                return
            }
            entries.append(entry)
        }
    }

    /// `changed` runs on `queue` when recording turns on or off. `holdsUntilStart`: the stream is
    /// registered while its sensor is being recorded, so samples come before the pipeline starts it.
    init(
        descriptor: SourceDescriptor, queue: DispatchQueue, clock: any SystemClock, holdsUntilStart: Bool = false,
        changed: @escaping (WearableStream, Bool) -> Void
    ) {
        self.descriptor = descriptor
        self.queue = queue
        self.clock = clock
        self.changed = changed
        held = holdsUntilStart ? HeldUntilStart() : nil
    }

    var sensor: SRSensor { descriptor.sensor }

    var status: [String: String] { live.withLock { $0 } }

    func setStatus(_ status: [String: String]) { live.withLock { $0 = status } }

    /// Stopping waits for the driver's queue: what the stream still holds is delivered before
    /// this returns, while the pipeline still takes it.
    func setRecording(_ on: Bool, deliver: @escaping @Sendable (SourceEvent) -> Void) {
        if on {
            queue.async {
                guard !self.recording else { return }
                self.recording = true
                self.deliver = deliver
                self.gaps = GapCoalescer()
                self.lastTime = nil
                self.releaseHeld()
                self.changed(self, true)
            }
        } else {
            queue.sync {
                held = nil
                stop()
            }
        }
    }

    func close() {
        queue.sync {
            held = nil
            stop()
        }
    }

    /// A stream beside this one for the same sensor (a PPG frame type first seen mid-stream), made
    /// in the state this one is in. While this one records or is still held until its start, the
    /// sensor is being recorded and the pipeline starts every stream of it: the new one holds what
    /// it is given until then, as this one does, and both deliver once started. While this one is
    /// stopped, so is the new one and it holds nothing.
    func sibling(
        descriptor: SourceDescriptor, changed: @escaping (WearableStream, Bool) -> Void
    ) -> WearableStream {
        dispatchPrecondition(condition: .onQueue(queue))
        return WearableStream(
            descriptor: descriptor, queue: queue, clock: clock, holdsUntilStart: recording || held != nil, changed: changed)
    }

    /// Whether the stream holds what it is given until the pipeline starts it.
    var isHeldUntilStart: Bool {
        dispatchPrecondition(condition: .onQueue(queue))
        return held != nil
    }

    /// Delivers what was held until the start, in order, then the gap of what did not fit.
    private func releaseHeld() {
        guard let held else { return }
        self.held = nil
        for entry in held.entries {
            switch entry {
            case .samples(let batch):
                guard let first = batch.sensorTimes.first, let last = batch.sensorTimes.last else { continue }
                perform(gaps.samples(batch, count: batch.sensorTimes.count, first: first, last: last), boot: batch.boot)
            case .gap(let after, let now, let why):
                gaps.gap(from: after ?? lastTime ?? now, why: why)
            case .closed(let time, let boot):
                perform(gaps.close(at: time), boot: boot)
            }
        }
        if let dropped = held.droppedFrom {
            gaps.gap(
                from: lastTime ?? dropped,
                why:
                    "more than \(HeldUntilStart.limit) batches or gaps came before the new stream was started; the rest were dropped"
            )
        }
    }

    private func stop() {
        guard recording else { return }
        recording = false
        changed(self, false)  // may emit the samples still held
        // Stopped while the link is down: the gap ends with the stake.
        let now = clock.now()
        closeGap(at: now.nanoseconds, boot: now.boot)
        deliver = nil
        gaps = GapCoalescer()
        lastTime = nil
    }

    /// Recording started at `now` (boot ns): the base of a gap if the link drops before a sample.
    func started(at now: Int64) {
        dispatchPrecondition(condition: .onQueue(queue))
        if lastTime == nil { lastTime = now }
    }

    /// Data stopped coming for a reason the source knows (link lost, device clock reset, an
    /// undecodable frame): the gap runs from the last sample (or `after`) to the next sample.
    /// Gaps that follow each other before a sample arrives are one gap, and so are gaps that keep
    /// coming once a few were recorded (`GapCoalescer`).
    /// Before its start a stream held until then keeps the gap in order with its batches.
    func openGap(after: Int64?, now: Int64, why: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard recording else {
            guard var waiting = held, !waiting.endsInGap else { return }
            waiting.hold(.gap(after: after, now: now, why: why), at: after ?? now)
            held = waiting
            return
        }
        gaps.gap(from: after ?? lastTime ?? now, why: why)
    }

    var hasOpenGap: Bool { gaps.isOpen || held?.endsInGap == true }

    /// The stream stopped at `time` with a gap open: it ends there.
    func closeGap(at time: Int64, boot: BootID) {
        dispatchPrecondition(condition: .onQueue(queue))
        if var waiting = held, waiting.endsInGap {
            waiting.hold(.closed(at: time, boot: boot), at: time)
            held = waiting
            return
        }
        perform(gaps.close(at: time), boot: boot)
    }

    /// Time passes (the driver's tick): a coalesced gap whose samples stopped coming goes out.
    func tick(now: Int64, boot: BootID) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard deliver != nil else { return }
        perform(gaps.tick(now: now), boot: boot)
    }

    /// Delivers samples (times strictly increasing), filled by the stream's family keys; an open
    /// gap ends at the first of them.
    func emit<Key: FamilyColumn>(boot: BootID, times: [Int64], receiveTimes: [Int64], values: BatchValues<Key>) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let first = times.first, let last = times.last else { return }
        guard deliver != nil else {
            guard var waiting = held else { return }
            waiting.hold(
                .samples(
                    SourceBatch(boot: boot, sensorTimes: times, receiveTimes: receiveTimes, values: values, for: descriptor)),
                at: first)
            held = waiting
            return
        }
        let batch = SourceBatch(boot: boot, sensorTimes: times, receiveTimes: receiveTimes, values: values, for: descriptor)
        perform(gaps.samples(batch, count: times.count, first: first, last: last), boot: boot)
    }

    private func perform(_ actions: [GapCoalescer<SourceBatch>.Action], boot: BootID) {
        guard let deliver else { return }
        for action in actions {
            switch action {
            case .gap(let gap):
                var why = gap.why
                if gap.gaps > 1 {
                    why +=
                        "; \(gap.gaps - 1) more gaps in a row joined into this record, \(gap.droppedSamples) samples between them dropped"
                }
                deliver(
                    .gap(
                        from: BootInstant(boot: boot, nanoseconds: gap.from), to: BootInstant(boot: boot, nanoseconds: gap.to),
                        reason: .systemInitiated, why: why))
                lastTime = max(lastTime ?? gap.to, gap.to)
            case .samples(let batch):
                deliver(.samples(batch))
                lastTime = batch.sensorTimes.last ?? lastTime
            }
        }
    }
}
