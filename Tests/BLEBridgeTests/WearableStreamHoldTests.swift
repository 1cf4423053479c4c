import Dispatch
import SensorKitModel
import Synchronization
import Testing

@testable import BLEBridge

/// docs/ble.md §8 "One PPG stream per frame type": a stream registered while its sensor is being
/// recorded holds what it is given until the pipeline starts it — batches and gaps in the order
/// they came, at most `HeldUntilStart.limit` of them, what comes beyond becoming one gap — and a
/// stream registered before recording holds nothing. A stream registered beside another takes
/// that one's state, even while that one itself still waits for its start.
@Suite struct WearableStreamHoldTests {
    static let device = SRDevice(
        identifier: "ble:C0:FF:EE:00:00:20", name: "Polar Sense 1A2B3C4D", model: "Polar Sense", systemName: "",
        systemVersion: "", productType: "")

    /// One sample of `kind` at `time`: channel c holds c + time, the last value 1 (type 7's and
    /// 10's status word).
    static func values(_ time: Int64, _ kind: PPGFrameKind = .type7) throws
        -> BatchValues<PhotoplethysmogramFamily.Stored>
    {
        let frame = PMDFrame(
            measurementType: 1, deviceTimestamp: 0, frameType: kind.rawValue, isCompressed: true,
            samples: [(0..<(kind.columns.count - 1)).map { Int32($0) + Int32(time) } + [1]])
        let timed = PMDStreamTimeline.TimedFrame(frame: frame, sampleTimes: [time], receiveTime: time, uncertainty: 0)
        return try #require(WearableSamples.photoplethysmogram(timed, kind: kind))
    }

    func run(holds: Bool, before: Int) throws -> [SourceEvent] {
        let queue = DispatchQueue(label: "test.wearable-stream")
        let clock = FakeClock()
        let descriptor = WearableSamples.descriptor(
            .photoplethysmogram, device: Self.device, wearable: "arm", location: nil, ppgFrame: .type7)
        let stream = WearableStream(descriptor: descriptor, queue: queue, clock: clock, holdsUntilStart: holds) { _, _ in }
        let boot = clock.bootID
        let early = try (1...before).map { (Int64($0) * 1000, try Self.values(Int64($0) * 1000)) }
        queue.sync {
            for (time, values) in early { stream.emit(boot: boot, times: [time], receiveTimes: [time], values: values) }
        }
        let events = Mutex<[SourceEvent]>([])
        stream.setRecording(true) { event in events.withLock { $0.append(event) } }
        let late = try Self.values(1_000_000)
        queue.sync {
            stream.emit(boot: boot, times: [1_000_000], receiveTimes: [1_000_000], values: late)
            // Past the coalescer's settling time: a gap and the samples after it go out.
            stream.tick(now: 1_000_000 + 10 * GapCoalescer<SourceBatch>.settleNanoseconds, boot: boot)
        }
        stream.close()
        return events.withLock { $0 }
    }

    static func times(_ events: [SourceEvent]) -> [Int64] {
        events.flatMap { event -> [Int64] in if case .samples(let batch) = event { batch.sensorTimes } else { [] } }
    }

