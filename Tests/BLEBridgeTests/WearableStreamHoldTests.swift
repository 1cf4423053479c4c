import Dispatch
import SensorKitModel
import Synchronization
import Testing

@testable import BLEBridge

/// docs/ble.md §8 "One PPG stream per frame type": a stream registered while its sensor is being
/// recorded holds what it is given until the pipeline starts it — at most
/// `HeldUntilStart.limit` batches, the samples beyond becoming one gap — and a stream registered
/// before recording holds nothing.
@Suite struct WearableStreamHoldTests {
    static let device = SRDevice(
        identifier: "ble:C0:FF:EE:00:00:20", name: "Polar Sense 1A2B3C4D", model: "Polar Sense", systemName: "",
        systemVersion: "", productType: "")

    /// One type-7 sample at `time`: channel c holds c + time, the status word 1.
    static func values(_ time: Int64) throws -> BatchValues<PhotoplethysmogramFamily.Stored> {
        let frame = PMDFrame(
            measurementType: 1, deviceTimestamp: 0, frameType: 7, isCompressed: true,
            samples: [(0..<16).map { Int32($0) + Int32(time) } + [1]])
        let timed = PMDStreamTimeline.TimedFrame(frame: frame, sampleTimes: [time], receiveTime: time, uncertainty: 0)
        return try #require(WearableSamples.photoplethysmogram(timed, kind: .type7))
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
        #expect(gaps.first?.2.hasPrefix("more than \(limit) batches came before the new stream was started") == true)
    }

    @Test func aStreamRegisteredBeforeRecordingHoldsNothing() throws {
        #expect(Self.times(try run(holds: false, before: 5)) == [1_000_000])
    }
}
