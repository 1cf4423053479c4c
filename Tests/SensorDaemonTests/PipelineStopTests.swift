import Dispatch
import Foundation
import IIOBridge
import SensorDaemon
import SensorKitModel
import SensorTestKit
import Synchronization
import Testing

/// The recording pipeline with a real polled IIO source (a TSL2591's sysfs files in a temporary
/// directory, read every 100 ms): whatever the source read before its stream stopped or its
/// device went away reaches the sink. The source's clock moves 1 ms per read, so its stamps are
/// exactly the samples it read, however often its timer fired.
@Suite(.serialized) struct PipelineStopTests {
    /// What the pipeline hands to the store.
    final class Received: RecordingSink, Sendable {
        private let times = Mutex<[Int64]>([])
        private let queues = Mutex<[Bool]>([])
        /// For each append, whether it ran on the source's own queue (`sourceQueue` set there).
        var appendedOnSourceQueue: [Bool] { queues.withLock { $0 } }
        /// Microseconds each append takes (a store that is slow to take a batch).
        let appendMicroseconds: UInt32
        init(appendMicroseconds: UInt32 = 0) { self.appendMicroseconds = appendMicroseconds }
        var sensorTimes: [Int64] { times.withLock { $0 } }
        func openStream(_ descriptor: SourceDescriptor) throws -> Int64 { 1 }
        func append(stream: Int64, _ batch: SourceBatch) {
            queues.withLock { $0.append(DispatchQueue.getSpecific(key: PipelineStopTests.sourceQueue) == true) }
            usleep(appendMicroseconds)
            times.withLock { $0 += batch.sensorTimes }
        }
        func recordGap(stream: Int64, from: BootInstant, to: BootInstant, reason: SRDeletionReason) {}
        func recordingStopped(stream: Int64) {}

        /// Waits up to two seconds for `expected`.
        func waitFor(_ expected: [Int64]) -> [Int64] {
            let deadline = Date().addingTimeInterval(2)
            while sensorTimes != expected, Date() < deadline { usleep(5_000) }
            return sensorTimes
        }
    }

    final class ReadStamps: SystemClock, Sendable {
        private let reads = Mutex<Int64>(0)
        static let start: Int64 = 9_000_000_000
        var bootID: BootID { BootID("boot-0") }
        func boottimeNanoseconds() -> Int64 {
            reads.withLock {
                $0 += 1
                return Self.start + $0 * 1_000_000
            }
        }
        func realtimeNanoseconds() -> Int64 { 0 }
        func wallClockSynchronized() -> Bool { true }
        var issued: [Int64] { (0..<reads.withLock { $0 }).map { Self.start + ($0 + 1) * 1_000_000 } }
    }

    /// Set on the polled source's queue.
    static let sourceQueue = DispatchSpecificKey<Bool>()

    let root: String
    let clock = ReadStamps()
    let sink = Received(appendMicroseconds: 50_000)
    let pipeline: RecordingPipeline
    let light: IIOPolledSource

    init() throws {
        root = NSTemporaryDirectory() + "pipeline-stop-\(UUID().uuidString)/iio:device0"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        for (name, value) in ["name": "tsl2591", "in_illuminance_input": "123.456", "in_illuminance_integration_time": "0.100"] {
            try (value + "\n").write(toFile: root + "/" + name, atomically: false, encoding: .utf8)
        }
        let sysfs = IIOSysfsDevice(path: root)
        let udev = UdevIIODevice(syspath: root, sysname: "iio:device0", devnode: nil, properties: [:])
        let chip = try IIOChip(udev: udev, description: try sysfs.describe())
        let function = try #require(chip.functions.first { $0.kind == .ambientLight })
        light = IIOPolledSource(
            descriptor: chip.descriptor(for: function), sysfs: sysfs, reads: chip.columns(for: function).map(\.1),
            interval: 100_000_000, clock: clock, log: .discard)
        light.queue.setSpecific(key: Self.sourceQueue, value: true)
        pipeline = RecordingPipeline(sink: sink, clock: FakeClock(), journal: .discard)
        pipeline.add(light)
        pipeline.record([.ambientLightSensor])
    }

    /// Waits for the first read, which recording starts, then holds the source's queue for 100 ms
    /// as a slow sysfs read would while the pipeline stops the stream.
    func stopDuringASlowRead(_ stop: () -> Void) {
        let deadline = Date().addingTimeInterval(2)
        while clock.issued.isEmpty, Date() < deadline { usleep(1_000) }
        let slowRead = DispatchSemaphore(value: 0)
        light.queue.async { slowRead.wait() }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100)) { slowRead.signal() }
        stop()
    }

    @Test func theLastStakeEndingKeepsEverySampleRead() throws {
        stopDuringASlowRead { pipeline.record([]) }
        light.settle()
        #expect(!clock.issued.isEmpty)
        #expect(sink.waitFor(clock.issued) == clock.issued, "every sample read reached the sink")
        light.close()
        try? FileManager.default.removeItem(atPath: (root as NSString).deletingLastPathComponent)
    }

    /// A batch is taken on the thread that delivers it, straight into the sink: a hop to the
    /// stream's own queue per batch woke one more thread per stream and hand-over (docs/iio.md §4,
    /// "Delivery"), and the stop still keeps every sample read.
    @Test func batchesGoIntoTheSinkOnTheSourcesOwnThread() throws {
        stopDuringASlowRead { pipeline.record([]) }
        light.settle()
        #expect(sink.waitFor(clock.issued) == clock.issued, "every sample read reached the sink")
        #expect(!sink.appendedOnSourceQueue.isEmpty)
        #expect(sink.appendedOnSourceQueue.allSatisfy { $0 }, "\(sink.appendedOnSourceQueue)")
        light.close()
        try? FileManager.default.removeItem(atPath: (root as NSString).deletingLastPathComponent)
    }

    /// At shutdown the store is closed right after `stopAll` returns: what the sources handed over
    /// as they stopped must be in the sink by then.
    @Test func stopAllReturnsWithEverySampleReadInTheSink() throws {
        stopDuringASlowRead { pipeline.stopAll() }
        #expect(!clock.issued.isEmpty)
        #expect(sink.sensorTimes == clock.issued, "every sample read was handed to the sink before stopAll returned")
        try? FileManager.default.removeItem(atPath: (root as NSString).deletingLastPathComponent)
    }

    @Test func aRemovedDeviceKeepsEverySampleRead() throws {
        stopDuringASlowRead { pipeline.remove(source: light.descriptor.source) }
        light.settle()
        #expect(!clock.issued.isEmpty)
        #expect(sink.waitFor(clock.issued) == clock.issued, "every sample read before the removal reached the sink")
        try? FileManager.default.removeItem(atPath: (root as NSString).deletingLastPathComponent)
    }
}