    @Test func whatComesBeforeTheStartIsDeliveredInOrder() throws {
        let events = try run(holds: true, before: 10)
        #expect(Self.times(events) == (1...10).map { Int64($0) * 1000 } + [1_000_000])
        #expect(!events.contains { if case .gap = $0 { true } else { false } })
        let first = try #require(events.first { if case .samples = $0 { true } else { false } })
        if case .samples(let batch) = first { #expect(batch.columns.first == [1000] && batch.columns.last == [1]) }
    }

    @Test func beyondTheLimitTheRestIsOneGap() throws {
        let limit = WearableStream.HeldUntilStart.limit
        let events = try run(holds: true, before: limit + 6)
        #expect(Self.times(events) == (1...limit).map { Int64($0) * 1000 } + [1_000_000])
        let gaps = events.compactMap { event -> (Int64, Int64, String)? in
            if case .gap(let from, let to, _, let why) = event { (from.nanoseconds, to.nanoseconds, why) } else { nil }
        }
        #expect(gaps.count == 1)
        #expect(gaps.first?.0 == Int64(limit) * 1000 && gaps.first?.1 == 1_000_000)
        #expect(gaps.first?.2.hasPrefix("more than \(limit) batches or gaps came before the new stream was started") == true)
    }

    @Test func aStreamRegisteredBeforeRecordingHoldsNothing() throws {
        #expect(Self.times(try run(holds: false, before: 5)) == [1_000_000])
    }

    static func descriptor(_ kind: PPGFrameKind) -> SourceDescriptor {
        WearableSamples.descriptor(.photoplethysmogram, device: device, wearable: "arm", location: nil, ppgFrame: kind)
    }

    /// A stream of `kind`'s columns on `queue`.
    static func stream(
        _ kind: PPGFrameKind, queue: DispatchQueue, clock: FakeClock, holds: Bool
    ) -> WearableStream {
        WearableStream(descriptor: descriptor(kind), queue: queue, clock: clock, holdsUntilStart: holds) { _, _ in }
    }

    /// What a started stream delivered.
    final class Delivered: Sendable {
        private let events = Mutex<[SourceEvent]>([])
        func append(_ event: SourceEvent) { events.withLock { $0.append(event) } }
        var all: [SourceEvent] { events.withLock { $0 } }
    }

    /// Starts `stream` as the pipeline does and collects what it delivers.
    static func start(_ stream: WearableStream) -> Delivered {
        let delivered = Delivered()
        stream.setRecording(true) { event in delivered.append(event) }
        return delivered
    }

    static func gaps(_ events: [SourceEvent]) -> [(from: Int64, to: Int64, why: String)] {
        events.compactMap { event in
            if case .gap(let from, let to, _, let why) = event { (from.nanoseconds, to.nanoseconds, why) } else { nil }
        }
    }

    /// The lost first frame of a third PPG type: the stream of the second type was itself still
    /// waiting for its start when the third type's first frame came.
    @Test func aSiblingOfAHeldStreamIsHeldAndDeliversOnceStarted() throws {
        let queue = DispatchQueue(label: "test.wearable-stream")
        let clock = FakeClock()
        let boot = clock.bootID
        let type0 = Self.stream(.type0, queue: queue, clock: clock, holds: false)
        let type0Events = Self.start(type0)
        let type7 = queue.sync { type0.sibling(descriptor: Self.descriptor(.type7)) { _, _ in } }
        let type10 = queue.sync { type7.sibling(descriptor: Self.descriptor(.type10)) { _, _ in } }
        #expect(queue.sync { type7.isHeldUntilStart && type10.isHeldUntilStart })
        let (values7, values10) = (try Self.values(1000), try Self.values(2000, .type10))
        queue.sync {
            type7.emit(boot: boot, times: [1000], receiveTimes: [1000], values: values7)
            type10.emit(boot: boot, times: [2000], receiveTimes: [2000], values: values10)
        }
        // Started in either order, each delivers what it held.
        let type10Events = Self.start(type10)
        let type7Events = Self.start(type7)
        queue.sync {}
        #expect(Self.times(type7Events.all) == [1000])
        #expect(Self.times(type10Events.all) == [2000])
        #expect(type0Events.all.isEmpty)
        #expect(queue.sync { !type7.isHeldUntilStart && !type10.isHeldUntilStart })
        // A sibling of a recording stream is held until its own start; of a stopped one, not.
        #expect(queue.sync { type10.sibling(descriptor: Self.descriptor(.type10)) { _, _ in }.isHeldUntilStart })
        for stream in [type0, type7, type10] { stream.setRecording(false) { _ in } }
        #expect(queue.sync { !type0.sibling(descriptor: Self.descriptor(.type10)) { _, _ in }.isHeldUntilStart })
        for stream in [type0, type7, type10] { stream.close() }
    }

    @Test func gapsHeldBeforeTheStartStayInOrderWithTheBatches() throws {
        let queue = DispatchQueue(label: "test.wearable-stream")
        let clock = FakeClock()
        let boot = clock.bootID
        let stream = Self.stream(.type7, queue: queue, clock: clock, holds: true)
        try queue.sync {
            stream.emit(boot: boot, times: [1000], receiveTimes: [1000], values: try Self.values(1000))
            // Two gaps in a row are one record, as they are once started.
            stream.openGap(after: nil, now: 1500, why: "frames missing")
            stream.openGap(after: nil, now: 1600, why: "a device clock reset")
            stream.emit(boot: boot, times: [2000], receiveTimes: [2000], values: try Self.values(2000))
            stream.openGap(after: 2000, now: 2500, why: "undecodable")
            #expect(stream.hasOpenGap)
            // The device switched frame types: the gap ends where the other type's samples begin.
            stream.closeGap(at: 2600, boot: boot)
            #expect(!stream.hasOpenGap)
            stream.emit(boot: boot, times: [3000], receiveTimes: [3000], values: try Self.values(3000))
        }
        let events = Self.start(stream)
        queue.sync {}
        stream.close()
        let delivered = events.all
        #expect(Self.times(delivered) == [1000, 2000, 3000])
        let gaps = Self.gaps(delivered)
        #expect(gaps.map(\.from) == [1000, 2000] && gaps.map(\.to) == [2000, 2600], "\(gaps)")
        #expect(gaps.map(\.why) == ["frames missing", "undecodable"])
        // In order: samples, gap, samples, gap, samples.
        let kinds = delivered.map { event -> String in if case .gap = event { "gap" } else { "samples" } }
        #expect(kinds == ["samples", "gap", "samples", "gap", "samples"])
    }
}
